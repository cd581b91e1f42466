package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// sseEvents splits an event stream into its blocks, each with its blank line.
func sseEvents(b []byte) []string {
	var out []string
	for _, ev := range strings.SplitAfter(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
		if ev != "" {
			out = append(out, ev)
		}
	}
	return out
}

// sseData is the data of one block (the data lines joined by LF).
func sseData(ev string) []byte {
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(ev, "\n\n"), "\n") {
		if v, ok := strings.CutPrefix(l, "data:"); ok {
			lines = append(lines, strings.TrimPrefix(v, " "))
		}
	}
	return []byte(strings.Join(lines, "\n"))
}

func sseApp(stream, status string) func(w http.ResponseWriter, r *http.Request, _ []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		if status != "" {
			w.Header().Set(proxy.HandoffStatusField, status)
		}
		_, _ = io.WriteString(w, strings.ReplaceAll(stream, "%s", r.Header.Get(proxy.VerifiedDialogField)))
	}
}

const (
	mcpProgress = "event: message\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
	mcpSSEReply = "event: message\nid: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"booked\"}]}}\n\n"
	a2a10Stream = `{"jsonrpc":"2.0","id":"r1","method":"SendStreamingMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-1","parts":[{"text":"book a room"}]}}}`
	a2a03Stream = `{"jsonrpc":"2.0","id":"r1","method":"message/stream","params":{"message":{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"book a room"}]}}}`
)

// Section 6 over the MCP Streamable HTTP transport's event stream (the TypeScript SDK's
// default): the ingress puts the signed status in the CallToolResult's event and the
// egress verifies it there; every other event, and that event's other lines, arrive as
// the application sent them.
func TestHandoffSection6MCPEventStream(t *testing.T) {
	stream := ": open\n\n" + mcpProgress + mcpSSEReply + ": bye\r\n\r\n"
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: sseApp(stream, "completed")})
	res, body := hp.send(t, toolsCall, nil)
	if res.StatusCode != 200 || res.Header.Get(proxy.HandoffStatusField) != "completed" || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v %s", res.StatusCode, res.Header, body)
	}
	got, want := sseEvents(body), sseEvents([]byte(stream))
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[3] != want[3] {
		t.Fatalf("the stream changed:\n%q\nwas\n%q", body, stream)
	}
	if !strings.HasPrefix(got[2], "event: message\nid: e2\ndata: ") || strings.Count(got[2], "\n") != 4 {
		t.Fatalf("the response event's other lines changed: %q", got[2])
	}
	msg := sseData(got[2])
	vs := hp.status(t, msg)
	if vs.State != handoff.StateCompleted || vs.Hop != res.Header.Get(proxy.HandoffHopField) || !strings.Contains(string(msg), `"booked"`) {
		t.Fatalf("status %+v in %s", vs.Status, msg)
	}
	if !bytes.Contains(body, []byte(": bye\r\n\r\n")) {
		t.Fatalf("the last comment's line ends changed: %q", body)
	}
}

