package hostproto

import (
	"slices"
	"strings"
)

// Host is a host protocol, in one version, that carries handoffs in JSON-RPC 2.0
// requests (handoff-context section 6). A receiver names the hosts it serves
// (dialog.WithHandoffsIn), so that where a handoff rides is never guessed from a method
// name alone, and a handoff that rides anywhere else is refused
// (errcode.HandoffUnplaced).
type Host int

// Hosts.
const (
	// MCP (2025-06-18 and later): the Handoff under handoff.MCPMetaKey in the _meta of
	// a request's params (a tool call); the delegator's "canceled" status under the same
	// key in the _meta of notifications/cancelled.
	MCP Host = iota + 1
	// A2A03 is A2A 0.3 over JSON-RPC (a2a-go 0.3): message/send and message/stream
	// carry the Handoff in params.message.metadata, tasks/cancel the "canceled" status
	// in params.metadata; clients list the extension in X-A2A-Extensions.
	A2A03
	// A2A10 is A2A 1.0 over JSON-RPC: SendMessage and SendStreamingMessage carry the
	// Handoff in params.message.metadata, CancelTask the "canceled" status in
	// params.metadata; clients list the extension in A2A-Extensions, and a
	// SendMessage result is {"message": ...} or {"task": ...}.
	A2A10
)

// String names the host: "mcp", "a2a-0.3", "a2a-1.0".
func (h Host) String() string {
	if m := h.methods(); m != nil {
		return m.name
	}
	return "unknown"
}

// Hosts returns every Host: their method names do not overlap, so one body is read
// for all of them at once (dialog.JSONRPCHandoff).
func Hosts() []Host { return []Host{MCP, A2A03, A2A10} }

// hostMethods is the one table of the JSON-RPC methods of a host: which belong to it,
// which carry a handoff offer and which the delegator's "canceled" status.
type hostMethods struct {
	name string
	// offers are the methods a client puts an offer in; for A2A, the methods whose
	// params carry a Message (params.message), the first the unary one.
	offers []string
	// cancel is the method whose params carry the delegator's "canceled" status.
	cancel string
	// families and names are the methods of the host: every method starting with a
	// family prefix, and the names listed. MCP has neither: it is every other method.
	families, names []string
}

var table = map[Host]*hostMethods{
	MCP: {name: "mcp", offers: []string{"tools/call"}, cancel: "notifications/cancelled"},
	A2A03: {name: "a2a-0.3", offers: []string{"message/send", "message/stream"}, cancel: "tasks/cancel",
		families: []string{"message/", "tasks/", "agent/"}},
	A2A10: {name: "a2a-1.0", offers: []string{"SendMessage", "SendStreamingMessage"}, cancel: "CancelTask",
		names: []string{"SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask",
			"SubscribeToTask", "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
			"ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"}},
}

func (h Host) methods() *hostMethods { return table[h] }

// HostOf is the host protocol a JSON-RPC method belongs to: the A2A 0.3 families
// (message/, tasks/, agent/), the A2A 1.0 names, and MCP for every other method.
func HostOf(method string) Host {
	for _, h := range []Host{A2A03, A2A10} {
		m := table[h]
		if slices.Contains(m.names, method) || slices.ContainsFunc(m.families, func(p string) bool { return strings.HasPrefix(method, p) }) {
			return h
		}
	}
	return MCP
}

// OfferMethods are the methods of h a client puts a handoff offer in: MCP tools/call;
// A2A 0.3 message/send and message/stream; A2A 1.0 SendMessage and
// SendStreamingMessage. The first is the unary one. (An MCP receiver reads an offer in
// the params._meta of any MCP request: see Find.)
func (h Host) OfferMethods() []string {
	if m := h.methods(); m != nil {
		return slices.Clone(m.offers)
	}
	return nil
}

// CancelMethod is the method of h whose params carry the delegator's "canceled"
// status: MCP notifications/cancelled, A2A 0.3 tasks/cancel, A2A 1.0 CancelTask.
func (h Host) CancelMethod() string {
	if m := h.methods(); m != nil {
		return m.cancel
	}
	return ""
}

// IsOfferMethod reports whether method is one of h's OfferMethods.
func (h Host) IsOfferMethod(method string) bool {
	m := h.methods()
	return m != nil && slices.Contains(m.offers, method)
}

// IsA2A reports whether h is a version of A2A.
func (h Host) IsA2A() bool { return h == A2A03 || h == A2A10 }

// carriesMessage reports whether method is an A2A request of host h whose params carry
// a Message: the handoff rides in its metadata, and its contextId names the dialog.
func (h Host) carriesMessage(method string) bool {
	return h.IsA2A() && h.IsOfferMethod(method)
}
