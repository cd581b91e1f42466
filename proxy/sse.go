package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
)

// The replies to a handoff offer may come as an event stream: the MCP Streamable HTTP
// transport answers a POST with application/json or with text/event-stream whose
// events carry JSON-RPC messages (the TypeScript SDK's default), and A2A message/stream
// and SendStreamingMessage always stream. The proxies read a reply to an offer whole
// (MaxBody), whatever its type, so only a finite stream is handled: it is parsed here, in one place, by a strict,
// bounded reader of the WHATWG event-stream format (HTML Living Standard, "Server-sent
// events", 9.2.6). No Go library the module depends on reads event streams, and the one
// in the MCP Go SDK is not a dependency of the core.

// MaxStreamEvents bounds the events (blocks ended by a blank line, comments included)
// of an event stream the proxies read in a reply to a handoff offer.
const MaxStreamEvents = 4096

// streamEvent is one block of an event stream: the octets body[start:end], its last
// blank line included, and what they dispatch. A block of comments or of fields
// without data dispatches no event (hasData false) and is passed on as it is.
type streamEvent struct {
	start, end int
	typ        string // the event field; "" is "message"
	id         string
	hasID      bool
	data       []byte // the data lines joined by LF
	hasData    bool
}

// isEventStream reports whether h names a text/event-stream body.
func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// parseEventStream splits b into its blocks. It is stricter than a browser: the stream
// must be UTF-8, at most MaxBody octets and MaxStreamEvents blocks, and must end with
// the blank line that ends its last block (a browser drops an unterminated last event;
// a proxy that put a status in it would send a status nobody reads). Line ends are
// CRLF, LF or CR; one leading U+FEFF is skipped; unknown fields are ignored, as the
// format says, and an id with U+0000 is ignored.
func parseEventStream(b []byte) ([]streamEvent, error) {
	if len(b) > MaxBody {
		return nil, errcode.New(errcode.BodyTooLarge, "the event stream is over %d octets", MaxBody)
	}
	if !utf8.Valid(b) {
		return nil, errcode.New(errcode.InvalidEncoding, "the event stream is not UTF-8")
	}
	pos := 0
	if bytes.HasPrefix(b, []byte("\uFEFF")) {
		pos = 3
	}
	var events []streamEvent
	cur := streamEvent{start: pos} // a BOM is no block's
	open := false                  // a line of the current block has been read
	for pos < len(b) {
		i := bytes.IndexAny(b[pos:], "\r\n")
		if i < 0 {
			return nil, errcode.New(errcode.InvalidEncoding, "the event stream ends inside a line: its last event is not terminated")
		}
		line := b[pos : pos+i]
		pos += i + 1
		if b[pos-1] == '\r' && pos < len(b) && b[pos] == '\n' {
			pos++
		}
		if len(line) == 0 {
			if len(events) == MaxStreamEvents {
				return nil, errcode.New(errcode.InvalidEncoding, "the event stream has more than %d events", MaxStreamEvents)
			}
			cur.end = pos
			if cur.hasData {
				cur.data = bytes.TrimSuffix(cur.data, []byte("\n"))
			}
			events = append(events, cur)
			cur, open = streamEvent{start: pos}, false
			continue
		}
		open = true
		if line[0] == ':' {
			continue // a comment
		}
		name, value := line, []byte(nil)
		if c := bytes.IndexByte(line, ':'); c >= 0 {
			name, value = line[:c], bytes.TrimPrefix(line[c+1:], []byte(" "))
		}
		switch string(name) {
		case "event":
			cur.typ = string(value)
		case "data":
			cur.data = append(append(cur.data, value...), '\n')
			cur.hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				cur.id, cur.hasID = string(value), true
			}
		}
	}
	if open {
		return nil, errcode.New(errcode.InvalidEncoding, "the event stream's last event is not ended by a blank line")
	}
	return events, nil
}

// streamReply is the index in events of the JSON-RPC response in an event stream that
// answers the request with identifier id, the same id by value (sameJSONRPCID). An MCP stream carries one
// response to the request (its other events are the server's notifications and
// requests): a second one is refused. An A2A stream answers with many (a Task, status
// and artifact updates, Messages): the one the status goes in is the last whose Task
// or status update is in a terminal state, or the last JSON-RPC error, else the last
// Task, status update or Message (an artifact update has no place for a status).
func streamReply(host dialog.Host, events []streamEvent, id json.RawMessage) (int, error) {
	want, ok := parseJSONRPCID(id)
	if !ok || want.kind == 'n' {
		return 0, errcode.New(errcode.InvalidRequest, "the request has no JSON-RPC id to find its response by")
	}
	found, final := -1, -1
	for i, ev := range events {
		if !ev.hasData || ev.typ != "" && ev.typ != "message" {
			continue
		}
		var env map[string]json.RawMessage
		if json.Unmarshal(ev.data, &env) != nil || env == nil || string(env["jsonrpc"]) != `"2.0"` {
			continue // not a JSON-RPC message: passed on, never the reply
		}
		if _, isRequest := env["method"]; isRequest {
			continue
		}
		_, hasResult := env["result"]
		_, hasError := env["error"]
		got, ok := parseJSONRPCID(env["id"])
		if !ok || !got.same(want) || !hasResult && !hasError {
			continue
		}
		if host == dialog.MCP && found >= 0 {
			return 0, errcode.New(errcode.InvalidEncoding, "the event stream carries more than one response to the request")
		}
		if !hasError && host != dialog.MCP && !a2aCarriesStatus(host, env["result"]) {
			continue
		}
		found = i
		if hasError || host != dialog.MCP && terminalUpdate(host, env["result"]) {
			final = i
		}
	}
	switch {
	case final >= 0:
		return final, nil
	case found >= 0:
		return found, nil
	}
	return 0, errcode.New(errcode.MissingCredential, "the event stream carries no JSON-RPC response to the request")
}

