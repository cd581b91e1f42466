package hostproto

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

const modernCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book_hotel","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`

func mcpFields(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// MCP 2026-07-28, Streamable HTTP "Standard headers" (SEP-2243): a server rejects a
// request whose Mcp-Method or Mcp-Name is not what the body says, and one without them
// where the version requires them; the body's _meta version is the field's (SEP-2575).
// Each case is one way an intermediary's reading of the fields could differ from the
// application's reading of the body.
func TestMCP20260728StandardHeaders_CheckedAgainstTheBody(t *testing.T) {
	v := MCPProtocolVersionHeader
	for _, c := range []struct {
		name string
		h    http.Header
		body string
		want errcode.Code // "" passes
	}{
		{"all agree", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPNameHeader, "book_hotel"), modernCall, ""},
		{"Mcp-Name in the base64 form", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPNameHeader, "=?base64?Ym9va19ob3RlbA==?="), modernCall, ""},
		{"Mcp-Name not the tool", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPNameHeader, "read_mail"), modernCall, errcode.MCPHeaderMismatch},
		{"Mcp-Name base64 of another tool", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPNameHeader, "=?base64?cmVhZF9tYWls?="), modernCall, errcode.MCPHeaderMismatch},
		{"Mcp-Name base64 not decodable", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPNameHeader, "=?base64?!!?="), modernCall, errcode.MCPHeaderMismatch},
		{"Mcp-Name in another case", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPNameHeader, "Book_Hotel"), modernCall, errcode.MCPHeaderMismatch},
		{"Mcp-Method not the method", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/list", MCPNameHeader, "book_hotel"), modernCall, errcode.MCPHeaderMismatch},
		{"Mcp-Method missing under 2026-07-28", mcpFields(v, "2026-07-28", MCPNameHeader, "book_hotel"), modernCall, errcode.MCPHeaderMismatch},
		{"Mcp-Name missing under 2026-07-28", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call"), modernCall, errcode.MCPHeaderMismatch},
		{"Mcp-Method twice", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPMethodHeader, "tools/call", MCPNameHeader, "book_hotel"), modernCall, errcode.MCPHeaderMismatch},
		{"Mcp-Name twice", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPNameHeader, "book_hotel", MCPNameHeader, "read_mail"), modernCall, errcode.MCPHeaderMismatch},
		{"_meta version without the field", mcpFields(MCPMethodHeader, "tools/call", MCPNameHeader, "book_hotel"), modernCall, errcode.MCPHeaderMismatch},
		{"field version not the _meta version", mcpFields(v, "2025-11-25", MCPMethodHeader, "tools/call", MCPNameHeader, "book_hotel"), modernCall, errcode.MCPHeaderMismatch},
		{"_meta version not a string", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPNameHeader, "x"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":20260728}}}`, errcode.MCPHeaderMismatch},
		{"2025-11-25 without the fields", mcpFields(v, "2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, ""},
		{"2025-11-25 with agreeing fields", mcpFields(v, "2025-11-25", MCPMethodHeader, "tools/call", MCPNameHeader, "x"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, ""},
		{"2025-11-25 with a disagreeing Mcp-Name", mcpFields(v, "2025-11-25", MCPMethodHeader, "tools/call", MCPNameHeader, "y"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, errcode.MCPHeaderMismatch},
		{"resources/read names its uri", mcpFields(v, "2026-07-28", MCPMethodHeader, "resources/read", MCPNameHeader, "file:///a"), `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, ""},
		{"resources/read another uri", mcpFields(v, "2026-07-28", MCPMethodHeader, "resources/read", MCPNameHeader, "file:///b"), `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, errcode.MCPHeaderMismatch},
		{"Mcp-Name on a method that names nothing", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/list", MCPNameHeader, "book_hotel"), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, errcode.MCPHeaderMismatch},
		{"Mcp-Name on a body without the name", mcpFields(v, "2026-07-28", MCPMethodHeader, "tools/call", MCPNameHeader, "book_hotel"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, errcode.MCPHeaderMismatch},
		{"a notification under 2026-07-28", mcpFields(v, "2026-07-28", MCPMethodHeader, "notifications/cancelled"), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, ""},
		{"a notification without Mcp-Method under 2026-07-28", mcpFields(v, "2026-07-28"), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, errcode.MCPHeaderMismatch},
		{"Mcp-Method on a batch", mcpFields(MCPMethodHeader, "tools/call"), `[` + modernCall + `]`, errcode.MCPHeaderMismatch},
		{"Mcp-Method on an empty body", mcpFields(MCPMethodHeader, "tools/call"), ``, errcode.MCPHeaderMismatch},
		{"Mcp-Method on a response", mcpFields(MCPMethodHeader, "tools/call"), `{"jsonrpc":"2.0","id":1,"result":{}}`, errcode.MCPHeaderMismatch},
		{"a method named twice", mcpFields(MCPMethodHeader, "tools/list"), `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}`, errcode.InvalidRequest},
		{"a tool named twice", mcpFields(MCPMethodHeader, "tools/call", MCPNameHeader, "a"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, errcode.InvalidRequest},
		{"a tool named in another case", mcpFields(MCPMethodHeader, "tools/call", MCPNameHeader, "a"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b"}}`, errcode.InvalidRequest},
		{"no MCP field, no version", http.Header{}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, ""},
		{"no MCP field, not JSON", http.Header{}, `a=b`, ""},
		{"no MCP field, a member named twice", http.Header{}, `{"a":1,"a":2}`, ""},
		{"an older version only, a member named twice", mcpFields(v, "2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckMCPHeaders(c.h, []byte(c.body))
			if got := errcode.CodeOf(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// MCP 2026-07-28: the check runs on a request whose fields carry Mcp-Method or
// Mcp-Name, or a version that requires them; a request of an older version without
// them has nothing to check without its body.
func TestMCP20260728StandardHeaders_WhenTheyApply(t *testing.T) {
	for _, c := range []struct {
		h    http.Header
		want bool
	}{
		{mcpFields(MCPMethodHeader, "tools/list"), true},
		{mcpFields(MCPNameHeader, "x"), true},
		{mcpFields(MCPProtocolVersionHeader, "2026-07-28"), true},
		{mcpFields(MCPProtocolVersionHeader, "2027-01-01"), true},
		{mcpFields(MCPProtocolVersionHeader, "2025-11-25"), false},
		{http.Header{}, false},
	} {
		if got := MCPHeadersApply(c.h); got != c.want {
			t.Errorf("%v: %v, want %v", c.h, got, c.want)
		}
	}
}

// MCP 2026-07-28: HeaderMismatch is JSON-RPC error -32020 on HTTP 400; WriteError sends
// mcp_header_mismatch so, with the stable code in its data, and every other refusal as
// before (on 200).
func TestMCP20260728HeaderMismatch_AnsweredAs32020On400(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, json.RawMessage(`7`), errcode.New(errcode.MCPHeaderMismatch, "Mcp-Name differs"))
	var got struct {
		ID    int
		Error struct {
			Code int
			Data struct{ Code string }
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusBadRequest || got.ID != 7 || got.Error.Code != JSONRPCHeaderMismatch || got.Error.Data.Code != string(errcode.MCPHeaderMismatch) {
		t.Fatalf("HTTP %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	WriteError(rec, json.RawMessage(`7`), errcode.New(errcode.HandoffUnplaced, "x"))
	if rec.Code != http.StatusOK {
		t.Fatalf("another refusal: HTTP %d", rec.Code)
	}
}

// Fuzzed: CheckMCPHeaders never accepts fields that disagree with the body as go-sdk
// reads it: when it passes with Mcp-Method and Mcp-Name set, the method ReadOperation
// reads is Mcp-Method and, for tools/call, the tool is Mcp-Name.
func FuzzMCP20260728StandardHeaders(f *testing.F) {
	f.Add([]byte(modernCall), "tools/call", "book_hotel", "2026-07-28")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b"}}`), "tools/call", "a", "")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"=?base64?YQ==?="}}`), "tools/call", "=?base64?PT9iYXNlNjQ/WVE9PT89?=", "")
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`), "notifications/cancelled", "", "2026-07-28")
	f.Fuzz(func(t *testing.T, body []byte, method, name, version string) {
		h := http.Header{}
		if method != "" {
			h.Set(MCPMethodHeader, method)
		}
		if name != "" {
			h.Set(MCPNameHeader, name)
		}
		if version != "" {
			h.Set(MCPProtocolVersionHeader, version)
		}
		if CheckMCPHeaders(h, body) != nil {
			return
		}
		op, err := ReadOperation(body)
		if err != nil {
			return // refused by the authorization step's reader
		}
		if method != "" && op.Method != method {
			t.Fatalf("passed Mcp-Method %q for the body's method %q", method, op.Method)
		}
		if name != "" && op.Method == "tools/call" {
			decoded, _ := decodeMCPValue(name)
			if decoded != op.Name {
				t.Fatalf("passed Mcp-Name %q for the tool %q", name, op.Name)
			}
		}
		if ModernMCP(version) && op.Method != "" && method == "" {
			t.Fatalf("passed a %s request without Mcp-Method", version)
		}
	})
}
