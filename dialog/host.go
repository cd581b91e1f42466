package dialog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// Host is a host protocol, in one version, that carries handoffs in JSON-RPC 2.0
// requests (handoff-context section 6). A receiver names the hosts it serves
// (WithHandoffsIn), so that where a handoff rides is never guessed from a method name
// alone, and a handoff that rides anywhere else is refused (errcode.HandoffUnplaced).
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
	switch h {
	case MCP:
		return "mcp"
	case A2A03:
		return "a2a-0.3"
	case A2A10:
		return "a2a-1.0"
	}
	return "unknown"
}

// allHosts are the hosts JSONRPCHandoff and WithHandoffs(r, nil) read: their method
// names do not overlap.
var allHosts = []Host{MCP, A2A03, A2A10}

// A2A method names that carry a Message, and that cancel a task, by version.
var (
	a2a03MessageMethods = []string{"message/send", "message/stream"}
	a2a10MessageMethods = []string{"SendMessage", "SendStreamingMessage"}
	a2a10Methods        = []string{"SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask",
		"SubscribeToTask", "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
		"ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"}
)

const (
	a2a03Cancel     = "tasks/cancel"
	a2a10Cancel     = "CancelTask"
	mcpCancellation = "notifications/cancelled"
)

// hostOfMethod is the host protocol a JSON-RPC method belongs to: the A2A 0.3 families
// (message/, tasks/, agent/), the A2A 1.0 names, and MCP for every other method.
func hostOfMethod(method string) Host {
	switch {
	case strings.HasPrefix(method, "message/"), strings.HasPrefix(method, "tasks/"), strings.HasPrefix(method, "agent/"):
		return A2A03
	case slices.Contains(a2a10Methods, method):
		return A2A10
	}
	return MCP
}

// placed is what a request body carries for the handoff middleware.
type placed struct {
	host    Host            // 0: not a JSON-RPC request
	id      json.RawMessage // the JSON-RPC id (nil for a notification)
	handoff *handoff.Handoff
	cancel  *handoff.Signed // a delegator's "canceled" status (MCP notifications/cancelled, A2A cancel)
	dialog  string          // the A2A message's contextId
}

// envelope reads the JSON-RPC request members; ok is false when body is not one.
func envelope(body []byte) (env struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}, ok bool) {
	if len(bytes.TrimSpace(body)) == 0 || netjson.DecodeObject(body, &env) != nil || env.Method == "" {
		return env, false
	}
	return env, true
}

// placeIn finds the handoff, or the canceled status, that body carries in the places
// section 6 names for hosts, and refuses a body that carries one anywhere else.
func placeIn(body []byte, hosts []Host) (*placed, error) {
	p := &placed{}
	env, ok := envelope(body)
	expected := 0 // handoff keys found where they are read
	if ok && len(env.Params) > 0 {
		p.host, p.id = hostOfMethod(env.Method), env.ID
		if slices.Contains(hosts, p.host) {
			var err error
			if expected, err = p.read(env.Method, env.Params); err != nil {
				return nil, err
			}
		}
	} else if ok {
		p.host, p.id = hostOfMethod(env.Method), env.ID
	}
	n, err := handoffKeys(body)
	if err != nil {
		return nil, err
	}
	if n > expected {
		where := "a body that is not a JSON-RPC request"
		switch {
		case ok && !slices.Contains(hosts, p.host):
			where = "a " + p.host.String() + " request (method " + errcode.Cut(env.Method) + "), and this receiver reads handoffs only in " + hostNames(hosts)
		case ok:
			where = "a place of the " + p.host.String() + " request (method " + errcode.Cut(env.Method) + ") where none is read"
		}
		return nil, errcode.New(errcode.HandoffUnplaced, "a handoff key in %s (section 6)", where)
	}
	return p, nil
}

func hostNames(hosts []Host) string {
	s := make([]string, len(hosts))
	for i, h := range hosts {
		s[i] = h.String()
	}
	return strings.Join(s, ", ")
}

