package interop

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// The proxies pass a response through as it comes when nothing must be computed over
// its whole body (docs/proxy.md, "Streamed responses"), shown here with the official
// SDKs on both ends, as TestProxyJSSDKs runs them: a TypeScript MCP SDK client calls a
// long tool of a TypeScript MCP SDK server (McpServer, stateful, answering in
// text/event-stream), and an A2A JS SDK client sends a SendStreamingMessage to an A2A
// JS SDK server, each through the planner's egress and the hotel's ingress. The work
// on the server waits for a gate that only the test opens, and the test opens it only
// once the client has reported the first events: so they crossed both proxies before
// the work ended. The ingress signs responses (sign_responses), with stream_unsigned,
// as a signing deployment runs; the routes make no handoff offer and require no signed
// response, with an HTTP signature or a WPT.

// jsStreamRoute is an egress route that makes no handoff offers and requires no signed
// response: nothing needs its responses whole.
type jsStreamRoute struct{ prefix, upstream, proof string }

func (r jsStreamRoute) routeYAML() string {
	return fmt.Sprintf("{prefix: %s, upstream: %s, audience: dev.local, scope: trip.book, recipient: %q, proof: %s}",
		r.prefix, r.upstream, jsHotelAudience, r.proof)
}

// jsReport is a line "KIND JSON" a node program printed with lib.mjs report: the n-th
// of its kind and the seq-th of all, at a time in milliseconds since the epoch. Raw is
// the whole JSON.
type jsReport struct {
	N   int             `json:"n"`
	Seq int             `json:"seq"`
	At  int64           `json:"at"`
	Raw json.RawMessage `json:"-"`
}

// waitReport waits for p's n-th report line of kind.
func waitReport(t *testing.T, p *proc.Program, kind string, n int) jsReport {
	t.Helper()
	prefix := fmt.Sprintf(`%s {"n":%d,`, kind, n)
	raw := prefix[len(kind)+1:] + p.WaitLine(t, prefix, time.Minute)
	var r jsReport
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("%s: report %s: %v", p.Name, raw, err)
	}
	r.Raw = json.RawMessage(raw)
	return r
}

