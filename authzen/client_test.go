package authzen

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/problem"
)

// Section 6: the request is the 4-tuple with the specification's member names, and the
// decision is the response's boolean; section 5.5.1: the reason is returned for the log.
func TestAuthZEN6_AllowAndDeny(t *testing.T) {
	p := newFakePDP(t)
	c := mustClient(t, p.srv.URL)
	ctx := context.Background()
	in := &EvaluationRequest{
		Subject:  Subject{Type: "workload", ID: "wimse://a.example/agent/a1", Properties: map[string]any{"trust_domain": "a.example"}},
		Action:   Action{Name: "read", Properties: map[string]any{"method": "POST"}},
		Resource: Resource{Type: "tool", ID: "book", Properties: map[string]any{"path": "/mcp"}},
		Context:  map[string]any{"dialog": "d-1"},
	}
	d, err := c.Evaluate(ctx, in)
	if err != nil || !d.Allow || d.Rule != "authzen "+p.srv.URL || !strings.Contains(d.Reason, "C076E82F") {
		t.Fatalf("allow: %+v %v", d, err)
	}
	got, _ := json.Marshal(p.lastRequest())
	want := `{"action":{"name":"read","properties":{"method":"POST"}},"context":{"dialog":"d-1"},"resource":{"id":"book","properties":{"path":"/mcp"},"type":"tool"},"subject":{"id":"wimse://a.example/agent/a1","properties":{"trust_domain":"a.example"},"type":"workload"}}`
	if string(got) != want {
		t.Fatalf("sent %s\nwant %s", got, want)
	}
	d, err = c.Evaluate(ctx, readReq("wimse://a.example/agent/a1", "write"))
	if err != nil || d.Allow {
		t.Fatalf("deny: %+v %v", d, err)
	}
	// Through authz.Check, a deny is not_authorized and the reason stays out of the
	// refusal that is sent.
	_, err = authz.Check(ctx, Decider{Client: c}, &authz.Request{Sender: "wimse://a.example/x", Method: "DELETE", Path: "/"})
	if errcode.CodeOf(err) != errcode.NotAuthorized || strings.Contains(problem.From(err).Detail, "C076E82F") || strings.Contains(err.Error(), "C076E82F") {
		t.Fatalf("deny through Check: %v", err)
	}
}

// Section 6.1: subject, action and resource with their REQUIRED members; a request
// without them is not sent.
func TestAuthZEN6_1_RequiredMembers(t *testing.T) {
	p := newFakePDP(t)
	c := mustClient(t, p.srv.URL)
	for _, r := range []*EvaluationRequest{
		{Action: Action{Name: "read"}, Resource: Resource{Type: "t", ID: "i"}},
		{Subject: Subject{Type: "workload", ID: "w"}, Resource: Resource{Type: "t", ID: "i"}},
		{Subject: Subject{Type: "workload", ID: "w"}, Action: Action{Name: "read"}, Resource: Resource{Type: "t"}},
	} {
		if _, err := c.Evaluate(context.Background(), r); err == nil {
			t.Fatalf("sent %+v", r)
		}
	}
	if p.evaluations.Load() != 0 {
		t.Fatal("an incomplete request reached the PDP")
	}
}

// Fail closed: a PDP that cannot be reached, times out, answers a status other than
// 200 or redirects gives an error, never a decision; through authz.Check that is
// decision_unavailable, kind incomplete, 503.
func TestAuthZEN_FailClosed(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, c *Client) {
		t.Helper()
		d, err := c.Evaluate(ctx, readReq("w", "read"))
		if err == nil || d.Allow {
			t.Fatalf("got %+v %v", d, err)
		}
		_, err = authz.Check(ctx, Decider{Client: c}, &authz.Request{Sender: "w", Method: "GET", Path: "/"})
		if errcode.CodeOf(err) != errcode.DecisionUnavailable || problem.Status(err) != http.StatusServiceUnavailable {
			t.Fatalf("through Check: %v", err)
		}
	}
	t.Run("unreachable", func(t *testing.T) {
		p := newFakePDP(t)
		url := p.srv.URL
		p.srv.Close()
		check(t, mustClient(t, url))
	})
	for _, status := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusFound} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			p := newFakePDP(t)
			p.answer = func(w http.ResponseWriter, _ map[string]any) {
				w.Header().Set("Location", "/access/v1/evaluation")
				w.WriteHeader(status)
				_, _ = w.Write([]byte(`{"decision":true}`))
			}
			check(t, mustClient(t, p.srv.URL))
		})
	}
	t.Run("timeout", func(t *testing.T) {
		p := newFakePDP(t)
		release := make(chan struct{})
		defer close(release)
		p.answer = func(w http.ResponseWriter, _ map[string]any) { <-release }
		check(t, mustClient(t, p.srv.URL, WithTimeout(50*time.Millisecond)))
	})
}

