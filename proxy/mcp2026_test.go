package proxy_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/hostproto"
)

// call2026 is a tools/call of MCP 2026-07-28 (no session: the version in _meta, W3C
// Trace Context beside it) naming tool, and its fields with Mcp-Name name.
func call2026(tool, name string) (string, http.Header) {
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}}}`
	h := start()
	h.Set(hostproto.MCPProtocolVersionHeader, hostproto.MCPStatelessVersion)
	h.Set(hostproto.MCPMethodHeader, "tools/call")
	h.Set(hostproto.MCPNameHeader, name)
	return body, h
}

// Issue 28, MCP 2026-07-28 through the two proxies: a request without a session passes
// with its body (and the trace context in _meta) unchanged; the egress's signature
// covers Mcp-Method and Mcp-Name, and the application gets them as sent.
func TestMCP20260728_ThroughTheProxies(t *testing.T) {
	p := newPair(t, pairOptions{})
	body, h := call2026("book_hotel", "book_hotel")
	res, got := p.call(t, "/t1", body, h)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, got)
	}
	p.mu.Lock()
	si := p.sent.Header.Get("Signature-Input")
	p.mu.Unlock()
	if !strings.Contains(si, `"mcp-method" "mcp-name"`) {
		t.Fatalf("the egress's signature does not cover the MCP fields: %s", si)
	}
	r := p.app.last()
	if r.Header.Get(hostproto.MCPMethodHeader) != "tools/call" || r.Header.Get(hostproto.MCPNameHeader) != "book_hotel" || p.app.body[0] != body {
		t.Fatalf("the application got %v: %s", r.Header, p.app.body[0])
	}
}

// Issue 28, MCP 2026-07-28 "Standard headers" at the ingress: an agent whose Mcp-Name is
// not the tool its body calls (signed as sent by its egress) is refused with
// mcp_header_mismatch, HTTP 400, and the application never sees it: a gateway or
// policy that decides by the field cannot be told one tool and run another.
func TestMCP20260728_IngressRefusesMcpNameNotTheBodys(t *testing.T) {
	p := newPair(t, pairOptions{unsignedOK: true})
	body, h := call2026("delete_all", "search")
	res, got := p.call(t, "/t1", body, h)
	if code, ans := p.ingressCode(); code != errcode.MCPHeaderMismatch || p.answer != http.StatusBadRequest {
		t.Fatalf("the ingress answered %d %s %s (the agent got %d %s)", p.answer, code, ans, res.StatusCode, got)
	}
	if p.app.hits() != 0 {
		t.Fatal("the application got a request whose Mcp-Name is not its tool")
	}
}

// Issue 28: an Mcp-Name changed between the proxies, after the egress signed it, breaks
// the signature (invalid_signature) and never reaches the application.
func TestMCP20260728_McpNameChangedBetweenTheProxiesRefused(t *testing.T) {
	p := newPair(t, pairOptions{unsignedOK: true})
	p.tamper = func(r *http.Request) { r.Header.Set(hostproto.MCPNameHeader, "delete_all") }
	body, h := call2026("book_hotel", "book_hotel")
	p.call(t, "/t1", body, h)
	if code, ans := p.ingressCode(); code != errcode.InvalidSignature {
		t.Fatalf("the ingress answered %s %s", code, ans)
	}
	if p.app.hits() != 0 {
		t.Fatal("the application got a request whose Mcp-Name was changed")
	}
}