// Section 4, Table 1 over A2A streams: without the application's field, the terminal
// status update (or Task) gives the status, which goes in its status message; the
// events before and after it pass unchanged. The application's field still wins.
func TestHandoffSection4A2AEventStream(t *testing.T) {
	const (
		task10    = `data: {"jsonrpc":"2.0","id":"r1","result":{"task":{"id":"t-1","contextId":"%s","status":{"state":"TASK_STATE_SUBMITTED"}}}}` + "\n\n"
		working10 = `data: {"jsonrpc":"2.0","id":"r1","result":{"statusUpdate":{"taskId":"t-1","contextId":"%s","status":{"state":"TASK_STATE_WORKING"}}}}` + "\n\n"
		done10    = `data: {"jsonrpc":"2.0","id":"r1","result":{"statusUpdate":{"taskId":"t-1","contextId":"%s","status":{"state":"TASK_STATE_COMPLETED"}}}}` + "\n\n"
		failed10  = `data: {"jsonrpc":"2.0","id":"r1","result":{"statusUpdate":{"taskId":"t-1","contextId":"%s","status":{"state":"TASK_STATE_FAILED"}}}}` + "\n\n"
		art10     = `data: {"jsonrpc":"2.0","id":"r1","result":{"artifactUpdate":{"taskId":"t-1","contextId":"%s","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}}` + "\n\n"
		task03    = `data: {"jsonrpc":"2.0","id":"r1","result":{"kind":"task","id":"t-1","contextId":"%s","status":{"state":"submitted"}}}` + "\n\n"
		done03    = `data: {"jsonrpc":"2.0","id":"r1","result":{"kind":"status-update","taskId":"t-1","contextId":"%s","status":{"state":"completed"},"final":true}}` + "\n\n"
	)
	for _, tc := range []struct {
		name, body, stream, stated string
		host                       hostproto.Host
		placed                     int // the event with the status
		want                       handoff.State
	}{
		{"1.0 completed", a2a10Stream, task10 + working10 + done10 + art10, "", hostproto.A2A10, 2, handoff.StateCompleted},
		{"1.0 failed", a2a10Stream, task10 + failed10, "", hostproto.A2A10, 1, handoff.StateFailed},
		{"1.0 still working: the last event", a2a10Stream, task10 + working10, "", hostproto.A2A10, 1, handoff.StateAccepted},
		{"1.0 the application's field wins", a2a10Stream, task10 + failed10, "completed", hostproto.A2A10, 1, handoff.StateCompleted},
		{"0.3 final status update", a2a03Stream, task03 + done03, "", hostproto.A2A03, 1, handoff.StateCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hp := newHandoffPair(t, handoffOptions{host: tc.host, app: sseApp(tc.stream, tc.stated)})
			res, body := hp.send(t, tc.body, nil)
			if res.StatusCode != 200 || res.Header.Get(proxy.HandoffStatusField) != string(tc.want) {
				t.Fatalf("%d %q %s", res.StatusCode, res.Header.Get(proxy.HandoffStatusField), body)
			}
			dlg := hp.app.last().Header.Get(proxy.VerifiedDialogField)
			got, sent := sseEvents(body), sseEvents([]byte(strings.ReplaceAll(tc.stream, "%s", dlg)))
			if len(got) != len(sent) {
				t.Fatalf("%d events, sent %d: %s", len(got), len(sent), body)
			}
			for i := range got {
				if i != tc.placed && got[i] != sent[i] {
					t.Fatalf("event %d changed: %q, was %q", i, got[i], sent[i])
				}
			}
			var env struct {
				Result map[string]json.RawMessage `json:"result"`
			}
			mustOK(t, json.Unmarshal(sseData(got[tc.placed]), &env))
			update := env.Result["statusUpdate"]
			if tc.host == hostproto.A2A03 {
				update, _ = json.Marshal(env.Result)
			}
			st, err := handoff.A2ATaskStatus(update)
			if err != nil || st == nil {
				t.Fatalf("no status in the update's status message: %s (%v)", got[tc.placed], err)
			}
			vs, err := handoff.VerifyStatusSignature(context.Background(), hp.trust, *st, 0)
			mustOK(t, err)
			if vs.State != tc.want {
				t.Fatalf("status %s in the stream", vs.State)
			}
		})
	}
}

