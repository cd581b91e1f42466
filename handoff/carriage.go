package handoff

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// Carriage (section 6). The element travels inside the host protocol's own JSON
// messages; these helpers put it in and take it out of the objects named there and
// leave every other member as it was (members are kept as raw JSON; only their order
// may change). They take and return the JSON of the object itself: an A2A Message, a
// Task, the params of an A2A CancelTask request, the params of an MCP request or
// notification, or an MCP CallToolResult.
//
// Taking out returns (nil, nil) when the element is absent. Errors are
// errcode.InvalidEncoding.

func objectOf(b []byte, what string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := netjson.DecodeObject(b, &m); err != nil || m == nil {
		return nil, errcode.New(errcode.InvalidEncoding, "%s is not a JSON object", what)
	}
	return m, nil
}

func marshalObject(m map[string]json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "encoding")
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// setIn sets obj[path[0]][path[1]]...[key] = value, creating objects on the way.
func setIn(obj []byte, path []string, key string, value json.RawMessage) ([]byte, error) {
	m, err := objectOf(obj, "message")
	if err != nil {
		return nil, err
	}
	if len(path) == 0 {
		m[key] = value
		return marshalObject(m)
	}
	inner := m[path[0]]
	if len(inner) == 0 || string(inner) == "null" {
		inner = []byte("{}")
	}
	nb, err := setIn(inner, path[1:], key, value)
	if err != nil {
		return nil, err
	}
	m[path[0]] = nb
	return marshalObject(m)
}

// getIn returns obj[path...][key], or nil when any step is absent.
func getIn(obj []byte, path []string, key string) (json.RawMessage, error) {
	m, err := objectOf(obj, "message")
	if err != nil {
		return nil, err
	}
	for _, p := range path {
		v, ok := m[p]
		if !ok || string(v) == "null" {
			return nil, nil
		}
		if m, err = objectOf(v, p); err != nil {
			return nil, err
		}
	}
	v, ok := m[key]
	if !ok || string(v) == "null" {
		return nil, nil
	}
	return v, nil
}

// handoffValue is h as the value of its carriage member; a nil handoff is refused, not
// written as null (a body "carrying" no offer would read as one without a handoff).
func handoffValue(h *Handoff) (json.RawMessage, error) {
	if h == nil {
		return nil, errcode.New(errcode.InvalidRequest, "no handoff to carry")
	}
	return h.MarshalJSON()
}

func statusValue(s Signed) (json.RawMessage, error) {
	w := &jsonWriter{}
	w.str(s.Text())
	return w.buf.Bytes(), w.err
}

func parseHandoffValue(v json.RawMessage) (*Handoff, error) {
	if v == nil {
		return nil, nil
	}
	return ParseHandoffJSON(v, 0)
}

