// Package proxy is dialogtrust for agents in any language: a local proxy beside the
// workload that holds its keys and does the WIMSE and OAuth work, so that the agent
// speaks plain HTTP (issue 15; docs/proxy.md).
//
// Read egress.go first (EgressConfig, Route, and Egress.serve, whose steps are named
// methods), then ingress.go (IngressConfig, Ingress.forward) and upstream.go (the wait
// for an upstream's answer, shared by both). fields.go and fieldnames.go are the
// proxies' fields, stream.go passes responses through, boundary.go the trust boundary,
// handoff_egress.go and handoff_ingress.go the handoff step of either side.
//
// Egress is the outgoing side. The local agent sends plain HTTP to it; a Route maps a
// path prefix to an upstream (https with the system or configured roots; plain http
// only to loopback unless the route allows it). Each request goes out through
// agent.Transport: the workload's WIT (refreshed by its wit.Source), the Txn-Token of
// the request's dialog from the TTS for the route's audience and scope, with the
// dialog in request_details (dialog-binding section 10, cached per dialog by
// agent.TTSSource), and the proof, the WIMSE HTTP signature or a WPT per route,
// covering Dialog-Context, Txn-Token and Content-Digest (sections 7, 8). A signed
// response is verified and must echo the request's Dialog-Context (section 7). The
// agent names the dialog with the Dialog-Context field it sends, or asks for a new
// one with StartDialogField: ?1 (section 5, agent.Agent.Start) and reads the accepted
// context in the response. Before anything else the egress refuses a Host it does not
// answer as (a web page's name rebound to the loopback address) and a browser's request
// from an origin it does not allow (egress_callers.go; EgressConfig.AllowedHosts and
// AllowedOrigins), so that no page on the host gets a token or a signature.
//
// Ingress is the incoming side, a reverse proxy in front of the agent's own server. It
// removes every Dialogtrust-* field a client sent, bounds the body without reading it
// (the receiver reads it once every field check passed, so a refused request gets no
// 100 Continue), runs dialog.Receiver (section 12: stateful or stateless, its replay
// store, handoffs with
// dialog.WithHandoffs answered in the host protocol's reply, response signing) and
// forwards only verified requests, with what was verified in the Verified* fields and
// without the credentials, and with the Host the caller sent, so that the
// application's own DNS-rebinding protection judges the name it was reached by.
//
// Field names (fieldnames.go; issue 22 point 1; docs/proxy.md, "Field names with _").
// CGI, WSGI, Django, PHP and Rack read "_" and "-" in a field name alike, and older
// servers every octet that is not a letter or digit: Dialogtrust_Verified_Sender
// reaches a WSGI application as HTTP_DIALOGTRUST_VERIFIED_SENDER, joined by wsgiref to
// the verified one. net/http keeps the two apart. So the ingress drops, before
// anything else, every field an application reads (fieldKey) as one of the proxies'
// namespace or as X-Forwarded-Host, in any spelling, and as a field its receiver
// checks in a spelling other than the one the receiver reads; it sets each of its own
// once. It drops rather than refuses, as it always dropped a client's Dialogtrust-*
// fields: the application sees the same either way. It leaves other names with "_"
// alone (ASGI servers and some applications use them). The egress drops the agent's
// copies of the namespace and of the credentials it makes in any spelling, so that
// none is signed over and sent, and refuses an instruction field in another spelling
// (invalid_request) rather than read it as absent and send another request than the
// agent asked for. Neither proxy forwards a request's trailers: each builds the request
// it sends without them.
//
// Provenance (dialog-binding section 9). The ingress gives the application the
// provenance to forward in VerifiedProvenanceField (dialog.Verified.Forward); when the
// agent calls on in that dialog it sends the value back to its egress in
// ProvenanceField with the same Dialog-Context, and the egress, having checked it names
// that Dialog-Context, sends it as Dialog-Provenance through agent.Agent.Continue, so
// that a receiver further on proves the initiator.
//
// A route with a BoundaryRoute crosses a trust boundary (section 11, Figure 5): for a
// request in a dialog D1 of this domain the egress asks AS A for a JWT authorization
// grant with D1's Txn-Token, redeems it at AS B for an access token of the peer domain
// and starts a linked dialog D2 with the upstream through agent.Linker, then continues
// D2 for every later request in D1; neither D1 nor its Txn-Token crosses (section 13).
// For an AS B that requires client authentication on the redemption (Ory Hydra), the
// route's PeerClient adds client_secret_basic (RFC 6749 section 2.3.1) there only.
// An ingress with a BoundaryIngress faces such callers: it takes the access token
// instead of a Txn-Token and exchanges it at its own TTS for one recording D2
// (agent.LinkAcceptor), kept for later requests with that access token in D2 until
// shortly before either expires.
//
// Handoffs (handoff-context sections 2 to 6; handoff_egress.go, handoff_ingress.go).
// A route with a Delegate and a Host makes a signed offer for a request with
// HandoffField: ?1 (agent.OfferInDialog: the grant is the digest of the Txn-Token the
// egress attaches), puts it in the JSON-RPC body where the host protocol carries it
// and signs the request over it; the delegate's status in the reply is verified as
// handoff.Delegator.HandleStatus does (section 5.6) and given to the agent in
// HandoffStatusField, HandoffReasonField and HandoffHopField. The ingress takes the
// hop of an offer its receiver accepted (handoff.Receiver.Accept) before the
// application runs, tells the application in VerifiedHandoffHopField and
// VerifiedHandoffFromField, and signs the outcome the application states in
// HandoffStatusField (or an A2A Task's state gives, Table 1) into the reply. A reply
// may be an application/json JSON-RPC response or a finite text/event-stream (the MCP
// Streamable HTTP transport, A2A message/stream; sse.go, the WHATWG event-stream
// format, bounded by MaxBody and MaxStreamEvents): the status goes in, and is read
// from, the stream's response event to the request (its id the request's by value,
// JSON-RPC 2.0 section 5; jsonrpcid.go), every other event unchanged.
// A cancel (section 4): the agent sends the host protocol's cancel (MCP
// notifications/cancelled, A2A tasks/cancel or CancelTask) with HandoffCancelField
// naming a hop the route offered, which the route remembers (MaxRememberedOffers,
// RememberedOfferTTL); the egress signs the delegator's "canceled" status
// (handoff.Delegator.Cancel) into it (section 6). The ingress's receiver checks and
// records it (handoff.Receiver.HandleCancel) and the application is told in
// VerifiedHandoffCancelField.
//
// The local hops, the agent to the egress and the ingress to the application, may be
// Unix domain sockets, as a sidecar's usually are: IngressConfig.Upstream
// unix:///path/app.sock (net/http's transport dialing the socket), and the egress
// handler served on any net.Listener (dialogtrust proxy: egress.listen unix:///path).
//
// Responses (stream.go; docs/proxy.md, "Streamed responses"). Both proxies pass a
// response through as it comes, flushed after each read, with an idle bound between
// reads (StreamIdleTimeout) in place of a total size bound, so that an MCP GET stream,
// a tool call's progress and A2A streaming events reach the agent when they are sent;
// the agent going away cancels the exchange behind it. A response that something must
// be computed over is read whole within MaxBody as before: a signed one (RFC 9421: the
// signature covers Content-Digest), the reply to a handoff offer, the answer to a
// cancel, and a response on a route crossing a trust boundary.
//
// Each upstream exchange is bounded by a wait of its own (upstream.go; UpstreamTimeout,
// per side and per route; DefaultUpstreamTimeout, 5 minutes, since LLM-backed tools and
// agents take minutes), and each proxy moves its own server's write deadline past that
// wait, so that an upstream too slow is answered upstream_unavailable and never with a
// reset connection (docs/proxy.md, "Timeouts").
//
// Every refusal is a problem document with a stable errcode code, except a refusal at
// the handoff step of a JSON-RPC request with a string or number id, at either side,
// which is a JSON-RPC error on 200 with the code and kind in its data
// (dialog.WriteRefusal); request bodies are bounded by MaxBody at either side.
package proxy