// Section 5.6 over an event stream, MCP and A2A 1.0: a status swapped in the response
// event, the response events removed (an A2A artifact update has no place for a
// status), a stream not well formed and one over a bound are refused by the egress,
// and the agent gets no stream. The route uses WPTs, so that no response signature
// hides the tampering.
func TestHandoffSection5_6EventStreamRefused(t *testing.T) {
	const (
		task10     = `data: {"jsonrpc":"2.0","id":"r1","result":{"task":{"id":"t-1","contextId":"%s","status":{"state":"TASK_STATE_SUBMITTED"}}}}` + "\n\n"
		done10     = `data: {"jsonrpc":"2.0","id":"r1","result":{"statusUpdate":{"taskId":"t-1","contextId":"%s","status":{"state":"TASK_STATE_COMPLETED"}}}}` + "\n\n"
		artifact10 = `data: {"jsonrpc":"2.0","id":"r1","result":{"artifactUpdate":{"taskId":"t-1","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}}` + "\n\n"
	)
	forger, _ := keys.Generate(keys.ES256)
	for _, v := range []struct {
		name, request, stream, marker, noResponse string
		host                                      hostproto.Host
	}{
		{"MCP", toolsCall, mcpProgress + mcpSSEReply, "booked", mcpProgress, hostproto.MCP},
		{"A2A 1.0", a2a10Stream, task10 + done10, "TASK_STATE_COMPLETED", artifact10, hostproto.A2A10},
	} {
		hp := newHandoffPair(t, handoffOptions{host: v.host, method: proof.WPT, app: sseApp(v.stream, "failed")})
		for _, tc := range []struct {
			name   string
			tamper func(body []byte) []byte
			want   []errcode.Code
		}{
			{"forged status", func(body []byte) []byte {
				st := eventStatus(t, sseData(sseEvents(body)[1]))
				return hp.forgeCompleted(t, forger, st, body)
			}, []errcode.Code{errcode.HandoffUntrustedKey, errcode.HandoffBadSignature}},
			{"no response event", func([]byte) []byte {
				return []byte(v.noResponse)
			}, []errcode.Code{errcode.MissingCredential}},
			{"unterminated last event", func(body []byte) []byte {
				return bytes.TrimSuffix(body, []byte("\n"))
			}, []errcode.Code{errcode.UpstreamUnavailable}},
			{"not UTF-8", func(body []byte) []byte {
				return append([]byte(": \xff\n\n"), body...)
			}, []errcode.Code{errcode.UpstreamUnavailable}},
			{"too many events", func(body []byte) []byte {
				return append(bytes.Repeat([]byte(":\n\n"), hostproto.MaxStreamEvents), body...)
			}, []errcode.Code{errcode.UpstreamUnavailable}},
			{"over MaxBody", func(body []byte) []byte {
				return append(append([]byte(": "), bytes.Repeat([]byte("x"), proxy.MaxBody)...), append([]byte("\n\n"), body...)...)
			}, []errcode.Code{errcode.UpstreamUnavailable}},
		} {
			t.Run(v.name+"/"+tc.name, func(t *testing.T) {
				hp.tamperResponse = func(_ *http.Response, body []byte) []byte { return tc.tamper(body) }
				res, body := hp.send(t, v.request, nil)
				code := errcode.CodeOf(problem.Read(res.StatusCode, body))
				ok := false
				for _, w := range tc.want {
					ok = ok || code == w
				}
				if !ok {
					t.Fatalf("%d %.300s, want %v", res.StatusCode, body, tc.want)
				}
				if strings.Contains(string(body), v.marker) || res.Header.Get(proxy.HandoffStatusField) != "" {
					t.Fatal("the agent got the stream or a status")
				}
			})
		}
	}
}

// eventStatus is the status in a response event's JSON-RPC message: where
// agent.HandoffStatus reads it, or in an A2A 1.0 status update's status message.
func eventStatus(t *testing.T, msg []byte) *handoff.Signed {
	t.Helper()
	st, err := agent.HandoffStatus(msg)
	if err == nil && st == nil {
		var env struct {
			Result struct {
				StatusUpdate json.RawMessage `json:"statusUpdate"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &env) == nil && len(env.Result.StatusUpdate) > 0 {
			st, err = handoff.A2ATaskStatus(env.Result.StatusUpdate)
		}
	}
	if err != nil || st == nil {
		t.Fatalf("no status in %s (%v)", msg, err)
	}
	return st
}

// JSON-RPC 2.0, section 5: the response carries the request's id as a value, which the
// server may write its own way (another escape of a string, 7.0 for 7): the response
// event is still found, its status signed by the ingress and verified by the egress.
func TestJSONRPC2Section5EventStreamResponseIDIsTheRequestIDsValue(t *testing.T) {
	for _, tc := range []struct{ name, requestID, responseID string }{
		{"an escaped solidus", `"a/b"`, `"a\/b"`},
		{"a \\u escape", `"a"`, `"\u0061"`},
		{"a number with a fraction part", `7`, `7.0`},
		{"a number with an exponent", `7`, `70e-1`},
		{"an integer beyond 2^53", `9007199254740993`, `9007199254740993.0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream := mcpProgress + strings.Replace(mcpSSEReply, `"id":7`, `"id":`+tc.responseID, 1)
			hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: sseApp(stream, "completed")})
			res, body := hp.send(t, strings.Replace(toolsCall, `"id":7`, `"id":`+tc.requestID, 1), nil)
			if res.StatusCode != 200 || res.Header.Get(proxy.HandoffStatusField) != "completed" {
				t.Fatalf("%d %v %.300s", res.StatusCode, res.Header, body)
			}
			got := sseEvents(body)
			if len(got) != 2 || got[0] != mcpProgress {
				t.Fatalf("the stream changed: %q", body)
			}
			msg := sseData(got[1])
			if vs := hp.status(t, msg); vs.State != handoff.StateCompleted || vs.Hop != res.Header.Get(proxy.HandoffHopField) {
				t.Fatalf("status %+v in %s", vs.Status, msg)
			}
			var env struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(msg, &env); err != nil || string(env.ID) != tc.responseID {
				t.Fatalf("the response's id became %s (%v)", env.ID, err)
			}
		})
	}
}

