package dialogmcp_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dialogmcp "github.com/dialogtrust/dialogtrust/adapters/mcp"
	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/adaptertest"
)

// Issue 25 (receiver conditions) over the real go-sdk, client and server: the hotel's
// dialog.Receiver has a tool allow-list (authz.Rules): the session's own requests, and
// book_hotel for the planner. The allowed tool runs; cancel_booking, served by the same
// server, never does (each tool counts its runs), and go-sdk's client raises the
// refusal as the call's JSON-RPC error carrying not_authorized, with no HTTP error
// status. A receiver whose rules do not allow initialize refuses the session itself:
// go-sdk's Connect fails with not_authorized, and no tool runs.
func TestIssue25_MCPToolAllowList(t *testing.T) {
	w := newWorld(t)
	rules, err := authz.NewRules([]authz.Rule{
		{Name: "mcp-session", Allow: `method != "POST" || (protocol == "mcp" && operation in ["initialize", "notifications/initialized", "tools/list"])`},
		{Name: "planner-books", Allow: `sender == "` + w.Planner.ID.String() + `" && operation == "tools/call" && name == "book_hotel"`},
	})
	adaptertest.MustOK(t, err)
	var booked, canceled atomic.Int32
	server := mcp.NewServer(&mcp.Implementation{Name: "hotel", Version: "v1"}, nil)
	tool := func(name string, n *atomic.Int32) {
		server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			dialogmcp.Tool(w.HandoffReceiver, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				n.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
			}))
	}
	tool("book_hotel", &booked)
	tool("cancel_booking", &canceled)
	serve := func(d authz.Decider) string {
		return adaptertest.Serve(t, &adaptertest.Seen{}, "/mcp", func(url string) http.Handler {
			return dialogmcp.Handler(w.Receiver(t, url, dialog.WithAuthorizer(d)), func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: true})
		})
	}
	url := serve(rules)
	dc := adaptertest.NewDialog(t, w.Planner.ID)
	rec := &adaptertest.Recorder{}
	cs, err := w.session(t, url, dc, rec)
	adaptertest.MustOK(t, err)
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "book_hotel", Arguments: map[string]any{"city": "Lisbon"}})
	adaptertest.MustOK(t, err)
	if res.IsError || booked.Load() != 1 {
		t.Fatalf("the allowed tool: %+v, runs %d", res.Content, booked.Load())
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "cancel_booking", Arguments: map[string]any{}})
	wantSDKRefusal(t, err, rec, errcode.NotAuthorized)
	if n := canceled.Load(); n != 0 {
		t.Fatalf("the tool not on the list ran %d times", n)
	}
	if n := booked.Load(); n != 1 {
		t.Fatalf("book_hotel ran %d times, want once", n)
	}

	toolsOnly, err := authz.NewRules([]authz.Rule{{Name: "tools-only", Allow: `operation == "tools/call"`}})
	adaptertest.MustOK(t, err)
	rec = &adaptertest.Recorder{}
	_, err = w.session(t, serve(toolsOnly), adaptertest.NewDialog(t, w.Planner.ID), rec)
	wantSDKRefusal(t, err, rec, errcode.NotAuthorized)
	if booked.Load() != 1 || canceled.Load() != 0 {
		t.Fatal("a tool ran without a session")
	}
}
