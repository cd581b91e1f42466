package hostproto

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// The fields of MCP's Streamable HTTP transport that repeat what the body says, so that
// an intermediary routes and decides without reading the body (MCP 2026-07-28, "Standard
// headers", SEP-2243), and the protocol version that makes them required.
const (
	// MCPMethodHeader is the JSON-RPC method of the request or notification the body is.
	MCPMethodHeader = "Mcp-Method"
	// MCPNameHeader is what the method names: params.name of tools/call and
	// prompts/get, params.uri of resources/read (and of resources/subscribe and
	// resources/unsubscribe, which older clients still send).
	MCPNameHeader = "Mcp-Name"
	// MCPProtocolVersionHeader is the protocol version the request follows.
	MCPProtocolVersionHeader = "Mcp-Protocol-Version"
	// MCPStatelessVersion is the first protocol version without a session (no
	// initialize, no Mcp-Session-Id; version and capabilities in each request's _meta)
	// and with MCPMethodHeader, and MCPNameHeader for the methods that name something,
	// required on every POST.
	MCPStatelessVersion = "2026-07-28"
	// MCPMetaProtocolVersion is the member of a request's params._meta that names its
	// protocol version from MCPStatelessVersion on (SEP-2575).
	MCPMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	// JSONRPCHeaderMismatch is MCP's JSON-RPC error code for fields that disagree with
	// the body or are missing (HeaderMismatch), sent on HTTP 400.
	JSONRPCHeaderMismatch = -32020
)

// ModernMCP reports whether version is MCPStatelessVersion or later, compared as the
// SDKs compare it (as text: go-sdk v1.8.0's `>= "2026-07-28"`), so that a receiver in
// front of one reads a version as it does.
func ModernMCP(version string) bool { return version >= MCPStatelessVersion }

// MCPHeadersApply reports whether a request with fields h has MCP fields to check
// against its body (CheckMCPHeaders): it carries Mcp-Method or Mcp-Name, or a protocol
// version that requires them. A receiver that reads the body anyway checks every body;
// one that does not reads it for these.
func MCPHeadersApply(h http.Header) bool {
	if len(h.Values(MCPMethodHeader)) > 0 || len(h.Values(MCPNameHeader)) > 0 {
		return true
	}
	for _, v := range h.Values(MCPProtocolVersionHeader) {
		if ModernMCP(v) {
			return true
		}
	}
	return false
}

// nameMember is the member of params that MCPNameHeader repeats for method, "" for a
// method that names nothing; required says whether protocol 2026-07-28 requires the
// field for it.
func nameMember(method string) (member string, required bool) {
	switch method {
	case "tools/call", "prompts/get":
		return "name", true
	case "resources/read":
		return "uri", true
	case "resources/subscribe", "resources/unsubscribe":
		return "uri", false
	}
	return "", false
}

// mcpParams is what CheckMCPHeaders reads of params: the name members and the protocol
// version in _meta.
type mcpParams struct {
	Name *string `json:"name"`
	URI  *string `json:"uri"`
	Meta *struct {
		ProtocolVersion json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
	} `json:"_meta"`
}

