// Package hostproto is the one room for the host protocols that carry dialogs and
// signed handoffs: MCP (2025-06-18 and later, Streamable HTTP) and A2A over JSON-RPC
// (0.3, as a2a-go 0.3 speaks it, and 1.0). Packages dialog (the receiver), agent (the
// client), proxy (egress and ingress) and the SDK adapters (adapters/mcp, adapters/a2a)
// read and write host messages only through it, so that which method carries what,
// and what a reply looks like, is written once.
//
// Read host.go first: Host and the one table of methods (HostOf, OfferMethods,
// CancelMethod). Then, by what they handle:
//
//   - request.go, handoff-context section 6 on the receiving side: ParseRequest reads
//     a JSON-RPC envelope; Find takes the handoff, or the delegator's "canceled"
//     status, out of the place section 6 names for the request's host and method, and
//     refuses a handoff key anywhere else (errcode.HandoffUnplaced); ContextID is the
//     dialog an A2A message names.
//   - reply.go, the replies (section 6, sections 5.1 and 5.3 for a refused offer):
//     StatusResult and WriteResult answer a refused offer with its signed status in
//     the host's result shape, WriteError a refusal without one as a JSON-RPC 2.0 error
//     (section 5.1 of JSON-RPC); PlaceStatus puts the delegate's status in a result,
//     ResultStatus and StatusUpdateStatus take it out; A2ATask and TaskState read the
//     A2A Task (Table 1 of section 4 maps its state: handoff.StateForA2ATask).
//   - jsonrpcid.go, JSON-RPC 2.0 section 5 ids: SameID compares two ids by value, as a
//     response echoes "the same value", ValidID says whether a response can echo one.
//   - sse.go, the WHATWG event-stream format (HTML Living Standard 9.2.6) that MCP
//     Streamable HTTP and A2A streaming replies come in: IsEventStream, a strict and
//     bounded ParseEventStream (MaxStreamEvents), StreamReply (the response event to a
//     request), ReplaceEventData.
//   - mcpheaders.go, MCP 2026-07-28's fields that repeat the body for intermediaries
//     (Streamable HTTP "Standard headers", SEP-2243; the version in _meta, SEP-2575):
//     CheckMCPHeaders holds Mcp-Method, Mcp-Name and MCP-Protocol-Version to the body
//     and requires them where the version does (errcode.MCPHeaderMismatch, which
//     WriteError sends as MCP's HeaderMismatch, -32020 on HTTP 400).
//   - a2a.go, A2A's service parameters: the extension listed in A2A-Extensions (and
//     X-A2A-Extensions for 0.3), A2A-Version.
//
// The element itself, and where it sits inside a given A2A Message, Task, params or MCP
// result object, is package handoff's (PutA2AMessage, PutMCPRequest ...): section 6 of
// the handoff draft with the element's encodings. This package says which object of
// which message that is. It imports handoff, errcode, problem and the JSON reader, and
// nothing of dialog, agent or proxy.
//
// Parsers of network input here are bounded and fuzzed (FuzzParseEventStream,
// FuzzSameJSONRPCIDKeepsEqualTexts, FuzzHandoffSec6_EveryHandoffKeyIsPlacedOrRefused,
// FuzzMCP20260728StandardHeaders).
package hostproto
