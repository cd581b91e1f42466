package dialoga2a_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	dialoga2a "github.com/dialogtrust/dialogtrust/adapters/a2a"
	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/internal/adaptertest"
	"github.com/dialogtrust/dialogtrust/wit"
)

// world is the adapters' one trust domain (adaptertest.World), the hotel being the
// delegate agent reading handoffs in A2A 0.3 messages, with the A2A client of the
// planner.
type world struct{ *adaptertest.World }

func newWorld(tb testing.TB) *world {
	return &world{adaptertest.NewWorld(tb, "/agent/hotel", hostproto.A2A03)}
}

// client connects the planner to the hotel's A2A server in dialog dc, over a2a-go's
// JSON-RPC client.
func (w *world) client(tb testing.TB, url string, dc *dialog.Context, rec *adaptertest.Recorder) *a2aclient.Client {
	return w.clientAs(tb, w.Planner.Source, w.Tokens, url, dc, rec)
}

// clientAs connects the workload src to the hotel's A2A server in dialog dc.
func (w *world) clientAs(tb testing.TB, src wit.Source, tokens agent.TxnTokenSource, url string, dc *dialog.Context, rec *adaptertest.Recorder) *a2aclient.Client {
	tb.Helper()
	opts, err := dialoga2a.ClientOptions(w.ClientAs(src, tokens, dc, rec))
	adaptertest.MustOK(tb, err)
	c, err := a2aclient.NewFromEndpoints(context.Background(), []a2a.AgentInterface{{URL: url, Transport: a2a.TransportProtocolJSONRPC}}, opts...)
	adaptertest.MustOK(tb, err)
	tb.Cleanup(func() { c.Destroy() })
	return c
}

// jsonOf is the JSON of v, for messages.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return strings.TrimSpace(string(b))
}
