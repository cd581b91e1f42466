package hostproto

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

func TestIssue25_ReadOperation(t *testing.T) {
	for _, c := range []struct {
		body string
		want Operation
		code errcode.Code // "" : read
	}{
		{``, Operation{}, ""},
		{`task=book`, Operation{}, ""},
		{`{"task":"book"}`, Operation{}, ""},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, Operation{}, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, Operation{"mcp", "tools/list", ""}, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book","arguments":{"name":"x"}}}`, Operation{"mcp", "tools/call", "book"}, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p"}}`, Operation{"mcp", "prompts/get", ""}, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"metadata":{"skill":"s","other":1}}}}`, Operation{"a2a", "message/send", "s"}, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"parts":[]}}}`, Operation{"a2a", "SendStreamingMessage", ""}, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t","metadata":{"skill":"s"}}}`, Operation{"a2a", "tasks/get", ""}, ""},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book"}}]`, Operation{}, errcode.InvalidRequest},
		{`{"method":"tools/call","params":{"name":"book","name":"delete"}}`, Operation{}, errcode.InvalidRequest},
		{`{"method":"tools/call","params":{"name":"book","\u006eame":"delete"}}`, Operation{}, errcode.InvalidRequest},
		{`{"method":"tools/call","params":{"Name":"delete"}}`, Operation{}, errcode.InvalidRequest},
		{`{"method":"tools/list","Method":"tools/call"}`, Operation{}, errcode.InvalidRequest},
		{`{"method":"tools/call","params":{"name":7}}`, Operation{}, errcode.InvalidRequest},
		{`{"method":"tools/call","params":["book"]}`, Operation{}, errcode.InvalidRequest},
		{`{"method":"message/send","params":{"message":{"metadata":{"skill":"a","skill":"b"}}}}`, Operation{}, errcode.InvalidRequest},
		{`{"method":"message/send","params":{"message":{"metadata":{"Skill":"b"}}}}`, Operation{}, errcode.InvalidRequest},
		{"\ufeff" + `{"method":"tools/call","params":{"name":"delete"}}`, Operation{}, errcode.InvalidRequest},
		{`{"method":"tools/call"`, Operation{}, errcode.InvalidRequest},
		{`{"method":"tools/call"} {"method":"x"}`, Operation{}, errcode.InvalidRequest},
		{`{"method":"tools/call","params":{"name":"` + strings.Repeat("a", MaxOperationBody) + `"}}`, Operation{}, errcode.BodyTooLarge},
	} {
		op, err := ReadOperation([]byte(c.body))
		if errcode.CodeOf(err) != c.code || (err == nil && op != c.want) {
			t.Errorf("%.80s: %+v %v, want %+v %s", c.body, op, err, c.want, c.code)
		}
	}
	// The member read for the skill is A2ASkillMetadataKey.
	op, _ := ReadOperation([]byte(`{"method":"message/send","params":{"message":{"metadata":{"` + A2ASkillMetadataKey + `":"k"}}}}`))
	if op.Name != "k" {
		t.Fatal(op)
	}
}

// Issue 25, the operation reader is not fooled: whatever the body, what it reads is
// what the applications' readers read (encoding/json, which matches names in any case
// and keeps the last copy, as the Go SDKs read; and an exact-name reader keeping the
// last copy, as JavaScript's JSON.parse does), or it refuses the body. A body it finds
// no operation in is one in which neither reader finds a method.
func FuzzIssue25_ReadOperationAgreesWithTheApplicationsReaders(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"metadata":{"skill":"s"}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"metadata":{"skill":"s"}}}}`,
		`{"method":"tools/call","params":{"name":"a","NAME":"b"}}`,
		`{"task":"x"}`, `[]`, "\ufeff{}", `x=1`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		op, err := ReadOperation(body)
		if err != nil {
			return
		}
		type goReq struct {
			Method string
			Params *struct {
				Name    string
				Message *struct {
					Metadata map[string]any
				}
			}
		}
		var g goReq
		goErr := json.Unmarshal(body, &g)
		var js map[string]any
		jsErr := json.Unmarshal(body, &js)
		if op.Method == "" {
			if goErr == nil && g.Method != "" {
				t.Fatalf("no operation read, encoding/json finds method %q in %q", g.Method, body)
			}
			if m, _ := js["method"].(string); jsErr == nil && m != "" {
				t.Fatalf("no operation read, a JSON reader finds method %q in %q", m, body)
			}
			return
		}
		if goErr != nil || g.Method != op.Method || js["method"] != op.Method {
			t.Fatalf("read %+v; encoding/json %q (%v), exact %v in %q", op, g.Method, goErr, js["method"], body)
		}
		params, _ := js["params"].(map[string]any)
		switch {
		case op.Method == "tools/call":
			if params != nil && params["name"] != nil && (g.Params == nil || g.Params.Name != op.Name || params["name"] != op.Name) {
				t.Fatalf("tool %q; the readers find %v in %q", op.Name, params["name"], body)
			}
		case op.Name != "":
			msg, _ := params["message"].(map[string]any)
			md, _ := msg["metadata"].(map[string]any)
			if md[A2ASkillMetadataKey] != op.Name || g.Params.Message.Metadata[A2ASkillMetadataKey] != op.Name {
				t.Fatalf("skill %q in %q", op.Name, body)
			}
		}
	})
}