// read takes the element out of params; it returns how many handoff keys it read.
func (p *placed) read(method string, params json.RawMessage) (int, error) {
	var err error
	switch {
	case p.host == MCP && method == mcpCancellation:
		p.cancel, err = handoff.MCPCancelStatus(params)
		return count(p.cancel != nil), err
	case p.host == MCP:
		p.handoff, err = handoff.MCPRequestHandoff(params)
		return count(p.handoff != nil), err
	case p.host == A2A03 && method == a2a03Cancel, p.host == A2A10 && method == a2a10Cancel:
		p.cancel, err = handoff.A2ACancelStatus(params)
		return count(p.cancel != nil), err
	case p.host == A2A03 && slices.Contains(a2a03MessageMethods, method), p.host == A2A10 && slices.Contains(a2a10MessageMethods, method):
		var m struct {
			Message json.RawMessage `json:"message"`
		}
		if err := netjson.DecodeObject(params, &m); err != nil || len(m.Message) == 0 {
			return 0, errcode.New(errcode.InvalidRequest, "A2A params without a message")
		}
		var c struct {
			ContextID string `json:"contextId"`
		}
		_ = netjson.DecodeObject(m.Message, &c)
		p.dialog = c.ContextID
		p.handoff, err = handoff.A2AMessageHandoff(m.Message)
		return count(p.handoff != nil), err
	}
	return 0, nil // a method that carries no handoff
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// maxKeyDepth bounds the nesting handoffKeys follows, as encoding/json does.
const maxKeyDepth = 10000

// handoffKeys counts the object members named handoff.MCPMetaKey or
// handoff.A2AExtensionURI anywhere in body (names compared after JSON unescaping, so
// an escaped spelling is found too). A body that is not JSON counts none: no JSON
// reader finds a member in it.
func handoffKeys(body []byte) (int, error) {
	if !bytes.Contains(body, []byte("agent-handoff")) && !bytes.Contains(body, []byte(`\u`)) {
		return 0, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	n := 0
	if err := walkKeys(dec, &n, 0); err != nil {
		var e *errcode.Error
		if errors.As(err, &e) {
			return 0, err
		}
		return 0, nil // not JSON
	}
	return n, nil
}

var errNotJSON = errors.New("not JSON")

func walkKeys(dec *json.Decoder, n *int, depth int) error {
	if depth > maxKeyDepth {
		return errcode.New(errcode.InvalidRequest, "the body nests deeper than %d", maxKeyDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return errNotJSON
		}
		return err
	}
	switch tok {
	case json.Delim('{'):
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			if s, _ := k.(string); s == handoff.MCPMetaKey || s == handoff.A2AExtensionURI {
				*n++
			}
			if err := walkKeys(dec, n, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case json.Delim('['):
		for dec.More() {
			if err := walkKeys(dec, n, depth+1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

// HandoffsIn returns the extractor for handoffs carried in the JSON-RPC requests of
// hosts (section 6). It refuses a handoff under a handoff key anywhere it does not read
// one (errcode.HandoffUnplaced): in a request of another host or version, in a method
// that carries none, or a second copy. A "canceled" status (MCP notifications/cancelled,
// A2A cancel) is not an offer: the extractor returns (nil, nil) for it; WithHandoffsIn
// reads it as a status.
func HandoffsIn(hosts ...Host) HandoffExtractor {
	hosts = slices.Clone(hosts)
	return func(body []byte) (*handoff.Handoff, error) {
		p, err := placeIn(body, hosts)
		if err != nil || p == nil {
			return nil, err
		}
		return p.handoff, nil
	}
}

// WithHandoffsIn is WithHandoffs for the JSON-RPC requests of the named hosts (section
// 6): a handoff is read only where those hosts carry one and refused anywhere else
// (errcode.HandoffUnplaced); the reply to a refused offer takes the shape of the host
// and version of the request. A delegator's "canceled" status (MCP
// notifications/cancelled, A2A tasks/cancel or CancelTask) is checked and recorded with
// the handoff receiver's HandleCancel (section 5.6) and the request goes on to the
// handler with the result in Verified.Cancel, so that the host protocol's own cancel
// reaches the work; a cancel that does not verify is refused.
func WithHandoffsIn(r *handoff.Receiver, hosts ...Host) ReceiverOption {
	hosts = slices.Clone(hosts)
	return func(rc *Receiver) {
		rc.handoffs = r
		rc.place = func(body []byte) (*placed, error) { return placeIn(body, hosts) }
	}
}
