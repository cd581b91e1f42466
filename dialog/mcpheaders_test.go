package dialog_test

import (
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
)

// mcpTool puts A2 behind a stateless receiver without handoffs or an authorizer (a tool
// that reads no body of its own), counting the requests that reach the handler.
func (f *figure3) mcpTool(t *testing.T, more ...dialog.ReceiverOption) *atomic.Int32 {
	t.Helper()
	var calls atomic.Int32
	rc := f.receiver(t, f.a2Srv.URL+"/mcp", f.a2, false, more...)
	f.a2Srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	return &calls
}

// mcp2026 is a tools/call of protocol 2026-07-28 naming tool in its body, with the MCP
// fields of kv (name, value ...).
func mcp2026(t *testing.T, url, tool string, kv ...string) *http.Request {
	req := rpc(t, url, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tool+`","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}}}`)
	req.Header.Set(hostproto.MCPProtocolVersionHeader, "2026-07-28")
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	return req
}

// MCP 2026-07-28, "Standard headers" (SEP-2243): a receiver refuses a request whose
// Mcp-Name or Mcp-Method is not what its body says, or that lacks one the version
// requires, even when the sender signed the fields as sent (a client lying to the
// intermediaries that decide by them): mcp_header_mismatch, as MCP's HeaderMismatch
// (-32020) on HTTP 400, and the handler never runs. Agreeing fields pass, without a
// session or initialize, and the body reaches the handler whole.
func TestMCP20260728StandardHeaders_ReceiverHoldsThemToTheBody(t *testing.T) {
	f := newFigure3(t)
	calls := f.mcpTool(t)
	url := f.a2Srv.URL + "/mcp"
	a1 := f.agentLax(f.a1, nil, proof.HTTPSig)
	for _, c := range []struct {
		name string
		req  *http.Request
	}{
		{"Mcp-Name is another tool", mcp2026(t, url, "delete_all", hostproto.MCPMethodHeader, "tools/call", hostproto.MCPNameHeader, "search")},
		{"Mcp-Method is another method", mcp2026(t, url, "search", hostproto.MCPMethodHeader, "tools/list", hostproto.MCPNameHeader, "search")},
		{"no Mcp-Method", mcp2026(t, url, "search", hostproto.MCPNameHeader, "search")},
		{"no Mcp-Name", mcp2026(t, url, "search", hostproto.MCPMethodHeader, "tools/call")},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := inDialog(t, a1, c.req, "D1")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			var r struct {
				ID    int
				Error struct {
					Code int
					Data struct{ Code errcode.Code }
				}
			}
			if res.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &r) != nil || r.ID != 7 ||
				r.Error.Code != hostproto.JSONRPCHeaderMismatch || r.Error.Data.Code != errcode.MCPHeaderMismatch {
				t.Fatalf("HTTP %d %s", res.StatusCode, b)
			}
		})
	}
	if calls.Load() != 0 {
		t.Fatal("a request whose MCP fields disagree with its body reached the handler")
	}
	res, err := inDialog(t, a1, mcp2026(t, url, "search", hostproto.MCPMethodHeader, "tools/call", hostproto.MCPNameHeader, "search"), "D1")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("agreeing fields: %v %v", err, res)
	}
	res.Body.Close()
	if calls.Load() != 1 {
		t.Fatal("agreeing fields did not reach the handler")
	}
}

// MCP 2026-07-28: a notification (no id to answer) whose Mcp-Method is not its method
// gets the problem document, HTTP 400, mcp_header_mismatch.
func TestMCP20260728StandardHeaders_NotificationRefusedAsProblem(t *testing.T) {
	f := newFigure3(t)
	calls := f.mcpTool(t)
	req := rpc(t, f.a2Srv.URL+"/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	req.Header.Set(hostproto.MCPProtocolVersionHeader, "2026-07-28")
	req.Header.Set(hostproto.MCPMethodHeader, "notifications/progress")
	res, err := inDialog(t, f.agentLax(f.a1, nil, proof.HTTPSig), req, "D1")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusBadRequest || errcode.CodeOf(problem.Read(res.StatusCode, b)) != errcode.MCPHeaderMismatch {
		t.Fatalf("HTTP %d %s", res.StatusCode, b)
	}
	if calls.Load() != 0 {
		t.Fatal("the notification reached the handler")
	}
}