func parseStatusValue(v json.RawMessage) (*Signed, error) {
	if v == nil {
		return nil, nil
	}
	var t string
	if err := netjson.DecodeObject(v, &t); err != nil {
		return nil, errcode.New(errcode.InvalidEncoding, "status is not a signed handoff in text form")
	}
	s, err := ParseSignedText(t)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// putHandoff places h under key in the object at path of obj; every carriage of a
// Handoff writes it this one way.
func putHandoff(obj []byte, path []string, key string, h *Handoff) ([]byte, error) {
	v, err := handoffValue(h)
	if err != nil {
		return nil, err
	}
	return setIn(obj, path, key, v)
}

// putStatus places the text form of s under key in the object at path of obj.
func putStatus(obj []byte, path []string, key string, s Signed) ([]byte, error) {
	v, err := statusValue(s)
	if err != nil {
		return nil, err
	}
	return setIn(obj, path, key, v)
}

// statusAt takes the status under key in the object at path of obj: nil when there is
// none.
func statusAt(obj []byte, path []string, key string) (*Signed, error) {
	v, err := getIn(obj, path, key)
	if err != nil {
		return nil, err
	}
	return parseStatusValue(v)
}

// PutA2AMessage places h in an A2A Message: under the extension URI in metadata, with
// the URI listed in extensions (section 6).
func PutA2AMessage(msg []byte, h *Handoff) ([]byte, error) {
	out, err := putHandoff(msg, []string{"metadata"}, A2AExtensionURI, h)
	if err != nil {
		return nil, err
	}
	return addExtension(out)
}

func addExtension(msg []byte) ([]byte, error) {
	m, err := objectOf(msg, "message")
	if err != nil {
		return nil, err
	}
	var exts []string
	if raw, ok := m["extensions"]; ok && string(raw) != "null" {
		if err := netjson.DecodeObject(raw, &exts); err != nil {
			return nil, errcode.New(errcode.InvalidEncoding, "extensions is not an array of text")
		}
	}
	if slices.Contains(exts, A2AExtensionURI) {
		return msg, nil
	}
	b, _ := json.Marshal(append(exts, A2AExtensionURI))
	m["extensions"] = b
	return marshalObject(m)
}

// A2AMessageHandoff takes the Handoff out of an A2A Message. An element in metadata
// whose URI is not listed in extensions is an error rather than silently ignored.
func A2AMessageHandoff(msg []byte) (*Handoff, error) {
	v, err := getIn(msg, []string{"metadata"}, A2AExtensionURI)
	if err != nil || v == nil {
		return nil, err
	}
	m, _ := objectOf(msg, "message")
	var exts []string
	if raw, ok := m["extensions"]; ok {
		_ = netjson.DecodeObject(raw, &exts)
	}
	if !slices.Contains(exts, A2AExtensionURI) {
		return nil, errcode.New(errcode.InvalidEncoding, "metadata carries a handoff but extensions does not list %s", A2AExtensionURI)
	}
	return parseHandoffValue(v)
}

// PutA2AStatus places a status in the metadata of the A2A Message that carries the
// reply.
func PutA2AStatus(msg []byte, s Signed) ([]byte, error) {
	out, err := putStatus(msg, []string{"metadata"}, A2AExtensionURI, s)
	if err != nil {
		return nil, err
	}
	return addExtension(out)
}

// A2AMessageStatus takes a status out of an A2A Message's metadata.
func A2AMessageStatus(msg []byte) (*Signed, error) {
	return statusAt(msg, []string{"metadata"}, A2AExtensionURI)
}

// PutA2ATaskStatus places a status in the metadata of the status message
// (TaskStatus.message) of a returned A2A Task. A Task without a status message gets
// one that the A2A schema allows (messageId, role, parts, in the spelling of the A2A
// version its status.state is written in: TASK_STATE_* for 1.0, lower case for 0.3);
// a status message without them, or a Task whose version cannot be told, is refused
// (errcode.InvalidEncoding) rather than written invalid.
func PutA2ATaskStatus(task []byte, s Signed) ([]byte, error) {
	v, err := statusValue(s)
	if err != nil {
		return nil, err
	}
	msg, err := getIn(task, []string{"status"}, "message")
	if err != nil {
		return nil, err
	}
	if msg == nil {
		if msg, err = a2aStatusMessage(task, s); err != nil {
			return nil, err
		}
		if task, err = setIn(task, []string{"status"}, "message", msg); err != nil {
			return nil, err
		}
	} else if err := validA2AMessage(msg); err != nil {
		return nil, err
	}
	return setIn(task, []string{"status", "message", "metadata"}, A2AExtensionURI, v)
}

// validA2AMessage refuses a Message without the members every A2A version requires.
func validA2AMessage(msg []byte) error {
	var m struct {
		MessageID *string            `json:"messageId"`
		Role      *string            `json:"role"`
		Parts     *[]json.RawMessage `json:"parts"`
	}
	if err := netjson.DecodeObject(msg, &m); err != nil || m.MessageID == nil || *m.MessageID == "" || m.Role == nil || *m.Role == "" || m.Parts == nil {
		return errcode.New(errcode.InvalidEncoding, "the task's status message is not an A2A Message (messageId, role and parts)")
	}
	return nil
}

// a2aStatusMessage builds the status message of a Task that has none: an agent Message
// in the Task's A2A version, named after the status so that a resent status is the same
// message, with one text part saying which status it carries.
func a2aStatusMessage(task []byte, s Signed) ([]byte, error) {
	var t struct {
		ID        string `json:"id"`
		ContextID string `json:"contextId"`
		Status    struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := netjson.DecodeObject(task, &t); err != nil {
		return nil, errcode.New(errcode.InvalidEncoding, "the task is not an A2A Task")
	}
	e, err := parseElement(s, "status", 0)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "not a signed status")
	}
	text := "handoff status: " + string(e.status.State)
	m := map[string]any{"messageId": "handoff-status-" + s.Digest().Val}
	switch {
	case strings.HasPrefix(t.Status.State, "TASK_STATE_"):
		m["role"] = "ROLE_AGENT"
		m["parts"] = []any{map[string]any{"text": text}}
	case a2a03TaskStates[t.Status.State]:
		m["kind"] = "message"
		m["role"] = "agent"
		m["parts"] = []any{map[string]any{"kind": "text", "text": text}}
	default:
		return nil, errcode.New(errcode.InvalidEncoding, "task state %q is neither A2A 1.0 nor 0.3: no status message can be written for it", errcode.Cut(t.Status.State))
	}
	if t.ID != "" {
		m["taskId"] = t.ID
	}
	if t.ContextID != "" {
		m["contextId"] = t.ContextID
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "status message")
	}
	return b, nil
}

