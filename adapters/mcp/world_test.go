package dialogmcp_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dialogmcp "github.com/dialogtrust/dialogtrust/adapters/mcp"
	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/internal/adaptertest"
	"github.com/dialogtrust/dialogtrust/wit"
)

// world is the adapters' one trust domain (adaptertest.World), the hotel being the
// tool's workload reading handoffs in MCP requests, with the MCP client of the planner.
type world struct{ *adaptertest.World }

func newWorld(tb testing.TB) *world {
	return &world{adaptertest.NewWorld(tb, "/tool/hotel", hostproto.MCP)}
}

// session connects the planner to the hotel's MCP server in dialog dc.
func (w *world) session(tb testing.TB, url string, dc *dialog.Context, rec *adaptertest.Recorder) (*mcp.ClientSession, error) {
	return w.sessionAs(tb, w.Planner.Source, w.Tokens, url, dc, rec)
}

// sessionAs connects the workload src to the hotel's MCP server in dialog dc.
func (w *world) sessionAs(tb testing.TB, src wit.Source, tokens agent.TxnTokenSource, url string, dc *dialog.Context, rec *adaptertest.Recorder) (*mcp.ClientSession, error) {
	tb.Helper()
	hc, err := dialogmcp.NewHTTPClient(w.ClientAs(src, tokens, dc, rec))
	adaptertest.MustOK(tb, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err == nil {
		tb.Cleanup(func() { cs.Close() })
	}
	return cs, err
}
