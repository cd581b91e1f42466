package proxyservice

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/errcode"

	"github.com/dialogtrust/dialogtrust/authzen"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
)

// Issue 25: ingress.authzen is checked by -check-config (https, or http on loopback
// only) and yields an authz.Decider over the PDP.
func TestProxyIngressAuthZEN(t *testing.T) {
	expectCheckConfig(t, "https PDP", checkedIngressYAML+"  authzen:\n    url: https://pdp.a.example\n    cache_ttl: 10s\n", "")
	expectCheckConfig(t, "loopback PDP", checkedIngressYAML+"  authzen: {url: \"http://127.0.0.1:8080/stores/x\", escape_ids: true}\n", "")
	expectCheckConfig(t, "plain http PDP", checkedIngressYAML+"  authzen: {url: \"http://pdp.a.example\"}\n", "ingress.authzen.url")
	expectCheckConfig(t, "no url", checkedIngressYAML+"  authzen: {timeout: 1s}\n", "ingress.authzen: url")

	in := &IngressConfig{AuthZEN: &kit.AuthZENConfig{URL: "https://pdp.a.example"}}
	d, err := openIngressDecider(in)
	if zd, ok := d.(authzen.Decider); err != nil || !ok || zd.Client.PDP() != "https://pdp.a.example" {
		t.Fatalf("decider: %#v %v", d, err)
	}
	if d, err := openIngressDecider(&IngressConfig{}); d != nil || err != nil {
		t.Fatalf("without the section: %v %v", d, err)
	}
}

// Issue 25: the ingress's receiver asks the PDP of ingress.authzen, and with allow
// rules as well both must allow (authz.All): a deny of either refuses, and a PDP that
// does not answer is decision_unavailable, never an allow.
func TestProxyIngressAuthZENEnforced(t *testing.T) {
	var allow atomic.Bool
	pdp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"decision":%t}`, allow.Load())
	}))
	defer pdp.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	ask := func(cfg *Config) (authz.Decision, error) {
		t.Helper()
		d, err := ingressAuthorizer(cfg, slog.New(slog.DiscardHandler))
		if err != nil || d == nil {
			t.Fatalf("authorizer: %v %v", d, err)
		}
		return authz.Check(context.Background(), d, &authz.Request{Sender: "wimse://a.example/agent/a1", Method: "POST", Path: "/mcp",
			Protocol: "mcp", Operation: "tools/call", Name: "book"})
	}
	withPDP := func(url string, rules ...AuthorizeRule) *Config {
		return &Config{Ingress: &IngressConfig{Authorize: rules, AuthZEN: &kit.AuthZENConfig{URL: url, EvaluationURL: url + "/access/v1/evaluation"}}}
	}
	allow.Store(true)
	if _, err := ask(withPDP(pdp.URL)); err != nil {
		t.Fatalf("PDP allows: %v", err)
	}
	allow.Store(false)
	if _, err := ask(withPDP(pdp.URL)); errcode.CodeOf(err) != errcode.NotAuthorized {
		t.Fatalf("PDP denies: %v", err)
	}
	allow.Store(true)
	denyRule := AuthorizeRule{Name: "only-search", Allow: kit.Expr{Text: `name == "search"`}}
	if _, err := ask(withPDP(pdp.URL, denyRule)); errcode.CodeOf(err) != errcode.NotAuthorized {
		t.Fatalf("the rules deny, the PDP allows: %v", err)
	}
	if _, err := ask(withPDP(down.URL)); errcode.CodeOf(err) != errcode.DecisionUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("PDP down: %v", err)
	}
}
