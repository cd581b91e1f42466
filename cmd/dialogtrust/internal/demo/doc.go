// Package demo runs the whole idea of dialogtrust in one call: the topology of
// dialog-binding Figure 5 (two trust domains, each with its WIT issuer and its TTS with
// the identity-chaining authorization server; agents A1, A2 and a tool in domain A;
// agent B1 in domain B), with real HTTP servers, real keys and real signatures, and the
// flow: D1 established, a tool call in D1, a signed handoff from A2 to B1 whose grant is
// the digest of the domain-B access token, the linked dialog D2, B1's domain-B
// Txn-Token recording D2, and the handoff statuses back. A run fails if any check
// fails.
//
// A run is recorded as a Report (report.go, read it first): its steps and checks, and
// its hops, which the wire observer (wire.go) reads off every call of the workloads as
// it leaves, so that the picture of who called whom and the summary of what was
// proved come from the run itself. WriteText (text.go), WriteJSON and WriteHTML
// (html.go, report.html.tmpl) render the same Report as `dialogtrust demo` prints it,
// as `--json`, and as the self-contained page of `--report`.
//
// The Topology says where the WIT issuers and TTSs run: Run starts them in this process
// (InProcess); RunTopology with LocalTopology uses those that deploy/local/up.sh started
// (the workloads still run in this process). Only the domain-separation step differs:
// in process it records what reached domain B's servers; against deployed services it
// records what the workloads sent there and reads TTS B's log, and prints what it
// cannot see as skipped.
//
// It implements no protocol of its own: through the library packages it exercises
// dialog-binding §11 (Figure 5, identity chaining) with the receiver checks of §12,
// and handoff-context §5.7 (the grant bound to the access token). It is the
// application behind `dialogtrust demo` and lives under cmd/dialogtrust for that
// reason: nothing else may import it.
package demo
