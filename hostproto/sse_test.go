package hostproto

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// The WHATWG event-stream format as the proxies read it: line ends, comments, the
// space after the colon, data joined by LF, unknown fields ignored, and the strict
// refusals (an unterminated last event, not UTF-8, too many events).
func TestParseEventStream(t *testing.T) {
	type want struct {
		typ, id, data string
		hasData       bool
	}
	for _, tc := range []struct {
		name   string
		in     string
		events []want
		code   errcode.Code
	}{
		{name: "MCP TypeScript SDK", in: "event: message\nid: 1\ndata: {\"a\":1}\n\n",
			events: []want{{typ: "message", id: "1", data: `{"a":1}`, hasData: true}}},
		{name: "CRLF and CR", in: "data:x\r\ndata: y\r\rdata: z\r\n\r\n",
			events: []want{{data: "x\ny", hasData: true}, {data: "z", hasData: true}}},
		{name: "comment and unknown field", in: ": keep-alive\nretry: 10\nfoo: bar\n\ndata\n\n",
			events: []want{{}, {data: "", hasData: true}}},
		{name: "only the first space", in: "data:  two\n\n", events: []want{{data: " two", hasData: true}}},
		{name: "BOM", in: "\uFEFFdata: a\n\n", events: []want{{data: "a", hasData: true}}},
		{name: "id with NUL ignored", in: "id: a\x00b\ndata: a\n\n", events: []want{{data: "a", hasData: true}}},
		{name: "empty", in: ""},
		{name: "unterminated line", in: "data: a", code: errcode.InvalidEncoding},
		{name: "unterminated event", in: "data: a\n", code: errcode.InvalidEncoding},
		{name: "not UTF-8", in: "data: \xff\n\n", code: errcode.InvalidEncoding},
		{name: "too many events", in: strings.Repeat(":\n\n", MaxStreamEvents+1), code: errcode.InvalidEncoding},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := parseEventStream([]byte(tc.in))
			if tc.code != "" {
				if errcode.CodeOf(err) != tc.code {
					t.Fatalf("%v, want %s", err, tc.code)
				}
				return
			}
			noErr(t, err)
			if len(evs) != len(tc.events) {
				t.Fatalf("%d events, want %d: %+v", len(evs), len(tc.events), evs)
			}
			for i, ev := range evs {
				w := tc.events[i]
				if ev.typ != w.typ || ev.id != w.id || string(ev.data) != w.data || ev.hasData != w.hasData {
					t.Errorf("event %d: %+v, want %+v", i, ev, w)
				}
			}
		})
	}
	if _, err := parseEventStream(bytes.Repeat([]byte("\n"), testMaxBody+1)); errcode.CodeOf(err) != errcode.BodyTooLarge {
		t.Fatalf("over the bound: %v", err)
	}
	if _, err := parseEventStream([]byte(strings.Repeat(":\n\n", MaxStreamEvents))); err != nil {
		t.Fatalf("MaxStreamEvents events: %v", err)
	}
}

// The response event is found by the request's id: notifications, requests, events of
// another type and responses to other ids are not it; MCP has one, A2A's terminal
// update (or error, or else the last response) is the one.
func TestStreamReply(t *testing.T) {
	const (
		note   = `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}` + "\n\n"
		other  = `data: {"jsonrpc":"2.0","id":8,"result":{}}` + "\n\n"
		ping   = "event: ping\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"
		mcp    = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\": 7,\"result\":{\"content\":[]}}\n\n"
		done   = `data: {"jsonrpc":"2.0","id":"r1","result":{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_COMPLETED"}}}}` + "\n\n"
		work   = `data: {"jsonrpc":"2.0","id":"r1","result":{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}}` + "\n\n"
		art    = `data: {"jsonrpc":"2.0","id":"r1","result":{"artifactUpdate":{"taskId":"t"}}}` + "\n\n"
		fail03 = `data: {"jsonrpc":"2.0","id":"r1","result":{"kind":"status-update","taskId":"t","status":{"state":"failed"},"final":true}}` + "\n\n"
	)
	for _, tc := range []struct {
		name   string
		host   Host
		id     string
		stream string
		want   int // index of the event, -1 for none
	}{
		{"MCP among others", MCP, "7", note + other + ping + mcp + note, 3},
		{"MCP none", MCP, "7", note + other + ping, -1},
		{"MCP twice", MCP, "7", mcp + mcp, -1},
		{"A2A terminal before an artifact", A2A10, `"r1"`, work + done + art, 1},
		{"A2A no terminal: the last update, not an artifact", A2A10, `"r1"`, work + art, 0},
		{"A2A only artifacts", A2A10, `"r1"`, art, -1},
		{"A2A 0.3 final status update", A2A03, `"r1"`, fail03, 0},
		{"wrong id type", A2A10, `1`, work, -1},
		{"wrong id type: a string of the number", MCP, "7", strings.Replace(mcp, "7", `"7"`, 1), -1},
		{"MCP the id written 7.0", MCP, "7", note + strings.Replace(mcp, "7", "7.0", 1), 1},
		{"MCP 7 and 7e0 are one id: twice", MCP, "7", mcp + strings.Replace(mcp, "7", "7e0", 1), -1},
		{"A2A the request's id escaped", A2A10, `"\u0072\u0031"`, work + done, 1},
		{"A2A the response's id escaped", A2A10, `"r1"`, strings.Replace(done, `"r1"`, `"r\u0031"`, 1), 0},
		{"A2A another string id", A2A10, `"r2"`, work + done, -1},
		{"a null request id", MCP, "null", strings.Replace(mcp, "7", "null", 1), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := parseEventStream([]byte(tc.stream))
			noErr(t, err)
			i, err := StreamReply(tc.host, evs, json.RawMessage(tc.id))
			if tc.want < 0 {
				if err == nil {
					t.Fatalf("event %d found", i)
				}
				return
			}
			noErr(t, err)
			if i != tc.want {
				t.Fatalf("event %d, want %d", i, tc.want)
			}
		})
	}
}

