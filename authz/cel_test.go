package authz_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/condition"
	"github.com/dialogtrust/dialogtrust/errcode"
)

func fullRequest() *authz.Request {
	return &authz.Request{
		Sender: "wimse://a.example/agent/travel", SenderTrustDomain: "a.example", Proof: "httpsig",
		Initiator: "wimse://a.example/app/user", InitiatorProved: true,
		Dialog: "d-1", LinkedFrom: "d-0",
		Txn:    map[string]any{"sub": "alice", "scope": "book", "tctx": map[string]any{"dlg": "d-1"}},
		Method: "POST", Path: "/mcp", Protocol: "mcp", Operation: "tools/call", Name: "book",
	}
}

// Issue 25: each variable reaches the condition. For every variable a rule that holds
// only with the request's value allows, and the same rule refuses once that one fact
// changes: a variable that did not reach the condition fails one of the two.
func TestIssue25_EachVariableReachesTheCondition(t *testing.T) {
	cases := []struct {
		v      string
		allow  string
		change func(*authz.Request)
	}{
		{"sender", `sender == "wimse://a.example/agent/travel"`, func(r *authz.Request) { r.Sender = "wimse://a.example/agent/x" }},
		{"sender_trust_domain", `sender_trust_domain == "a.example"`, func(r *authz.Request) { r.SenderTrustDomain = "b.example" }},
		{"proof", `proof == "httpsig"`, func(r *authz.Request) { r.Proof = "wpt" }},
		{"initiator", `initiator == "wimse://a.example/app/user"`, func(r *authz.Request) { r.Initiator = "" }},
		{"initiator_proved", `initiator_proved`, func(r *authz.Request) { r.InitiatorProved = false }},
		{"dialog", `dialog == "d-1"`, func(r *authz.Request) { r.Dialog = "d-2" }},
		{"linked_from", `linked_from == "d-0"`, func(r *authz.Request) { r.LinkedFrom = "" }},
		{"txn", `txn.sub == "alice" && txn.tctx.dlg == dialog`, func(r *authz.Request) { r.Txn = map[string]any{"sub": "bob", "tctx": map[string]any{"dlg": "d-1"}} }},
		{"method", `method == "POST"`, func(r *authz.Request) { r.Method = "GET" }},
		{"path", `path.startsWith("/mcp")`, func(r *authz.Request) { r.Path = "/admin" }},
		{"protocol", `protocol == "mcp"`, func(r *authz.Request) { r.Protocol = "a2a" }},
		{"operation", `operation == "tools/call"`, func(r *authz.Request) { r.Operation = "tools/list" }},
		{"name", `name in ["book", "search"]`, func(r *authz.Request) { r.Name = "delete" }},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.v] = true
		rs, err := authz.NewRules([]authz.Rule{{Name: c.v, Allow: c.allow}})
		if err != nil {
			t.Fatalf("%s: %v", c.v, err)
		}
		r := fullRequest()
		d, err := rs.Decide(context.Background(), r)
		if err != nil || !d.Allow || d.Rule != c.v {
			t.Errorf("%s: %+v %v, want allowed by %s", c.v, d, err, c.v)
		}
		c.change(r)
		if d, err := rs.Decide(context.Background(), r); err != nil || d.Allow {
			t.Errorf("%s changed: %+v %v, want refused", c.v, d, err)
		}
	}
	for _, v := range authz.Vars() {
		if !seen[v.Name] {
			t.Errorf("variable %s has no case", v.Name)
		}
	}
}