// a2a03TaskStates are the TaskState values of A2A 0.3.
var a2a03TaskStates = map[string]bool{
	A2A03TaskSubmitted: true, A2A03TaskWorking: true, A2A03TaskInputRequired: true, A2A03TaskCompleted: true,
	A2A03TaskCanceled: true, A2A03TaskFailed: true, A2A03TaskRejected: true, A2A03TaskAuthRequired: true, "unknown": true,
}

// A2ATaskStatus takes a status out of a Task's status message.
func A2ATaskStatus(task []byte) (*Signed, error) {
	return statusAt(task, []string{"status", "message", "metadata"}, A2AExtensionURI)
}

// PutA2ACancel places the delegator's "canceled" status in the metadata of the params
// of its CancelTask request.
func PutA2ACancel(params []byte, s Signed) ([]byte, error) {
	return putStatus(params, []string{"metadata"}, A2AExtensionURI, s)
}

// A2ACancelStatus takes the "canceled" status out of CancelTask params.
func A2ACancelStatus(params []byte) (*Signed, error) {
	return statusAt(params, []string{"metadata"}, A2AExtensionURI)
}

// PutMCPRequest places h under MCPMetaKey in the _meta of an MCP request's params.
func PutMCPRequest(params []byte, h *Handoff) ([]byte, error) {
	return putHandoff(params, []string{"_meta"}, MCPMetaKey, h)
}

// MCPRequestHandoff takes the Handoff out of an MCP request's params.
func MCPRequestHandoff(params []byte) (*Handoff, error) {
	v, err := getIn(params, []string{"_meta"}, MCPMetaKey)
	if err != nil {
		return nil, err
	}
	return parseHandoffValue(v)
}

// PutMCPResult places a status under MCPMetaKey in a CallToolResult's _meta.
func PutMCPResult(result []byte, s Signed) ([]byte, error) {
	return putStatus(result, []string{"_meta"}, MCPMetaKey, s)
}

// MCPResultStatus takes a status out of a CallToolResult.
func MCPResultStatus(result []byte) (*Signed, error) {
	return statusAt(result, []string{"_meta"}, MCPMetaKey)
}

// PutMCPCancel places the delegator's "canceled" status in the _meta of the params of
// its notifications/cancelled notification. MCP asks the receiver of a cancellation not
// to reply, so the hop may stay unresolved (section 6).
func PutMCPCancel(params []byte, s Signed) ([]byte, error) {
	return putStatus(params, []string{"_meta"}, MCPMetaKey, s)
}

// MCPCancelStatus takes the "canceled" status out of notifications/cancelled params.
func MCPCancelStatus(params []byte) (*Signed, error) {
	return statusAt(params, []string{"_meta"}, MCPMetaKey)
}
