package hostproto

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

// Request is the envelope of a JSON-RPC 2.0 request (or notification): its members as
// sent.
type Request struct {
	ID     json.RawMessage `json:"id"` // nil for a notification
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// ParseRequest reads the JSON-RPC request members of body; ok is false when body is
// not one (not a JSON object, no method, or a member named in another case or twice).
func ParseRequest(body []byte) (req Request, ok bool) {
	req, err := parseRequest(body)
	return req, err == nil && req.Method != ""
}

// parseRequest is ParseRequest's reading of body: an error when body is not a JSON
// object or names a member twice or in another case; a Method of "" when it names none.
func parseRequest(body []byte) (req Request, err error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return req, errNotJSON
	}
	err = netjson.DecodeObject(body, &req)
	return req, err
}

// Carried is what a request body carries for a handoff receiver (section 6).
type Carried struct {
	Host    Host            // 0: not a JSON-RPC request
	ID      json.RawMessage // the JSON-RPC id (nil for a notification)
	Handoff *handoff.Handoff
	Cancel  *handoff.Signed // a delegator's "canceled" status (MCP notifications/cancelled, A2A cancel)
	Dialog  string          // the A2A message's contextId
}

// Find finds the handoff, or the canceled status, that body carries in the places
// section 6 names for hosts, and refuses a body that carries one anywhere else
// (errcode.HandoffUnplaced): in a request of another host or version, in a method that
// carries none, or a second copy. For a JSON-RPC request it returns its host and id
// whatever it carries.
func Find(body []byte, hosts []Host) (*Carried, error) {
	p := &Carried{}
	env, ok := ParseRequest(body)
	expected := 0 // handoff keys found where they are read
	if ok && len(env.Params) > 0 {
		p.Host, p.ID = HostOf(env.Method), env.ID
		if slices.Contains(hosts, p.Host) {
			var err error
			if expected, err = p.read(env.Method, env.Params); err != nil {
				return nil, err
			}
		}
	} else if ok {
		p.Host, p.ID = HostOf(env.Method), env.ID
	}
	n, err := handoffKeys(body)
	if err != nil {
		return nil, err
	}
	if n > expected {
		where := "a body that is not a JSON-RPC request"
		switch {
		case ok && !slices.Contains(hosts, p.Host):
			where = "a " + p.Host.String() + " request (method " + errcode.Cut(env.Method) + "), and this receiver reads handoffs only in " + hostNames(hosts)
		case ok:
			where = "a place of the " + p.Host.String() + " request (method " + errcode.Cut(env.Method) + ") where none is read"
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
func (p *Carried) read(method string, params json.RawMessage) (int, error) {
	var err error
	switch {
	case method == p.Host.CancelMethod() && p.Host == MCP:
		p.Cancel, err = handoff.MCPCancelStatus(params)
		return count(p.Cancel != nil), err
	case p.Host == MCP:
		p.Handoff, err = handoff.MCPRequestHandoff(params)
		return count(p.Handoff != nil), err
	case method == p.Host.CancelMethod():
		p.Cancel, err = handoff.A2ACancelStatus(params)
		return count(p.Cancel != nil), err
	case p.Host.carriesMessage(method):
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
		p.Dialog = c.ContextID
		p.Handoff, err = handoff.A2AMessageHandoff(m.Message)
		return count(p.Handoff != nil), err
	}
	return 0, nil // a method that carries no handoff
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ContextID is the contextId of the message an A2A request of method carries (the
// dialog it names), "" for any other request.
func ContextID(method string, params json.RawMessage) string {
	if !HostOf(method).carriesMessage(method) {
		return ""
	}
	var p struct {
		Message struct {
			ContextID string `json:"contextId"`
		} `json:"message"`
	}
	_ = netjson.DecodeObject(params, &p)
	return p.Message.ContextID
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

// SetMember returns the JSON-RPC message msg (its members as read, each kept as sent)
// with member name (params, result) set to v; what names the message in the error of
// a member that is not JSON.
func SetMember(msg map[string]json.RawMessage, name string, v json.RawMessage, what string) ([]byte, error) {
	msg[name] = v
	out, err := json.Marshal(msg)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "%s", what)
	}
	return out, nil
}