// The ingress sends no unsigned success in a stream either: a stream without the
// response, one not well formed and one with too many events are refused as
// upstream_unavailable; an outcome the application stated is still recorded, for a
// retransmission (section 5.3).
func TestHandoffIngressEventStreamRefused(t *testing.T) {
	for _, tc := range []struct {
		name, stream, stated string
	}{
		{"no response event", mcpProgress, ""},
		{"a response to another id", strings.Replace(mcpSSEReply, `"id":7`, `"id":8`, 1), ""},
		{"a response to the id as a string", strings.Replace(mcpSSEReply, `"id":7`, `"id":"7"`, 1), ""},
		{"two responses", mcpSSEReply + mcpSSEReply, ""},
		{"unterminated", strings.TrimSuffix(mcpSSEReply, "\n"), "failed"},
		{"not UTF-8", ": \xff\n\n" + mcpSSEReply, ""},
		{"too many events", strings.Repeat(":\n\n", hostproto.MaxStreamEvents) + mcpSSEReply, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: sseApp(tc.stream, tc.stated)})
			res, body := hp.send(t, toolsCall, nil)
			if code, ingress := hp.ingressCode(); code != errcode.UpstreamUnavailable || hp.app.hits() != 1 {
				t.Fatalf("the ingress answered %s %.300s; the agent got %d %.300s", code, ingress, res.StatusCode, body)
			}
			if res.Header.Get(proxy.HandoffStatusField) != "" || strings.Contains(string(body), "booked") {
				t.Fatal("a status or the stream for a refused reply")
			}
			if tc.stated != "" {
				hp.wantStated(t, hp.app.last().Header.Get(proxy.VerifiedHandoffHopField), tc.stated)
			}
		})
	}
}

// Section 6 places statuses in results: a stream whose response is a JSON-RPC error
// goes to the agent exactly as the application sent it, without a status, and the
// stated outcome is recorded for a retransmission (section 5.3).
func TestHandoffSection6EventStreamErrorCarriesNoStatus(t *testing.T) {
	// The error's data is on two lines, which the ingress leaves as they are.
	stream := mcpProgress + "event: message\nid: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\ndata: \"error\":{\"code\":-32000,\"message\":\"no rooms\"}}\n\n"
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: sseApp(stream, "failed")})
	res, body := hp.send(t, toolsCall, nil)
	if res.StatusCode != 200 || string(body) != stream || res.Header.Get(proxy.HandoffStatusField) != "" || res.Header.Get(proxy.HandoffHopField) == "" {
		t.Fatalf("%d %q %v", res.StatusCode, body, res.Header)
	}
	hp.wantStated(t, res.Header.Get(proxy.HandoffHopField), string(handoff.StateFailed))
}

// One reading of Content-Type (hostproto.IsEventStream, as dialog's receiver reads it):
// an event stream whose media type does not parse is no event stream, so the ingress
// reads the reply as one JSON-RPC response, finds none, and refuses it rather than place
// a status in events an agent's client may not read as a stream.
func TestHandoffIngressMalformedEventStreamTypeIsNoStream(t *testing.T) {
	app := func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream; charset")
		_, _ = io.WriteString(w, mcpProgress+mcpSSEReply)
	}
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: app})
	res, body := hp.send(t, toolsCall, nil)
	if code, ingress := hp.ingressCode(); code != errcode.UpstreamUnavailable || hp.app.hits() != 1 {
		t.Fatalf("the ingress answered %s %.300s; the agent got %d %.300s", code, ingress, res.StatusCode, body)
	}
	if res.Header.Get(proxy.HandoffStatusField) != "" || strings.Contains(string(body), "booked") {
		t.Fatal("a status or the stream for a reply that is no event stream")
	}
}