// printed reports whether p printed a stdout line starting with prefix so far.
func printed(p *proc.Program, prefix string) bool {
	for _, l := range strings.Split(p.Output(), "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// postControl sends a POST to a node server's control path (/release/GATE, /notify)
// directly, not through the proxies, and returns when it has been done.
func postControl(t *testing.T, base, path string) {
	t.Helper()
	res, err := http.Post(base+path, "text/plain", nil)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("POST %s: %s", path, res.Status)
	}
}

// checkBefore: the report came before the test opened the gate at released
// (milliseconds since the epoch), and after it came the report after.
func checkBefore(t *testing.T, what string, before jsReport, released int64, after jsReport) {
	t.Helper()
	if before.At > released || after.At < released || before.Seq >= after.Seq {
		t.Errorf("%s: reported at %d (#%d), the gate opened at %d, the end reported at %d (#%d)", what, before.At, before.Seq, released, after.At, after.Seq)
	}
}

func TestProxyJSSDKStreams(t *testing.T) {
	node := jsSDKs(t)
	d := startJSDomain(t)

	mcpApp, mcpURL := startJSApp(t, node, "MCP streaming tool server", "proxy-mcp-stream-server.mjs")
	a2aApp, a2aURL := startJSApp(t, node, "A2A streaming server", "proxy-a2a-stream-server.mjs")
	mcpBase, a2aBase := strings.TrimSuffix(mcpURL, "/mcp"), strings.TrimSuffix(a2aURL, "/a2a")

	// The hotel's ingresses sign responses, and pass an event stream nobody asked to
	// have signed as it comes.
	const streamUnsigned = "  stream_unsigned: true\n"
	mcpIn := d.startProxy(t, "hotel MCP ingress", d.ingressYAML(mcpBase, "mcp")+streamUnsigned)
	a2aIn := d.startProxy(t, "hotel A2A ingress", d.ingressYAML(a2aBase, "a2a10")+streamUnsigned)
	proofs := []string{"httpsig", "wpt"}
	var routes []egressRoute
	for _, pr := range proofs {
		routes = append(routes,
			jsStreamRoute{"/mcp-" + pr, mcpIn["ingress"] + "/mcp", pr},
			jsStreamRoute{"/a2a-" + pr, a2aIn["ingress"] + "/a2a", pr})
	}
	// A route that makes handoff offers, for the one case read whole.
	routes = append(routes, jsRoute{"/mcp-handoff", mcpIn["ingress"] + "/mcp", jsHotelID, "mcp"})
	eg := d.startProxy(t, "planner egress", d.egressYAML(routes...))

	for _, pr := range proofs {
		// The SDK's client calls the tool with a progress callback; the tool sends a
		// progress notification and a logging message in the call's event stream, then
		// waits. Both reach the client before the test opens the gate, and so before
		// the tool's result exists. Then a logging message the server sends with no
		// request in flight reaches the client in the session's GET stream, which the
		// SDK's client opened after initialization.
		t.Run("mcp "+pr, func(t *testing.T) {
			gate := "mcp-" + pr
			cli := proc.StartProcess(t, "MCP streaming client ("+pr+")", node, jsDir, []string{"proxy-mcp-stream-client.mjs", eg["egress"] + "/mcp-" + pr, gate}, nil)
			mcpApp.WaitLine(t, "waiting "+gate, time.Minute)
			progress := waitReport(t, cli, "progress", 1)
			logged := waitReport(t, cli, "log", 1)
			if printed(cli, "result ") || printed(mcpApp, "released "+gate) {
				t.Fatalf("the call ended before the gate opened:\n%s", cli.Output())
			}
			var p struct {
				Progress float64 `json:"progress"`
				Message  string  `json:"message"`
			}
			var l struct {
				Data string `json:"data"`
			}
			if json.Unmarshal(progress.Raw, &p) != nil || p.Progress != 1 || p.Message != "searching" {
				t.Errorf("progress %s", progress.Raw)
			}
			if json.Unmarshal(logged.Raw, &l) != nil || l.Data != "searching "+gate {
				t.Errorf("log %s", logged.Raw)
			}

			released := time.Now().UnixMilli()
			postControl(t, mcpBase, "/release/"+gate)
			result := waitReport(t, cli, "result", 1)
			checkBefore(t, "the progress notification", progress, released, result)
			checkBefore(t, "the logging message", logged, released, result)
			var r struct {
				Result struct {
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
					IsError           bool `json:"isError"`
					StructuredContent struct {
						Sender string `json:"sender"`
						Proof  string `json:"proof"`
					} `json:"structuredContent"`
				} `json:"result"`
				ContentType string `json:"contentType"`
				DialogCtx   string `json:"dialogContext"`
			}
			if err := json.Unmarshal(result.Raw, &r); err != nil {
				t.Fatal(err)
			}
			if r.Result.IsError || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "booked "+gate {
				t.Errorf("tool result %s", result.Raw)
			}
			if s := r.Result.StructuredContent; s.Sender != jsPlannerID || s.Proof != pr {
				t.Errorf("the tool saw sender %q with proof %q, want %q with %s", s.Sender, s.Proof, jsPlannerID, pr)
			}
			if !strings.HasPrefix(r.ContentType, "text/event-stream") {
				t.Errorf("the tools/call came back as %q, want an event stream", r.ContentType)
			}
			dlgOf(t, r.DialogCtx)

			get := waitReport(t, cli, "get-open", 1)
			var g struct {
				Status      int    `json:"status"`
				ContentType string `json:"contentType"`
			}
			if json.Unmarshal(get.Raw, &g) != nil || g.Status != http.StatusOK || !strings.HasPrefix(g.ContentType, "text/event-stream") {
				t.Fatalf("the SDK's GET stream: %s", get.Raw)
			}
			postControl(t, mcpBase, "/notify")
			waitReport(t, cli, "standalone", 1)
			waitReport(t, cli, "done", 1)
		})

		// The SDK's client reads the events of a SendStreamingMessage as they come: the
		// Task and the working status update arrive while the executor waits for the
		// gate, the completed status update after the test opened it.
		t.Run("a2a "+pr, func(t *testing.T) {
			gate := "a2a-" + pr
			cli := proc.StartProcess(t, "A2A streaming client ("+pr+")", node, jsDir, []string{"proxy-a2a-stream-client.mjs", eg["egress"] + "/a2a-" + pr, gate}, nil)
			a2aApp.WaitLine(t, "waiting "+gate, time.Minute)
			type event struct {
				Kind     string   `json:"kind"`
				State    int      `json:"state"`
				Text     []string `json:"text"`
				Metadata struct {
					Sender string `json:"sender"`
					Proof  string `json:"proof"`
				} `json:"metadata"`
			}
			eventOf := func(r jsReport) event {
				var e event
				if err := json.Unmarshal(r.Raw, &e); err != nil {
					t.Fatalf("event %s: %v", r.Raw, err)
				}
				return e
			}
			// The SDK's TaskState enum: SUBMITTED 1, WORKING 2, COMPLETED 3.
			if e := eventOf(waitReport(t, cli, "event", 1)); e.Kind != "task" || e.State != 1 {
				t.Errorf("first event %+v, want the submitted Task", e)
			}
			working := waitReport(t, cli, "event", 2)
			if printed(cli, `event {"n":3,`) || printed(cli, "done ") || printed(a2aApp, "released "+gate) {
				t.Fatalf("the stream went on before the gate opened:\n%s", cli.Output())
			}
			if e := eventOf(working); e.Kind != "statusUpdate" || e.State != 2 || e.Metadata.Sender != jsPlannerID || e.Metadata.Proof != pr {
				t.Errorf("second event %+v, want the working status update, from %q with %s", e, jsPlannerID, pr)
			}

			released := time.Now().UnixMilli()
			postControl(t, a2aBase, "/release/"+gate)
			final := waitReport(t, cli, "event", 3)
			checkBefore(t, "the working status update", working, released, final)
			if e := eventOf(final); e.Kind != "statusUpdate" || e.State != 3 || len(e.Text) != 1 || e.Text[0] != "booked" {
				t.Errorf("third event %+v, want the completed status update", e)
			}
			done := waitReport(t, cli, "done", 1)
			var dn struct {
				ContentType string `json:"contentType"`
			}
			if json.Unmarshal(done.Raw, &dn) != nil || !strings.HasPrefix(dn.ContentType, "text/event-stream") {
				t.Errorf("the stream came as %s, want an event stream", done.Raw)
			}
			if printed(cli, `event {"n":4,`) {
				t.Errorf("more events than three:\n%s", cli.Output())
			}
		})
	}

	// The reply to a handoff offer is read whole by design: the ingress places the
	// hotel's signed status in the call's response event and the egress verifies it
	// from there. Through the same long tool, the notifications come only once the
	// gate has opened and the tool ended, still in the stream before the result, and
	// the SDK's client gets the result with the status in its _meta (the tool states
	// no outcome, so the status is accepted).
	t.Run("mcp handoff reply whole", func(t *testing.T) {
		gate := "mcp-handoff"
		cli := proc.StartProcess(t, "MCP streaming client (handoff)", node, jsDir, []string{"proxy-mcp-stream-client.mjs", eg["egress"] + "/mcp-handoff", gate}, []string{"DIALOGTRUST_HANDOFF=1"})
		mcpApp.WaitLine(t, "waiting "+gate, time.Minute)
		released := time.Now().UnixMilli()
		postControl(t, mcpBase, "/release/"+gate)
		progress := waitReport(t, cli, "progress", 1)
		logged := waitReport(t, cli, "log", 1)
		result := waitReport(t, cli, "result", 1)
		if progress.At < released || logged.At < released || progress.Seq > result.Seq || logged.Seq > result.Seq {
			t.Errorf("the gate opened at %d; progress at %d (#%d), log at %d (#%d), result at %d (#%d): want the notifications after the gate and before the result",
				released, progress.At, progress.Seq, logged.At, logged.Seq, result.At, result.Seq)
		}
		var r struct {
			Result struct {
				Meta map[string]any `json:"_meta"`
			} `json:"result"`
			ContentType string            `json:"contentType"`
			Fields      map[string]string `json:"fields"`
		}
		if err := json.Unmarshal(result.Raw, &r); err != nil {
			t.Fatal(err)
		}
		hop := field(r.Fields, proxy.HandoffHopField)
		if got := field(r.Fields, proxy.HandoffStatusField); got != string(handoff.StateAccepted) || hop == "" {
			t.Fatalf("the client got %s %q and hop %q, want accepted: %s", proxy.HandoffStatusField, got, hop, result.Raw)
		}
		if !strings.HasPrefix(r.ContentType, "text/event-stream") {
			t.Errorf("the tools/call came back as %q, want an event stream", r.ContentType)
		}
		d.checkStatus(t, r.Result.Meta[handoff.MCPMetaKey], hop, handoff.StateAccepted)
		waitReport(t, cli, "done", 1)
		if printed(cli, "retry ") {
			t.Logf("the fresh ingress rejected an earlier offer as a replay; the client asked again")
		}
	})
}
