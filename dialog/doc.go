// Package dialog binds agent dialogs to WIMSE and OAuth credentials
// (dialog-binding-wimse-oauth, "Binding Agent Dialogs to WIMSE and OAuth Credentials").
//
// Read receiver.go first (Receiver: the checks of section 12 and the Verified result),
// then context.go (the Dialog-Context field), registry.go (stateful dialogs),
// provenance.go (section 9), response.go (response signing) and audit.go (one audit
// record per request, WithAuditor, issue 26). handoff.go wires the
// handoff receiver into the checks; where the host protocols carry handoffs is package
// hostproto's.
//
// # The Dialog-Context field (sections 4, 5, 7)
//
// The field is an RFC 8941/9651 structured-field Dictionary. This package defines two
// members and keeps every other one untouched:
//
//		Dialog-Context: dlg="7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", initiator="wimse://a.example/agent/a1"
//
//	  - dlg: the dialog identifier, an sf-string of 1 to 128 characters from
//	    [A-Za-z0-9._~:-] (UUIDs, ULIDs, URNs), without parameters;
//	  - initiator: the initiator's workload identifier, an sf-string holding a canonical
//	    spiffe:// or wimse:// identifier (package identifier), without parameters.
//
// Parsing is strict and bounded (4 KiB, 16 members): the value must be exactly the
// canonical serialization of the dictionary, so a repeated member, extra whitespace or
// another spelling of the same content is refused instead of being read differently by
// different hops. A participant that forwards a request in the same dialog sends the
// Value it received, octet for octet, and never a re-serialization (section 7), because
// the proofs of earlier hops cover those octets.
//
// # Signed responses (http-signature-07 section 3.5, section 7)
//
// With WithResponseSigner the Middleware signs its response to every HTTP-signed
// request, covering the Dialog-Context it echoes (section 7), and so holds the response
// until the handler has ended: the signature covers the status, the fields and the
// body's Content-Digest. Its refusal of a request whose signature verified (body and
// nonce too: the revocation check, the authorization, the handoff step) is signed the
// same way and echoes no Dialog-Context, as a refused request takes no dialog; a
// refusal before that goes unsigned, with no verified request to bind it to. That is the draft's "server policy requires" signing: a
// response that cannot be signed (over MaxSignedResponseBody) is never sent unsigned
// but answered with response_not_signable (501), as is a request that asked for a
// signed response (wimse-sign-response) of a receiver without a signer.
//
// WithStreamingUnsigned makes one exception, which the draft allows (signing is
// RECOMMENDED; a client that did not ask MUST accept an unsigned response): an event
// stream (Content-Type text/event-stream) to a request that did not ask goes out
// unsigned as the handler writes it, each flush reaching the client, so that MCP
// Streamable HTTP's and A2A's streams arrive as they are sent. A flush alone does not
// make a response a stream, and a request that asked is always answered signed or
// refused. HoldsResponse tells a proxy in front of the handler which responses the
// writer holds (proxy.Ingress streams the others).
//
// # The order of the checks (section 12)
//
// The Receiver checks everything in the fields before it reads the body: the proof
// (httpsig.Verifier.VerifyRequestFields, wpt.Verifier.VerifyRequestFields: the WIT and
// the signature or WPT over the fields), the Dialog-Context, the provenance, the
// dialog's state (Registry.Check), the Txn-Token. Only then is the body read, within
// the proof's bound, and compared with the Content-Digest the HTTP signature covers
// or the WPT binds (wpt.RequestOptions.BindRequest), and the proof's nonce or jti
// claimed, last of the proof, so that only an authenticated request spends one. Then
// the operator's revocations (WithRevocations, issue 26: a revoked dialog, workload or
// txn), before any body is read for the steps below. Then the MCP fields that repeat the body for intermediaries (MCP 2026-07-28: Mcp-Method,
// Mcp-Name, the protocol version) are held to it (hostproto.CheckMCPHeaders,
// errcode.MCPHeaderMismatch), whenever the request carries them or the body is read
// anyway, then the authorization (WithAuthorizer). A handoff, which is read from the
// body, comes next, and the one side effect, the
// dialog established (Registry.Accept), last. So a request refused by any field check
// has no octet of its body read, and a client that sent Expect: 100-continue gets
// no 100 Continue (net/http sends it at the first read of the body).
// RequireSignatureForBody refuses a WPT request with a body from the fields alone.
//
// # Handoffs in host protocols (handoff-context sections 5, 6)
//
// WithHandoffsIn names the host protocols and versions a receiver serves
// (hostproto.MCP, A2A03, A2A10; package hostproto says where each carries what). A
// handoff is read only where section 6 places it for the request's host and method,
// and refused with errcode.HandoffUnplaced anywhere else, so that no handoff passes
// unchecked; a delegator's "canceled" status (MCP notifications/cancelled, an
// A2A cancel) is read as a status and reaches the handler in Verified.Cancel.
//
// A refusal at the handoff step without a signed status to send is answered in the
// shape of the request's host protocol: a JSON-RPC request with an id gets a JSON-RPC
// 2.0 error response (section 5.1 of JSON-RPC: -32602, or -32603 for a check that could
// not be completed) on HTTP 200, as MCP Streamable HTTP and A2A's JSON-RPC binding
// carry errors, with the stable code and kind in its data, so that SDK clients raise
// it as the call's error; anything else (plain HTTP, a notification, a batch) gets the
// RFC 9457 problem document. Refusals before the handoff step (proof, Dialog-Context,
// Txn-Token) are always the problem document.
//
// # Protected resource metadata (RFC 9728)
//
// resourcemetadata.go: WithResourceMetadata publishes the receiver's metadata
// (ResourceMetadataHandler, at the well-known URL ResourceMetadataURL derives) and
// names it on the receiver's 401s, in the WPT challenge (the only WIMSE scheme; an
// HTTP-signature receiver sends none, and none is Bearer). bearer_methods_supported is
// always [], and ProofsSupportedMember lists the proofs the receiver takes.
package dialog