// a2aCarriesStatus reports whether an A2A stream result has a place for a status: a
// Task, a status update (a2aTask) or a Message.
func a2aCarriesStatus(host dialog.Host, result json.RawMessage) bool {
	if task, _ := a2aTask(host, result); task != nil {
		return true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || m == nil {
		return false
	}
	if host == dialog.A2A10 {
		msg, ok := m["message"]
		return ok && string(msg) != "null"
	}
	return string(m["kind"]) == `"message"`
}

// terminalUpdate reports whether an A2A stream result is a Task or a status update in
// a terminal state (completed, failed, rejected, canceled: section 4, Table 1).
func terminalUpdate(host dialog.Host, result json.RawMessage) bool {
	task, _ := a2aTask(host, result)
	if task == nil {
		return false
	}
	var tk struct {
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	_ = json.Unmarshal(task, &tk)
	s, ok := handoff.StateForA2ATask(tk.Status.State)
	return ok && (s == handoff.StateCompleted || s == handoff.StateFailed || s == handoff.StateRejected || s == handoff.StateCanceled)
}

// replaceEventData returns the stream b with event ev's data lines replaced by one data
// line holding data (a JSON text, which has no line end), at the place of its first
// data line; its other lines and every other octet of the stream are unchanged.
func replaceEventData(b []byte, ev streamEvent, data []byte) []byte {
	out := make([]byte, 0, len(b)+len(data))
	out = append(out, b[:ev.start]...)
	placed := false
	pos := ev.start
	for pos < ev.end {
		i := bytes.IndexAny(b[pos:ev.end], "\r\n")
		lineEnd := pos + i + 1
		if b[pos+i] == '\r' && lineEnd < ev.end && b[lineEnd] == '\n' {
			lineEnd++
		}
		line := b[pos : pos+i]
		if string(line) == "data" || bytes.HasPrefix(line, []byte("data:")) {
			if !placed {
				out = append(append(append(out, "data: "...), data...), '\n')
				placed = true
			}
		} else {
			out = append(out, b[pos:lineEnd]...)
		}
		pos = lineEnd
	}
	return append(out, b[ev.end:]...)
}

// compactJSON is raw without insignificant white space, for comparing identifiers.
func compactJSON(raw json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// requestID is the id member of a JSON-RPC request body (nil without one).
func requestID(body []byte) json.RawMessage {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &env)
	return env.ID
}

// answerStream is the ingress's answer for an event stream: the status goes in the
// response event to the request (streamReply) exactly as in an application/json
// reply, and the stream is re-emitted with every other octet unchanged. A stream that
// is not well formed or carries no response is refused as one in which no status can
// be placed: a stated outcome is still recorded, for a retransmission.
func (t *ingressHop) answerStream(ctx context.Context, res *http.Response, body []byte) ([]byte, error) {
	events, err := parseEventStream(body)
	var i int
	if err == nil {
		i, err = streamReply(t.host, events, t.id)
	}
	if err != nil {
		_, _ = t.answerMessage(ctx, res, nil) // records a stated outcome; refuses the reply
		return nil, errcode.Unavailable(errcode.UpstreamUnavailable, err,
			"the application's event stream in reply to an accepted handoff is not usable: the delegate's status cannot be placed in it")
	}
	msg := events[i].data
	placed, err := t.answerMessage(ctx, res, msg)
	if err != nil {
		return nil, err
	}
	if bytes.Equal(placed, msg) {
		return body, nil // a JSON-RPC error: no status in it, the stream as it came
	}
	return replaceEventData(body, events[i], placed), nil
}

// eventStreamReply is, for the egress, the JSON-RPC response in an event stream that
// the status is read from: the one the ingress puts it in (streamReply).
func (o *egressOffer) eventStreamReply(body []byte) ([]byte, error) {
	events, err := parseEventStream(body)
	if err != nil {
		return nil, errcode.Unavailable(errcode.UpstreamUnavailable, err, "the event stream in reply to the handoff offer is not usable")
	}
	i, err := streamReply(o.rh.host, events, requestID(o.body))
	if err != nil {
		return nil, err
	}
	return events[i].data, nil
}

// statusUpdateStatus takes a status out of the status message of an A2A 1.0 streamed
// status update ({"statusUpdate": ...}), which agent.HandoffStatus does not read.
func statusUpdateStatus(body []byte) (*handoff.Signed, error) {
	var env struct {
		Result struct {
			StatusUpdate json.RawMessage `json:"statusUpdate"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Result.StatusUpdate) == 0 || string(env.Result.StatusUpdate) == "null" {
		return nil, nil
	}
	return handoff.A2ATaskStatus(env.Result.StatusUpdate)
}
