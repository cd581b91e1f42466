package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/hostproto"
)

// Issue 28: the TypeScript MCP SDK pinned here (@modelcontextprotocol/sdk 1.32.2, in
// js/package-lock.json) does not speak MCP 2026-07-28: its newest version is 2025-11-25,
// it opens a session with initialize, and it sends neither Mcp-Method nor Mcp-Name. So
// its agents reach a dialogtrust receiver or ingress in 2025-11-25, where the fields are
// not required (docs/interop.md, "MCP 2026-07-28"); the go-sdk tests of adapters/mcp
// show 2026-07-28. This test is named so that it fails, by name, the day an upgrade of
// the pin brings 2026-07-28: then the TypeScript peers get the 2026-07-28 tests that
// adapters/mcp has for go-sdk, and the docs change.
func TestMCP20260728_TypeScriptSDK1322StopsAt20251125(t *testing.T) {
	node := jsSDKs(t)
	var (
		mu       sync.Mutex
		requests []http.Header
		methods  []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(b, &msg)
		mu.Lock()
		requests, methods = append(requests, r.Header.Clone()), append(methods, r.Method+" "+msg.Method)
		mu.Unlock()
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case len(msg.ID) == 0:
			w.WriteHeader(http.StatusAccepted)
		default:
			result := `{"content":[{"type":"text","text":"ok"}]}`
			if msg.Method == "initialize" {
				result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"probe","version":"1"}}`
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":`+result+`}`)
		}
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "mcp-versions.mjs", srv.URL+"/mcp")
	cmd.Dir = jsDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node mcp-versions.mjs: %v\n%s", err, stderr.String())
	}
	var v struct {
		Latest    string
		Supported []string
		Version   string
	}
	line, _, _ := bufio.NewReader(bytes.NewReader(out)).ReadLine()
	if err := json.Unmarshal(line, &v); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if v.Version != "1.32.2" {
		t.Fatalf("@modelcontextprotocol/sdk %s is installed, the test is about the pinned 1.32.2: run `npm ci` in interop/js", v.Version)
	}
	if slices.ContainsFunc(v.Supported, hostproto.ModernMCP) || v.Latest != "2025-11-25" {
		t.Fatalf("@modelcontextprotocol/sdk %s speaks %v (latest %s): it now knows %s; give its peers the 2026-07-28 tests and update docs/interop.md", v.Version, v.Supported, v.Latest, hostproto.MCPStatelessVersion)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(methods) == 0 || methods[0] != "POST initialize" || !slices.Contains(methods, "POST tools/call") {
		t.Fatalf("the client sent %v, want a session opened with initialize, then tools/call", methods)
	}
	for i, h := range requests {
		if h.Get(hostproto.MCPMethodHeader) != "" || h.Get(hostproto.MCPNameHeader) != "" || hostproto.ModernMCP(h.Get(hostproto.MCPProtocolVersionHeader)) {
			t.Fatalf("request %d (%s) carries 2026-07-28 fields: %v", i, methods[i], h)
		}
	}
}