func TestIssue25_FirstMatchingRuleAllowsNoneRefuses(t *testing.T) {
	rs, err := authz.NewRules([]authz.Rule{
		{Name: "search-for-all", Allow: `operation == "tools/call" && name == "search"`},
		{Name: "book-for-travel", Allow: `operation == "tools/call" && name == "book" && sender == "wimse://a.example/agent/travel"`},
		{Name: "any-tool", Allow: `operation == "tools/call"`},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := fullRequest()
	if d, err := rs.Decide(context.Background(), r); err != nil || !d.Allow || d.Rule != "book-for-travel" {
		t.Fatalf("%+v %v", d, err)
	}
	r.Operation = "tools/list"
	d, err := authz.Check(context.Background(), rs, r)
	if errcode.CodeOf(err) != errcode.NotAuthorized || d.Allow || d.Rule != "" {
		t.Fatalf("nothing matching refuses: %+v %v", d, err)
	}
}

// Issue 25: a rule that cannot be evaluated refuses, with decision_unavailable, and a
// later rule that would allow is not asked.
func TestIssue25_ConditionThatCannotBeEvaluatedRefuses(t *testing.T) {
	rs, err := authz.NewRules([]authz.Rule{
		{Name: "needs-scope", Allow: `txn.scope == "book"`},
		{Name: "all", Allow: `true`},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := fullRequest()
	r.Txn = nil // no Txn-Token: txn.scope is a missing key
	d, err := authz.Check(context.Background(), rs, r)
	if errcode.CodeOf(err) != errcode.DecisionUnavailable || errcode.KindOf(err) != errcode.Incomplete || d.Allow || d.Rule != "needs-scope" {
		t.Fatalf("%+v %v", d, err)
	}
	if !strings.Contains(d.Reason, string(errcode.ConditionError)) {
		t.Fatalf("the reason says why: %q", d.Reason)
	}
	// has() is the way to write it.
	rs, _ = authz.NewRules([]authz.Rule{{Name: "scope", Allow: `has(txn.scope) && txn.scope == "book"`}})
	if d, err := rs.Decide(context.Background(), r); err != nil || d.Allow {
		t.Fatalf("%+v %v", d, err)
	}
}

func TestIssue25_CostLimitRefuses(t *testing.T) {
	rs, err := authz.NewRules([]authz.Rule{{Name: "costly", Allow: `[1,2,3,4,5,6,7,8].all(x, [1,2,3,4,5,6,7,8].all(y, path.size() + x + y > 0))`}},
		condition.WithCostLimit(20))
	if err != nil {
		t.Fatal(err)
	}
	_, err = authz.Check(context.Background(), rs, fullRequest())
	if errcode.CodeOf(err) != errcode.DecisionUnavailable {
		t.Fatalf("%v", err)
	}
	var e *errcode.Error
	if !errors.As(errors.Unwrap(err), &e) || e.Code != errcode.ConditionNotEvaluated {
		t.Fatalf("the cause is the cost limit: %v", err)
	}
}

func TestIssue25_TypeErrorAtLoadNamesFileAndLine(t *testing.T) {
	_, err := authz.NewRules([]authz.Rule{{Name: "typo", Allow: `sendr == "x"`,
		Source: condition.Source{File: "proxy.yaml", Line: 12, Field: "ingress.authorize[0].allow"}}})
	var ce *condition.CompileError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "proxy.yaml:12") || !strings.Contains(err.Error(), "ingress.authorize[0].allow") {
		t.Fatalf("%v", err)
	}
	if _, err := authz.NewRules([]authz.Rule{{Name: "not-bool", Allow: `name`}}); !errors.As(err, &ce) {
		t.Fatalf("a string result is not a condition: %v", err)
	}
	for _, rules := range [][]authz.Rule{
		{{Allow: "true"}},
		{{Name: "a", Allow: "true"}, {Name: "a", Allow: "false"}},
		{{Name: "a"}},
	} {
		if _, err := authz.NewRules(rules); err == nil {
			t.Errorf("%+v: accepted", rules)
		}
	}
}

func TestAllAndLogged(t *testing.T) {
	allow := authz.DeciderFunc(func(context.Context, *authz.Request) (authz.Decision, error) {
		return authz.Decision{Allow: true, Rule: "a"}, nil
	})
	deny := authz.DeciderFunc(func(context.Context, *authz.Request) (authz.Decision, error) {
		return authz.Decision{Rule: "pdp", Reason: "secret"}, nil
	})
	ctx := context.Background()
	if d, _ := authz.All(allow, deny).Decide(ctx, fullRequest()); d.Allow || d.Rule != "pdp" {
		t.Fatalf("%+v", d)
	}
	if d, _ := authz.All().Decide(ctx, fullRequest()); d.Allow {
		t.Fatal("no decider allows nothing")
	}
	if d, _ := authz.All(allow, allow).Decide(ctx, fullRequest()); !d.Allow {
		t.Fatal("all allow")
	}
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, nil))
	if d, _ := authz.Logged(deny, l).Decide(ctx, fullRequest()); d.Allow {
		t.Fatal(d)
	}
	if out := buf.String(); !strings.Contains(out, "rule=pdp") || !strings.Contains(out, "reason=secret") || !strings.Contains(out, "name=book") {
		t.Fatalf("log: %s", out)
	}
}
