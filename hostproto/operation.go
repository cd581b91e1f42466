package hostproto

import (
	"bytes"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// Operation is what a request body asks the host protocol to do, for an authorization
// decision (package authz): the host ("mcp", "a2a"), the JSON-RPC method, and what the
// method names: the tool of an MCP tools/call, the skill an A2A message asks for.
type Operation struct {
	Protocol string
	Method   string
	Name     string
}

// A2ASkillMetadataKey is the member of an A2A Message's metadata read as the skill the
// message asks for. A2A (0.3 and 1.0) has no member of its own that selects a skill
// (AgentCard.skills is for discovery); clients that target one put its id here, and an
// agent whose policy allows skills by name routes by the same member.
const A2ASkillMetadataKey = "skill"

// MaxOperationBody bounds the body ReadOperation reads; the receiver reads at most
// this much (dialog.MaxHandoffBody is the same bound).
const MaxOperationBody = 1 << 20

// ReadOperation reads the operation of body for a decision that must not be fooled: a
// reader behind it (the application's SDK) must find the same operation, or none. It
// reads the JSON-RPC envelope as ParseRequest does (names exact, none twice), then the
// one member that names what is asked for, as strictly:
//
//   - an empty body, or one that is not JSON (a form, text), asks for no operation: the
//     zero Operation;
//   - a JSON-RPC request (MCP, A2A 0.3, A2A 1.0: HostOf its method) gives its host and
//     method, and for MCP tools/call params.name, for an A2A request carrying a Message
//     params.message.metadata.skill (A2ASkillMetadataKey); a name that is not a string
//     is refused;
//   - a JSON object without a method member (a plain JSON body, a JSON-RPC response)
//     asks for no operation.
//
// Everything else is refused (invalid_request): a body over MaxOperationBody, a JSON
// array (a JSON-RPC batch asks for many operations at once), a body that starts like
// JSON after a byte order mark (a reader that drops the mark would find a request in
// it), an object naming a member twice or in another case (another reader may take the
// other copy: encoding/json matches names case-insensitively, JavaScript keeps the last
// copy), and a method or params member of another type.
func ReadOperation(body []byte) (Operation, error) {
	if len(body) > MaxOperationBody {
		return Operation{}, errcode.New(errcode.BodyTooLarge, "body over %d octets", MaxOperationBody)
	}
	text := bytes.TrimLeft(body, " \t\r\n")
	if t, ok := bytes.CutPrefix(text, []byte("\xef\xbb\xbf")); ok && startsJSON(bytes.TrimLeft(t, " \t\r\n")) {
		return Operation{}, errcode.New(errcode.InvalidRequest, "a JSON body after a byte order mark: its operation cannot be read unambiguously")
	}
	if !startsJSON(text) {
		return Operation{}, nil
	}
	if text[0] == '[' {
		return Operation{}, errcode.New(errcode.InvalidRequest, "a JSON array body (a JSON-RPC batch) asks for more than one operation: only single requests are authorized")
	}
	env, err := parseRequest(body)
	if err != nil {
		return Operation{}, errcode.New(errcode.InvalidRequest, "the JSON-RPC envelope cannot be read unambiguously: %s", errcode.Cut(err.Error()))
	}
	if env.Method == "" {
		return Operation{}, nil
	}
	host := HostOf(env.Method)
	op := Operation{Protocol: "mcp", Method: env.Method}
	if host.IsA2A() {
		op.Protocol = "a2a"
	}
	if len(env.Params) == 0 || string(env.Params) == "null" {
		return op, nil
	}
	switch {
	case host == MCP && env.Method == "tools/call":
		var p struct {
			Name *string `json:"name"`
		}
		if err := netjson.DecodeObject(env.Params, &p); err != nil {
			return Operation{}, errcode.New(errcode.InvalidRequest, "the tools/call params cannot be read unambiguously: %s", errcode.Cut(err.Error()))
		}
		if p.Name != nil {
			op.Name = *p.Name
		}
	case host.carriesMessage(env.Method):
		var p struct {
			Message *struct {
				Metadata *struct {
					Skill *string `json:"skill"`
				} `json:"metadata"`
			} `json:"message"`
		}
		if err := netjson.DecodeObject(env.Params, &p); err != nil {
			return Operation{}, errcode.New(errcode.InvalidRequest, "the %s params cannot be read unambiguously: %s", errcode.Cut(env.Method), errcode.Cut(err.Error()))
		}
		if p.Message != nil && p.Message.Metadata != nil && p.Message.Metadata.Skill != nil {
			op.Name = *p.Message.Metadata.Skill
		}
	}
	return op, nil
}

// startsJSON reports whether text (without leading white space) starts a JSON object
// or array.
func startsJSON(text []byte) bool {
	return len(text) > 0 && (text[0] == '{' || text[0] == '[')
}