// Fail closed on what the PDP says: anything but a JSON object with a boolean decision,
// and anything over the size bound, is an error.
func TestAuthZEN6_2_MalformedAndOversized(t *testing.T) {
	for name, body := range map[string]string{
		"empty":            ``,
		"not json":         `decision: true`,
		"array":            `[{"decision":true}]`,
		"no decision":      `{"context":{}}`,
		"string decision":  `{"decision":"true"}`,
		"number decision":  `{"decision":1}`,
		"null decision":    `{"decision":null}`,
		"decision twice":   `{"decision":false,"decision":true}`,
		"folded name":      `{"Decision":true}`,
		"trailing garbage": `{"decision":true} {"decision":true}`,
		"oversized":        `{"decision":true,"context":{"pad":"` + strings.Repeat("x", DefaultMaxResponse) + `"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			p := newFakePDP(t)
			p.answer = func(w http.ResponseWriter, _ map[string]any) { _, _ = w.Write([]byte(body)) }
			c := mustClient(t, p.srv.URL, WithCache(10, time.Minute))
			d, err := c.Evaluate(context.Background(), readReq("w", "read"))
			if err == nil || d.Allow {
				t.Fatalf("got %+v %v", d, err)
			}
			if c.CacheLen() != 0 {
				t.Fatal("an error was cached")
			}
		})
	}
	t.Run("oversized without length", func(t *testing.T) {
		p := newFakePDP(t)
		p.answer = func(w http.ResponseWriter, _ map[string]any) {
			_, _ = w.Write([]byte(`{"decision":true,"context":{"pad":"`))
			w.(http.Flusher).Flush() // chunked: no Content-Length
			_, _ = w.Write([]byte(strings.Repeat("x", 2*DefaultMaxResponse) + `"}}`))
		}
		if d, err := mustClient(t, p.srv.URL).Evaluate(context.Background(), readReq("w", "read")); err == nil || d.Allow {
			t.Fatalf("got %+v %v", d, err)
		}
	})
}

func TestNewRefusesBadConfiguration(t *testing.T) {
	for _, c := range []struct {
		pdp  string
		opts []Option
	}{
		{"pdp.example", nil},
		{"ftp://pdp.example", nil},
		{"https://user@pdp.example", nil},
		{"https://pdp.example?x=1", nil},
		{"https://pdp.example", []Option{WithTimeout(0)}},
		{"https://pdp.example", []Option{WithCache(10, 0)}},
		{"https://pdp.example", []Option{WithCache(-1, time.Second)}},
		{"https://pdp.example", []Option{WithEvaluationEndpoint("/relative")}},
	} {
		if _, err := New(c.pdp, c.opts...); err == nil {
			t.Errorf("New(%q) accepted", c.pdp)
		}
	}
}

// Section 5: properties and context are JSON objects; anything else is not sent.
func TestAuthZEN5_PropertiesAreObjects(t *testing.T) {
	p := newFakePDP(t)
	c := mustClient(t, p.srv.URL)
	for _, r := range []*EvaluationRequest{
		{Subject: Subject{Type: "w", ID: "w", Properties: "x"}, Action: Action{Name: "read"}, Resource: Resource{Type: "t", ID: "i"}},
		{Subject: Subject{Type: "w", ID: "w"}, Action: Action{Name: "read", Properties: []string{"x"}}, Resource: Resource{Type: "t", ID: "i"}},
		{Subject: Subject{Type: "w", ID: "w"}, Action: Action{Name: "read"}, Resource: Resource{Type: "t", ID: "i", Properties: 1}},
		{Subject: Subject{Type: "w", ID: "w"}, Action: Action{Name: "read"}, Resource: Resource{Type: "t", ID: "i"}, Context: map[int]any{1: 1}},
	} {
		if _, err := c.Evaluate(context.Background(), r); err == nil {
			t.Errorf("sent %+v", r)
		}
	}
	if p.evaluations.Load() != 0 {
		t.Fatal("a request whose members are not objects reached the PDP")
	}
}
