package authzen

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/dialogtrust/dialogtrust/authz"
)

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The receiver mapping, exactly as docs/proxy.md ("AuthZEN setup") shows it.
func TestRequestFor(t *testing.T) {
	cases := []struct {
		name string
		in   authz.Request
		want string
	}{
		{"mcp tools/call", authz.Request{
			Sender: "wimse://a.example/agent/travel", SenderTrustDomain: "a.example", Proof: "httpsig",
			Initiator: "wimse://a.example/user-agent", InitiatorProved: true, Dialog: "d-1", LinkedFrom: "d-0",
			Txn: map[string]any{"sub": "alice"}, Method: "POST", Path: "/mcp", Protocol: "mcp", Operation: "tools/call", Name: "book",
		}, `{"subject":{"type":"workload","id":"wimse://a.example/agent/travel","properties":{"proof":"httpsig","trust_domain":"a.example"}},` +
			`"action":{"name":"tools/call","properties":{"method":"POST","protocol":"mcp"}},` +
			`"resource":{"type":"tool","id":"book","properties":{"path":"/mcp"}},` +
			`"context":{"dialog":"d-1","initiator":"wimse://a.example/user-agent","initiator_proved":true,"linked_from":"d-0","txn":{"sub":"alice"}}}`},
		{"a2a skill", authz.Request{
			Sender: "spiffe://a.example/agent", SenderTrustDomain: "a.example", Proof: "wpt",
			Method: "POST", Path: "/", Protocol: "a2a", Operation: "message/send", Name: "itinerary",
		}, `{"subject":{"type":"workload","id":"spiffe://a.example/agent","properties":{"proof":"wpt","trust_domain":"a.example"}},` +
			`"action":{"name":"message/send","properties":{"method":"POST","protocol":"a2a"}},` +
			`"resource":{"type":"skill","id":"itinerary","properties":{"path":"/"}}}`},
		{"plain http", authz.Request{
			Sender: "wimse://a.example/x", SenderTrustDomain: "a.example", Proof: "httpsig",
			Initiator: "wimse://a.example/y", Method: "GET", Path: "/orders/7",
		}, `{"subject":{"type":"workload","id":"wimse://a.example/x","properties":{"proof":"httpsig","trust_domain":"a.example"}},` +
			`"action":{"name":"GET","properties":{"method":"GET"}},` +
			`"resource":{"type":"path","id":"/orders/7","properties":{"path":"/orders/7"}},` +
			`"context":{"initiator":"wimse://a.example/y","initiator_proved":false}}`},
		{"mcp without a tool", authz.Request{
			Sender: "wimse://a.example/x", Method: "POST", Path: "/mcp", Protocol: "mcp", Operation: "tools/list",
		}, `{"subject":{"type":"workload","id":"wimse://a.example/x"},` +
			`"action":{"name":"tools/list","properties":{"method":"POST","protocol":"mcp"}},` +
			`"resource":{"type":"path","id":"/mcp","properties":{"path":"/mcp"}}}`},
	}
	for _, c := range cases {
		if got := jsonOf(t, RequestFor(&c.in)); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// The TTS mapping, exactly as docs/tts.md ("AuthZEN setup") shows it.
func TestIssuanceRequest(t *testing.T) {
	in := &authz.Issuance{
		Requester: "wimse://a.example/agent/a1", RequesterTrustDomain: "a.example", Proof: "wit_wpt",
		Audience: "a.example", Scopes: []string{"trip.read"},
		SubjectTokenType: "urn:ietf:params:oauth:token-type:access_token", SubjectIssuer: "https://idp.a.example", Subject: "alice", SubjectScopes: []string{"trip.read", "trip.book"},
		Dialog: "d-1", Details: map[string]any{"dlg": "d-1", "purpose": json.RawMessage(`"travel"`)}, RequestContext: map[string]any{"req_ip": "192.0.2.1"},
	}
	want := `{"subject":{"type":"workload","id":"wimse://a.example/agent/a1","properties":{"proof":"wit_wpt","trust_domain":"a.example"}},` +
		`"action":{"name":"issue","properties":{"replacement":false}},` +
		`"resource":{"type":"txn_token","id":"a.example","properties":{"scopes":["trip.read"]}},` +
		`"context":{"dlg":"d-1","request_context":{"req_ip":"192.0.2.1"},"request_details":{"dlg":"d-1","purpose":"travel"},` +
		`"subject_token":{"iss":"https://idp.a.example","scope":["trip.read","trip.book"],"sub":"alice","type":"urn:ietf:params:oauth:token-type:access_token"}}}`
	if got := jsonOf(t, IssuanceRequest(in)); got != want {
		t.Errorf("first:\n got %s\nwant %s", got, want)
	}
	repl := &authz.Issuance{
		Requester: "wimse://a.example/svc", Audience: "a.example", Replacement: true, Txn: "t-1",
		CallChain:        []string{"wimse://a.example/edge", "wimse://a.example/svc"},
		SubjectTokenType: "urn:ietf:params:oauth:token-type:txn_token", Subject: "alice",
	}
	want = `{"subject":{"type":"workload","id":"wimse://a.example/svc"},` +
		`"action":{"name":"issue","properties":{"replacement":true}},` +
		`"resource":{"type":"txn_token","id":"a.example","properties":{"scopes":[]}},` +
		`"context":{"call_chain":["wimse://a.example/edge","wimse://a.example/svc"],"subject_token":{"sub":"alice","type":"urn:ietf:params:oauth:token-type:txn_token"},"txn":"t-1"}}`
	if got := jsonOf(t, IssuanceRequest(repl)); got != want {
		t.Errorf("replacement:\n got %s\nwant %s", got, want)
	}
}

// WithEscapedIDs: the ids reach the PDP percent-encoded, reversibly.
func TestEscapedIDs(t *testing.T) {
	for in, want := range map[string]string{
		"wimse://a.example/agent/a1": "wimse%3A//a.example/agent/a1",
		"a.example":                  "a.example",
		"50%:#@ x\n":                 "50%25%3A%23%40%20x%0A",
		"ünï":                        "ünï",
	} {
		if got := EscapeID(in); got != want {
			t.Errorf("EscapeID(%q) = %q, want %q", in, got, want)
		}
		if got, err := url.PathUnescape(EscapeID(in)); err != nil || got != in {
			t.Errorf("not reversible: %q -> %q", in, got)
		}
	}
	p := newFakePDP(t)
	c := mustClient(t, p.srv.URL, WithEscapedIDs())
	if _, err := c.Evaluate(context.Background(), &EvaluationRequest{
		Subject: Subject{Type: "workload", ID: "wimse://a.example/a"}, Action: Action{Name: "read"}, Resource: Resource{Type: "path", ID: "/x:y"},
	}); err != nil {
		t.Fatal(err)
	}
	r := p.lastRequest()
	if r["subject"].(map[string]any)["id"] != "wimse%3A//a.example/a" || r["resource"].(map[string]any)["id"] != "/x%3Ay" {
		t.Fatalf("sent %v", r)
	}
}