// CheckMCPHeaders checks the MCP fields of a request (fields h, body body) against what
// its body says, as MCP 2026-07-28 requires of a server (SEP-2243, SEP-2575), so that
// what an intermediary decided by the fields is what the application reads in the body:
//
//   - Mcp-Method, when present, is the body's JSON-RPC method; Mcp-Name, when present,
//     is what the method names (params.name of tools/call and prompts/get, params.uri of
//     resources/read), compared after the =?base64?...?= form is decoded; an Mcp-Name
//     for a method that names nothing, or on a body that does not name it, is refused;
//   - under protocol 2026-07-28 or later (MCP-Protocol-Version, or the version in
//     params._meta), Mcp-Method is required on every request and notification, and
//     Mcp-Name on tools/call, prompts/get and resources/read whose body names one;
//   - the version in params._meta is the MCP-Protocol-Version field's, and a body whose
//     _meta names 2026-07-28 or later needs that field.
//
// Each field is read once: one sent twice is refused. A refusal is
// errcode.MCPHeaderMismatch (HTTP 400; WriteError answers it as MCP's HeaderMismatch).
// Fields on a body that is not one JSON-RPC request (empty, not JSON, a batch, a
// response) are refused too; a body whose envelope cannot be read unambiguously (a
// member named twice or in another case) is invalid_request, as for ReadOperation. A
// request without any MCP field (or with only an older MCP-Protocol-Version), whose
// body names no version, passes, and so does its body when it cannot be read: older
// protocol versions do not send the fields, and such a body is not MCP's to judge here.
func CheckMCPHeaders(h http.Header, body []byte) error {
	if len(body) > MaxOperationBody {
		return errcode.New(errcode.BodyTooLarge, "body over %d octets", MaxOperationBody)
	}
	method, hasMethod, err := oneField(h, MCPMethodHeader)
	if err != nil {
		return err
	}
	name, hasName, err := oneField(h, MCPNameHeader)
	if err != nil {
		return err
	}
	version, hasVersion, err := oneField(h, MCPProtocolVersionHeader)
	if err != nil {
		return err
	}
	// Without a field to hold to the body, only a body whose _meta names 2026-07-28 or
	// later has one to miss; a body no reader can take is the other readers' to refuse.
	fields := hasMethod || hasName || (hasVersion && ModernMCP(version))
	text := bytes.TrimLeft(body, " \t\r\n")
	if len(text) == 0 || text[0] != '{' {
		if hasMethod || hasName {
			return errcode.New(errcode.MCPHeaderMismatch, "%s or %s on a body that is not one JSON-RPC request", MCPMethodHeader, MCPNameHeader)
		}
		return nil
	}
	env, err := parseRequest(body)
	if err != nil && !fields {
		return nil
	}
	if err != nil {
		return errcode.New(errcode.InvalidRequest, "the JSON-RPC envelope cannot be read unambiguously: %s", errcode.Cut(err.Error()))
	}
	if env.Method == "" {
		if hasMethod || hasName {
			return errcode.New(errcode.MCPHeaderMismatch, "%s or %s on a body that is not a JSON-RPC request (no method)", MCPMethodHeader, MCPNameHeader)
		}
		return nil
	}
	var p mcpParams
	if len(env.Params) > 0 && string(env.Params) != "null" {
		if err := netjson.DecodeObject(env.Params, &p); err != nil {
			if !fields {
				return nil
			}
			return errcode.New(errcode.InvalidRequest, "the %s params cannot be read unambiguously: %s", errcode.Cut(env.Method), errcode.Cut(err.Error()))
		}
	}
	// The version: the field's, which the body's _meta must repeat.
	if p.Meta != nil && len(p.Meta.ProtocolVersion) > 0 {
		var metaVersion string
		if err := json.Unmarshal(p.Meta.ProtocolVersion, &metaVersion); err != nil {
			return errcode.New(errcode.MCPHeaderMismatch, "params._meta %q is not a string", MCPMetaProtocolVersion)
		}
		switch {
		case !hasVersion && ModernMCP(metaVersion):
			return errcode.New(errcode.MCPHeaderMismatch, "params._meta names protocol %q and the request has no %s field", errcode.Cut(metaVersion), MCPProtocolVersionHeader)
		case hasVersion && version != metaVersion:
			return errcode.New(errcode.MCPHeaderMismatch, "%s %q is not the protocol %q that params._meta names", MCPProtocolVersionHeader, errcode.Cut(version), errcode.Cut(metaVersion))
		}
	}
	modern := hasVersion && ModernMCP(version)
	switch {
	case hasMethod && method != env.Method:
		return errcode.New(errcode.MCPHeaderMismatch, "%s %q is not the body's method %q", MCPMethodHeader, errcode.Cut(method), errcode.Cut(env.Method))
	case !hasMethod && modern:
		return errcode.New(errcode.MCPHeaderMismatch, "protocol %s requires the %s field", errcode.Cut(version), MCPMethodHeader)
	}
	member, required := nameMember(env.Method)
	var bodyName *string
	switch member {
	case "name":
		bodyName = p.Name
	case "uri":
		bodyName = p.URI
	}
	switch {
	case hasName && member == "":
		return errcode.New(errcode.MCPHeaderMismatch, "%s on %s, which names nothing", MCPNameHeader, errcode.Cut(env.Method))
	case hasName && bodyName == nil:
		return errcode.New(errcode.MCPHeaderMismatch, "%s on a %s body without params.%s", MCPNameHeader, errcode.Cut(env.Method), member)
	case hasName:
		decoded, ok := decodeMCPValue(name)
		if !ok || decoded != *bodyName {
			return errcode.New(errcode.MCPHeaderMismatch, "%s %q is not the body's params.%s %q", MCPNameHeader, errcode.Cut(name), member, errcode.Cut(*bodyName))
		}
	case modern && required && bodyName != nil:
		return errcode.New(errcode.MCPHeaderMismatch, "protocol %s requires the %s field on %s", errcode.Cut(version), MCPNameHeader, errcode.Cut(env.Method))
	}
	return nil
}

// oneField is the one value of field name in h; a field sent twice is refused.
func oneField(h http.Header, name string) (string, bool, error) {
	vs := h.Values(name)
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	}
	return "", false, errcode.New(errcode.MCPHeaderMismatch, "more than one %s field", name)
}

// The form SEP-2243 gives a value that cannot ride as a plain field value (not ASCII,
// control characters, white space at an end, or this very form): =?base64?<standard
// base64 of the UTF-8 octets>?=.
const (
	mcpBase64Prefix = "=?base64?"
	mcpBase64Suffix = "?="
)

// decodeMCPValue is the value a field of SEP-2243's encoding carries; ok is false for
// the base64 form with text that is not standard base64.
func decodeMCPValue(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, mcpBase64Prefix)
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, mcpBase64Suffix)
	if !ok {
		return v, true
	}
	b, err := base64.StdEncoding.Strict().DecodeString(inner)
	if err != nil {
		return "", false
	}
	return string(b), true
}
