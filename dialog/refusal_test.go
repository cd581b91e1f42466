package dialog

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/problem"
)

// Handoff-context section 6 carries the handoff in the host protocol's JSON-RPC
// request, so a refusal at the handoff step is answered as that host answers a bad
// request: a JSON-RPC error response that echoes the request's id, on HTTP 200 (MCP
// Streamable HTTP answers a request with one JSON object; A2A's JSON-RPC binding carries
// errors in the body), the stable code and kind in its data. Whatever has no id to echo
// (plain HTTP, a notification, a batch, a null or object id) keeps the problem document
// and its HTTP status.
func TestHandoffSec6_RefusalInTheHostProtocolsShape(t *testing.T) {
	k := handoff.MCPMetaKey
	unplaced := errcode.New(errcode.HandoffUnplaced, "a handoff key where none is read")
	down := errcode.Unavailable(errcode.StoreUnavailable, errors.New("down"), "the records store is down")
	for _, c := range []struct {
		name, body string
		err        error
		id         string // "" : the problem document
		rpcCode    int
	}{
		{"MCP tools/call, number id", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"` + k + `":{}}}}`, unplaced, "7", -32602},
		{"A2A 0.3 message/send, string id", `{"jsonrpc":"2.0","id":"r-1","method":"message/send","params":{"message":{}}}`, unplaced, `"r-1"`, -32602},
		{"A2A 1.0 SendMessage, could not complete", `{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{}}}`, down, "3", -32603},
		{"MCP notification (no id)", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, unplaced, "", 0},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`, unplaced, "", 0},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{}}`, unplaced, "", 0},
		{"batch", `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}]`, unplaced, "", 0},
		{"plain HTTP", `{"offer":"a.b.c"}`, unplaced, "", 0},
		{"not JSON", `offer=a.b.c`, unplaced, "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteRefusal(rec, []byte(c.body), c.err) // the receiver's writer, as the egress proxy calls it
			res := rec.Result()
			back := problem.Read(res.StatusCode, rec.Body.Bytes())
			if errcode.CodeOf(back) != errcode.CodeOf(c.err) || errcode.KindOf(back) != errcode.KindOf(c.err) {
				t.Fatalf("read back %v, want %v", back, c.err)
			}
			if c.id == "" {
				if res.StatusCode != problem.Status(c.err) || res.Header.Get("Content-Type") != "application/problem+json" {
					t.Fatalf("status %d %s: %s, want the problem document", res.StatusCode, res.Header.Get("Content-Type"), rec.Body)
				}
				return
			}
			var r struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Result  json.RawMessage `json:"result"`
				Error   struct {
					Code    int                        `json:"code"`
					Message string                     `json:"message"`
					Data    map[string]json.RawMessage `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			d := problem.From(c.err)
			switch {
			case res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json":
				t.Fatalf("status %d %s, want 200 application/json", res.StatusCode, res.Header.Get("Content-Type"))
			case r.JSONRPC != "2.0" || string(r.ID) != c.id || r.Result != nil:
				t.Fatalf("envelope %s", rec.Body)
			case r.Error.Code != c.rpcCode || r.Error.Message != d.Code+": "+d.Detail:
				t.Fatalf("error %d %q", r.Error.Code, r.Error.Message)
			case string(r.Error.Data["code"]) != `"`+d.Code+`"` || string(r.Error.Data["kind"]) != `"`+d.Kind+`"`,
				string(r.Error.Data["type"]) != `"`+d.Type+`"`:
				t.Fatalf("data %s", rec.Body)
			}
			// a2a-go 0.3 keeps only data.error of a JSON-RPC error: it names the code.
			var text string
			if json.Unmarshal(r.Error.Data["error"], &text) != nil || text != r.Error.Message {
				t.Fatalf("data.error %s", r.Error.Data["error"])
			}
		})
	}
}
