package handoff

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
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

// A2AExtensionsHeader is the A2A service parameter (HTTP header) in which a client
// lists the extensions it uses.
const A2AExtensionsHeader = "A2A-Extensions"

// AddA2AExtension lists the extension URI in the A2A-Extensions service parameter of a
// request (section 6: "A client also lists the URI"), once.
func AddA2AExtension(h http.Header) {
	for _, v := range h.Values(A2AExtensionsHeader) {
		for _, u := range strings.Split(v, ",") {
			if strings.TrimSpace(u) == A2AExtensionURI {
				return
			}
		}
	}
	h.Add(A2AExtensionsHeader, A2AExtensionURI)
}

func objectOf(b []byte, what string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
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

func handoffValue(h *Handoff) (json.RawMessage, error) { return h.MarshalJSON() }

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
	if err := json.Unmarshal(v, &t); err != nil {
		return nil, errcode.New(errcode.InvalidEncoding, "status is not a signed handoff in text form")
	}
	s, err := ParseSignedText(t)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// PutA2AMessage places h in an A2A Message: under the extension URI in metadata, with
// the URI listed in extensions (section 6).
func PutA2AMessage(msg []byte, h *Handoff) ([]byte, error) {
	v, err := handoffValue(h)
	if err != nil {
		return nil, err
	}
	out, err := setIn(msg, []string{"metadata"}, A2AExtensionURI, v)
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
		if err := json.Unmarshal(raw, &exts); err != nil {
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
		_ = json.Unmarshal(raw, &exts)
	}
	if !slices.Contains(exts, A2AExtensionURI) {
		return nil, errcode.New(errcode.InvalidEncoding, "metadata carries a handoff but extensions does not list %s", A2AExtensionURI)
	}
	return parseHandoffValue(v)
}

// PutA2AStatus places a status in the metadata of the A2A Message that carries the
// reply.
func PutA2AStatus(msg []byte, s Signed) ([]byte, error) {
	v, err := statusValue(s)
	if err != nil {
		return nil, err
	}
	out, err := setIn(msg, []string{"metadata"}, A2AExtensionURI, v)
	if err != nil {
		return nil, err
	}
	return addExtension(out)
}

// A2AMessageStatus takes a status out of an A2A Message's metadata.
func A2AMessageStatus(msg []byte) (*Signed, error) {
	v, err := getIn(msg, []string{"metadata"}, A2AExtensionURI)
	if err != nil {
		return nil, err
	}
	return parseStatusValue(v)
}

// PutA2ATaskStatus places a status in the metadata of the status message
// (TaskStatus.message) of a returned A2A Task.
func PutA2ATaskStatus(task []byte, s Signed) ([]byte, error) {
	v, err := statusValue(s)
	if err != nil {
		return nil, err
	}
	return setIn(task, []string{"status", "message", "metadata"}, A2AExtensionURI, v)
}

// A2ATaskStatus takes a status out of a Task's status message.
func A2ATaskStatus(task []byte) (*Signed, error) {
	v, err := getIn(task, []string{"status", "message", "metadata"}, A2AExtensionURI)
	if err != nil {
		return nil, err
	}
	return parseStatusValue(v)
}

// PutA2ACancel places the delegator's "canceled" status in the metadata of the params
// of its CancelTask request.
func PutA2ACancel(params []byte, s Signed) ([]byte, error) {
	v, err := statusValue(s)
	if err != nil {
		return nil, err
	}
	return setIn(params, []string{"metadata"}, A2AExtensionURI, v)
}

// A2ACancelStatus takes the "canceled" status out of CancelTask params.
func A2ACancelStatus(params []byte) (*Signed, error) {
	v, err := getIn(params, []string{"metadata"}, A2AExtensionURI)
	if err != nil {
		return nil, err
	}
	return parseStatusValue(v)
}

// PutMCPRequest places h under MCPMetaKey in the _meta of an MCP request's params.
func PutMCPRequest(params []byte, h *Handoff) ([]byte, error) {
	v, err := handoffValue(h)
	if err != nil {
		return nil, err
	}
	return setIn(params, []string{"_meta"}, MCPMetaKey, v)
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
	v, err := statusValue(s)
	if err != nil {
		return nil, err
	}
	return setIn(result, []string{"_meta"}, MCPMetaKey, v)
}

// MCPResultStatus takes a status out of a CallToolResult.
func MCPResultStatus(result []byte) (*Signed, error) {
	v, err := getIn(result, []string{"_meta"}, MCPMetaKey)
	if err != nil {
		return nil, err
	}
	return parseStatusValue(v)
}

// PutMCPCancel places the delegator's "canceled" status in the _meta of the params of
// its notifications/cancelled notification. MCP asks the receiver of a cancellation not
// to reply, so the hop may stay unresolved (section 6).
func PutMCPCancel(params []byte, s Signed) ([]byte, error) {
	v, err := statusValue(s)
	if err != nil {
		return nil, err
	}
	return setIn(params, []string{"_meta"}, MCPMetaKey, v)
}

// MCPCancelStatus takes the "canceled" status out of notifications/cancelled params.
func MCPCancelStatus(params []byte) (*Signed, error) {
	v, err := getIn(params, []string{"_meta"}, MCPMetaKey)
	if err != nil {
		return nil, err
	}
	return parseStatusValue(v)
}
