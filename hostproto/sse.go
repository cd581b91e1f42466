package hostproto

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
)

// The replies to a handoff offer may come as an event stream: the MCP Streamable HTTP
// transport answers a POST with application/json or with text/event-stream whose
// events carry JSON-RPC messages (the TypeScript SDK's default), and A2A message/stream
// and SendStreamingMessage always stream. The proxies read a reply to an offer whole
// (proxy.MaxBody), whatever its type, so only a finite stream is handled: it is parsed
// here, in one place, by a strict, bounded reader of the WHATWG event-stream format
// (HTML Living Standard, "Server-sent events", 9.2.6). No Go library the module depends
// on reads event streams, and the one in the MCP Go SDK is not a dependency of the core.

// MaxStreamEvents bounds the events (blocks ended by a blank line, comments included)
// of an event stream the proxies read in a reply to a handoff offer.
const MaxStreamEvents = 4096

// Event is one block of an event stream: the octets body[start:end], its last
// blank line included, and what they dispatch. A block of comments or of fields
// without data dispatches no event (hasData false) and is passed on as it is.
type Event struct {
	start, end int
	typ        string // the event field; "" is "message"
	id         string
	hasID      bool
	data       []byte // the data lines joined by LF
	hasData    bool
}

// Data is the event's data: its data lines joined by LF (nil without any).
func (e Event) Data() []byte { return e.data }

// IsEventStream reports whether h declares an event stream (text/event-stream, the
// replies of MCP Streamable HTTP and A2A's streaming methods): a Content-Type that
// parses as a media type (RFC 9110 section 8.3.1), parameters included, and names
// text/event-stream in any case. A malformed one declares no event stream: the
// response is then held and signed by a receiver, and read as one JSON body by the
// proxies, which refuse it when it is not one. The content type, and not a flush, is
// what declares a response open-ended: handlers and proxies flush ordinary replies too
// (net/http's reverse proxy, the ingress, for every body of unknown length), and a
// flush that dropped the signature would strip it from replies whose end is near.
func IsEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// ParseEventStream splits b into its blocks. It is stricter than a browser: the stream
// must be UTF-8, at most maxSize octets and MaxStreamEvents blocks, and must end with
// the blank line that ends its last block (a browser drops an unterminated last event;
// a proxy that put a status in it would send a status nobody reads). Line ends are
// CRLF, LF or CR; one leading U+FEFF is skipped; unknown fields are ignored, as the
// format says, and an id with U+0000 is ignored.
func ParseEventStream(b []byte, maxSize int) ([]Event, error) {
	if len(b) > maxSize {
		return nil, errcode.New(errcode.BodyTooLarge, "the event stream is over %d octets", maxSize)
	}
	if !utf8.Valid(b) {
		return nil, errcode.New(errcode.InvalidEncoding, "the event stream is not UTF-8")
	}
	pos := 0
	if bytes.HasPrefix(b, []byte("\uFEFF")) {
		pos = 3
	}
	var events []Event
	cur := Event{start: pos} // a BOM is no block's
	open := false            // a line of the current block has been read
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
			cur, open = Event{start: pos}, false
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

// StreamReply is the index in events of the JSON-RPC response in an event stream that
// answers the request with identifier id, the same id by value (SameID). An MCP stream
// carries one response to the request (its other events are the server's
// notifications and requests): a second one is refused. An A2A stream answers with many (a Task, status
// and artifact updates, Messages): the one the status goes in is the last whose Task
// or status update is in a terminal state, or the last JSON-RPC error, else the last
// Task, status update or Message (an artifact update has no place for a status).
func StreamReply(host Host, events []Event, id json.RawMessage) (int, error) {
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
		if host == MCP && found >= 0 {
			return 0, errcode.New(errcode.InvalidEncoding, "the event stream carries more than one response to the request")
		}
		if !hasError && host != MCP && !a2aCarriesStatus(host, env["result"]) {
			continue
		}
		found = i
		if hasError || host != MCP && terminalUpdate(host, env["result"]) {
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
// Task, a status update (A2ATask) or a Message.
func a2aCarriesStatus(host Host, result json.RawMessage) bool {
	if task, _ := A2ATask(host, result); task != nil {
		return true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || m == nil {
		return false
	}
	if host == A2A10 {
		msg, ok := m["message"]
		return ok && string(msg) != "null"
	}
	return string(m["kind"]) == `"message"`
}

// terminalUpdate reports whether an A2A stream result is a Task or a status update in
// a terminal state (completed, failed, rejected, canceled: section 4, Table 1).
func terminalUpdate(host Host, result json.RawMessage) bool {
	task, _ := A2ATask(host, result)
	if task == nil {
		return false
	}
	s, ok := handoff.StateForA2ATask(TaskState(task))
	return ok && (s == handoff.StateCompleted || s == handoff.StateFailed || s == handoff.StateRejected || s == handoff.StateCanceled)
}

// ReplaceEventData returns the stream b with event ev's data lines replaced by one data
// line holding data (a JSON text, which has no line end), at the place of its first
// data line; its other lines and every other octet of the stream are unchanged.
func ReplaceEventData(b []byte, ev Event, data []byte) []byte {
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