// Replacing an event's data keeps every other line and every other event's octets.
func TestReplaceEventData(t *testing.T) {
	in := ": hi\r\nevent: message\r\nid: 1\r\ndata: a\r\n\r\nevent: message\nid: 2\ndata: {\"x\":\ndata: 1}\nretry: 5\n\n: bye\n\n"
	evs, err := parseEventStream([]byte(in))
	noErr(t, err)
	out := ReplaceEventData([]byte(in), evs[1], []byte(`{"x":2}`))
	want := ": hi\r\nevent: message\r\nid: 1\r\ndata: a\r\n\r\nevent: message\nid: 2\ndata: {\"x\":2}\nretry: 5\n\n: bye\n\n"
	if string(out) != want {
		t.Fatalf("%q\nwant %q", out, want)
	}
}

// testMaxBody is the bound the proxies read an event stream within (proxy.MaxBody).
const testMaxBody = 8 << 20

func parseEventStream(b []byte) ([]Event, error) { return ParseEventStream(b, testMaxBody) }

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzParseEventStream: any input is parsed without panic within the bounds; a parsed
// stream's blocks cover it in order, its data is UTF-8, and replacing a data event's
// data with a JSON text gives a stream that parses to the same blocks with that data.
func FuzzParseEventStream(f *testing.F) {
	for _, s := range []string{
		"event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n",
		"data:x\r\ndata: y\r\rdata: z\r\n\r\n",
		": keep-alive\nretry: 10\n\n",
		"\uFEFFdata\n\n",
		"data: a",
		"id: \x00\ndata: \xff\n\n",
		"\r\n\r\n\n\r",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := parseEventStream(b)
		if err != nil {
			return
		}
		if len(evs) > MaxStreamEvents {
			t.Fatalf("%d events", len(evs))
		}
		next := 0
		if bytes.HasPrefix(b, []byte("\uFEFF")) && len(evs) > 0 {
			next = evs[0].start
		}
		for i, ev := range evs {
			if ev.start != next || ev.end <= ev.start || ev.end > len(b) {
				t.Fatalf("event %d spans %d..%d after %d", i, ev.start, ev.end, next)
			}
			next = ev.end
			if !utf8.Valid(ev.data) {
				t.Fatalf("event %d: data not UTF-8", i)
			}
		}
		if len(evs) > 0 && next != len(b) {
			t.Fatalf("the blocks end at %d of %d", next, len(b))
		}
		for i, ev := range evs {
			if !ev.hasData {
				continue
			}
			out := ReplaceEventData(b, ev, []byte(`{"placed":true}`))
			again, err := parseEventStream(out)
			if err != nil || len(again) != len(evs) {
				t.Fatalf("after replacing event %d: %v, %d events of %d", i, err, len(again), len(evs))
			}
			for j := range again {
				a, e := again[j], evs[j]
				if a.typ != e.typ || a.id != e.id || a.hasID != e.hasID || a.hasData != e.hasData ||
					j != i && !bytes.Equal(a.data, e.data) || j == i && string(a.data) != `{"placed":true}` {
					t.Fatalf("event %d changed: %+v, was %+v", j, a, e)
				}
			}
			break
		}
	})
}

// One reading of Content-Type for every user (dialog's held or streamed responses, the
// proxies' replies to offers): a media type that does not parse declares no event
// stream, whatever its type, so a malformed text/event-stream is held and signed by a
// receiver and read as one JSON body by the proxies, never streamed past them.
func TestIsEventStreamOnlyForAWellFormedMediaType(t *testing.T) {
	for _, tc := range []struct {
		ct   string
		want bool
	}{
		{"text/event-stream", true},
		{"text/event-stream; charset=utf-8", true},
		{"Text/Event-Stream", true},
		{"text/event-stream; charset", false},  // a parameter without a value
		{"text/event-stream; =utf-8", false},   // a value without a name
		{"text/event-stream; a=1; a=2", false}, // a parameter twice
		{"text/event-stream, application/json", false},
		{"application/json", false},
		{"", false},
	} {
		if got := IsEventStream(http.Header{"Content-Type": {tc.ct}}); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.ct, got, tc.want)
		}
	}
}
