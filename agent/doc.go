// Package agent is the client side of dialog-binding-wimse-oauth: what an agent links
// against to call other agents and tools.
//
// Read agent.go first (Agent: Start and Continue a dialog), then transport.go
// (Transport, the RoundTripper that attaches the WIT, the Txn-Token and the proof) and
// tokens.go (where Txn-Tokens come from, TTSSource). link.go is the trust boundary
// (Linker, LinkAcceptor), handoff.go the handoff offers in a dialog, signers.go says
// whose signed responses a Transport believes, refusal.go marks an unsigned refusal,
// hostclient.go is what the host-protocol SDK adapters' clients share
// (HostClientConfig, OfferedHops: the hops of offered calls, for their cancel).
//
// Transport is an http.RoundTripper that, for every request, attaches the agent's WIT
// (from a wit.Source), the Dialog-Context of the dialog the request belongs to, the
// Txn-Token for that dialog (from a TxnTokenSource), the provenance of earlier hops when
// the agent forwards in a dialog it received (section 9), and a Content-Digest, then
// signs: with the WIMSE HTTP signature (default; it also covers the response) or with a
// WPT carrying tth and dth (sections 7, 8). It verifies signed responses and checks
// that they echo the request's Dialog-Context (section 7).
//
// Agent adds the two calls an agent makes: Start proposes a new dialog with itself as
// initiator and checks that the server accepted exactly that context (section 5);
// Continue sends a request in a dialog the agent already belongs to.
package agent
