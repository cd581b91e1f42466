// Package dialogmcp carries dialogs and signed handoffs over the MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk): dialog-binding-wimse-oauth on every HTTP
// request of the streamable transport, and handoff-context section 6 ("MCP") in tool
// calls. It is a module of its own so that the core module does not follow the SDK.
//
// Client side: NewHTTPClient gives the *http.Client for
// mcp.StreamableClientTransport.HTTPClient. Every MCP HTTP request goes through an
// agent.Transport (proved with the WIT, Dialog-Context and Txn-Token attached, signed
// responses verified). PutOffer places a Handoff in CallToolParams._meta and
// ResultStatus reads the delegate's status from CallToolResult._meta.
//
// Cancel (section 6: the delegator's "canceled" status rides in the _meta of
// notifications/cancelled). go-sdk sends notifications/cancelled itself when a call's
// context ends, from inside its connection, and offers no hook to add _meta to it.
// Wrapping the mcp.Transport's Connection would see the message, but it hides the
// unexported interfaces go-sdk's streamable connection implements (the session state
// that sets Mcp-Protocol-Version on later requests and starts the standalone stream),
// so the wrapped session would speak another protocol version. The HTTP client is the
// one layer every message passes through unchanged: it remembers which JSON-RPC id
// (per Mcp-Session-Id) carried an offer for which hop, and when a
// notifications/cancelled for that id goes out, it adds the Delegator's "canceled"
// status for the hop before the request is signed. The notification keeps the call's
// context values (go-sdk sends it under context.WithoutCancel), so it carries the same
// dialog and Txn-Token.
//
// Server side: Handler puts a dialog.Receiver in front of go-sdk's streamable HTTP
// handler; build the receiver with dialog.WithHandoffsIn(hr, hostproto.MCP), so that a
// handoff anywhere but params._meta of an MCP request is refused, a retransmission is
// answered from the records (only to an authenticated offer.iss) and a rejection with
// its signed status, both without the tool. Verified gives a tool handler what the
// receiver verified, and Tool wraps a tool handler so that an accepted offer is taken
// before the work and the signed outcome goes back in the result's _meta. An MCP
// session is used only by the workload that opened it (errcode.SessionOwnerMismatch).
//
// MCP 2026-07-28 (go-sdk's Stateless handler, a client asking for that version) has no
// session: the offer and the status ride in _meta as before, and the delegator's
// "canceled" status, which reaches a fresh session that does not hold the call, stops
// the work by the hop it names (Handler cancels the context Tool runs the work in).
// stateless_test.go shows it with go-sdk at both ends.
package dialogmcp
