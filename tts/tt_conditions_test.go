package tts

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/condition"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Issue 25: CEL conditions in issuance policy. Each test names the acceptance point it
// proves.

// condEnv is newEnv with rules put before the defaults of the test environment.
func condEnv(t *testing.T, rules ...Rule) *env {
	t.Helper()
	return newEnv(t, func(c *Config) { c.Policy.Rules = append(rules, c.Policy.Rules...) })
}

func when(expr string) Expr {
	return Expr{Text: expr, Source: condition.Source{File: "test.yaml", Line: 1}}
}

// accessTokenWith is accessToken with extra claims.
func (e *env) accessTokenWith(sub, scope string, extra map[string]any) string {
	e.t.Helper()
	now := e.clock.Now()
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(time.Hour).Unix())
	c := map[string]any{"iss": idpIss, "sub": sub, "aud": "https://api.a.example", "iat": &iat, "exp": &exp, "scope": scope}
	for k, v := range extra {
		c[k] = v
	}
	tok, err := jose.SignClaims("at+jwt", e.idpKey, true, c)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

func (e *env) at(sub, scope string, extra map[string]any) txntoken.Request {
	return txntoken.Request{Audience: tdA, Scope: scope, SubjectToken: e.accessTokenWith(sub, scope, extra), SubjectTokenType: TokenTypeAccessToken}
}

// The requester variable: workload, trust domain and proof method.
func TestIssue25_ConditionRequester(t *testing.T) {
	e := condEnv(t, Rule{Name: "a1 by wpt", Workload: "wimse://a.example/agent/",
		When: when(`requester.workload.endsWith("/a1") && requester.trust_domain == "a.example" && requester.proof == "wit_wpt"`)})
	if _, err := e.request(e.workload("/agent/a1"), e.at("alice", "trip.read", nil)); err != nil {
		t.Fatalf("a1: %v", err)
	}
	_, err := e.request(e.workload("/agent/a2"), e.at("alice", "trip.read", nil))
	wantCode(t, err, errcode.WorkloadNotAllowed)
	if !strings.Contains(e.logs.String(), `"rule":"a1 by wpt"`) {
		t.Errorf("the decision log does not name the rule:\n%s", e.logs)
	}
}

// The subject variable: type, issuer, sub and claims.
func TestIssue25_ConditionSubject(t *testing.T) {
	e := condEnv(t, Rule{Name: "sales", Workload: "wimse://a.example/agent/a1",
		When: when(`subject.type == "urn:ietf:params:oauth:token-type:access_token" && subject.issuer == "https://idp.a.example" && subject.sub == "alice" && subject.claims.dept == "sales" && "trip.read" in subject.scopes`)})
	w := e.workload("/agent/a1")
	if _, err := e.request(w, e.at("alice", "trip.read", map[string]any{"dept": "sales"})); err != nil {
		t.Fatalf("alice of sales: %v", err)
	}
	_, err := e.request(w, e.at("alice", "trip.read", map[string]any{"dept": "hr"}))
	wantCode(t, err, errcode.WorkloadNotAllowed)
	_, err = e.request(w, e.at("bob", "trip.read", map[string]any{"dept": "sales"}))
	wantCode(t, err, errcode.WorkloadNotAllowed)
	// A claim the token lacks, read without ?, is an evaluation error: the rule refuses.
	_, err = e.request(w, e.at("alice", "trip.read", nil))
	wantCode(t, err, errcode.ConditionError)
	if !strings.Contains(e.logs.String(), "condition_error") || !strings.Contains(e.logs.String(), "test.yaml:1") {
		t.Errorf("the log does not say the rule could not be evaluated, and where:\n%s", e.logs)
	}
}

// The request variable: audience, scopes, request_details with dlg, request_context.
func TestIssue25_ConditionRequest(t *testing.T) {
	e := condEnv(t,
		Rule{Name: "per dialog", Workload: "wimse://a.example/agent/a1", Details: []string{"purpose"},
			When: when(`request.audience == "a.example" && request.scopes == ["trip.read"] && request.dlg == "D1" && request.details.purpose == "book"`)},
		Rule{Name: "edge", Workload: "wimse://a.example/agent/edge", Context: []string{"req_ip"}, SubjectTokenTypes: []string{TokenTypeAccessToken},
			When: when(`request.context.req_ip.startsWith("10.")`)})
	w := e.workload("/agent/a1")
	r := e.at("alice", "trip.read", nil)
	r.Dialog, r.Details = "D1", map[string]any{"purpose": "book"}
	if _, err := e.request(w, r); err != nil {
		t.Fatalf("dialog D1: %v", err)
	}
	r.Dialog = "D2"
	_, err := e.request(w, r)
	wantCode(t, err, errcode.WorkloadNotAllowed)
	edge := e.workload("/agent/edge")
	r = e.at("alice", "trip.read", nil)
	r.Context = map[string]any{"req_ip": "10.1.2.3"}
	if _, err := e.request(edge, r); err != nil {
		t.Fatalf("edge from 10/8: %v", err)
	}
	r.Context = map[string]any{"req_ip": "192.0.2.1"}
	_, err = e.request(edge, r)
	wantCode(t, err, errcode.WorkloadNotAllowed)
}

// The input variable: the Txn-Token a replacement replaces (txn, call chain, lifetime
// extensions, its tctx).
func TestIssue25_ConditionInput(t *testing.T) {
	e := condEnv(t,
		Rule{Name: "first", Workload: "wimse://a.example/agent/a2", When: when(`!input.present`)},
		Rule{Name: "short chains in D1", Workload: "wimse://a.example/agent/a2", SubjectTokenTypes: []string{TokenTypeTxnToken},
			When: when(`input.present && input.txn != "" && input.sub == "alice" && size(input.call_chain) == 1 && input.extensions == 0 && input.tctx.dlg == "D1" && "trip.book" in input.scopes`)})
	tok, _ := e.original(e.workload("/agent/a1"))
	a2 := e.workload("/agent/a2")
	out, err := e.replace(a2, tok, "trip.read", nil)
	if err != nil {
		t.Fatalf("first replacement: %v", err)
	}
	if !strings.Contains(e.logs.String(), `"rule":"short chains in D1"`) {
		t.Errorf("the decision log does not name the deciding rule:\n%s", e.logs)
	}
	// A second replacement has a call chain of two: no rule holds.
	resp, err := e.request(a2, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.mint(out), SubjectTokenType: TokenTypeTxnToken})
	if err == nil {
		t.Fatalf("a chain of two replaced: %+v", resp)
	}
	wantCode(t, err, errcode.WorkloadNotAllowed)
}

// mint re-signs claims with the TTS key (a token as the TTS issued it).
func (e *env) mint(c *txntoken.Claims) string {
	tok, err := signClaims(e.ttsKey, c)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// Scopes narrowed by a subject claim: only the requested scopes the subject's roles
// claim names are granted, never one more.
func TestIssue25_ScopesNarrowedBySubjectClaim(t *testing.T) {
	e := condEnv(t, Rule{Name: "roles", Workload: "wimse://a.example/agent/a1",
		GrantScopes: when(`request.scopes.filter(s, s in subject.claims.roles)`)})
	w := e.workload("/agent/a1")
	_, c := e.mustRequest(w, e.at("alice", "trip.read trip.book", map[string]any{"roles": []string{"trip.read", "admin"}}))
	if c.Scope != "trip.read" {
		t.Fatalf("scope %q, want trip.read", c.Scope)
	}
	// Nothing left of the request: scope_too_broad.
	_, err := e.request(w, e.at("alice", "trip.book", map[string]any{"roles": []string{"admin"}}))
	wantCode(t, err, errcode.ScopeTooBroad)
	// An expression that names a scope not requested does not widen the grant.
	e2 := condEnv(t, Rule{Workload: "wimse://a.example/agent/a1", GrantScopes: when(`["trip.read", "admin"]`)})
	_, c = e2.mustRequest(e2.workload("/agent/a1"), e2.at("alice", "trip.read", map[string]any{"roles": []string{"admin"}}))
	if c.Scope != "trip.read" {
		t.Fatalf("scope %q, want trip.read", c.Scope)
	}
}

// tctx members computed by expression; a replacement never changes one.
func TestIssue25_TctxByExpression(t *testing.T) {
	e := condEnv(t,
		Rule{Name: "dept", Workload: "wimse://a.example/agent/a1",
			Tctx: map[string]Expr{"dept": when(`subject.claims.dept`), "who": when(`{"wl": requester.workload, "n": size(request.scopes)}`)}},
		Rule{Name: "relabel", Workload: "wimse://a.example/agent/a2", SubjectTokenTypes: []string{TokenTypeTxnToken},
			Tctx: map[string]Expr{"dept": when(`"hr"`)}})
	r := e.at("alice", "trip.read", map[string]any{"dept": "sales"})
	r.Dialog = "D1"
	resp, c := e.mustRequest(e.workload("/agent/a1"), r)
	who, _ := c.Tctx["who"].(map[string]any)
	if c.Tctx["dept"] != "sales" || who["wl"] != "wimse://a.example/agent/a1" || fmt.Sprint(who["n"]) != "1" || c.Dialog() != "D1" {
		t.Fatalf("tctx %v", c.Tctx)
	}
	_, err := e.replace(e.workload("/agent/a2"), resp.AccessToken, "trip.read", nil)
	wantCode(t, err, errcode.ImmutableClaimChanged)
	// dlg and the immutable claims are never computed.
	for _, name := range []string{"dlg", "sub", "txn", "aud"} {
		p := Policy{Rules: []Rule{{Workload: "wimse://a.example/", Tctx: map[string]Expr{name: when(`"x"`)}}}}
		if err := p.normalize(); err == nil {
			t.Errorf("tctx.%s computed by policy was accepted", name)
		}
	}
}

// A cost-limit refusal: the rule refuses as could not be completed (503), says so in
// the log, and no later rule is tried.
func TestIssue25_CostLimitRefusal(t *testing.T) {
	e := condEnv(t,
		Rule{Name: "expensive", Workload: "wimse://a.example/agent/a1",
			When: when(`lists.range(2000).map(i, lists.range(2000).filter(j, j == i)).size() == 0`)},
		Rule{Name: "fallback", Workload: "wimse://a.example/agent/a1", When: when(`true`)})
	_, err := e.request(e.workload("/agent/a1"), e.at("alice", "trip.read", nil))
	wantCode(t, err, errcode.ConditionNotEvaluated)
	if errcode.KindOf(err) != errcode.Incomplete {
		t.Errorf("kind %v, want could not be completed", errcode.KindOf(err))
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"rule":"expensive"`) || !strings.Contains(logs, "condition_not_evaluated") {
		t.Errorf("the log does not name the rule that could not be evaluated:\n%s", logs)
	}
	if strings.Contains(logs, "txn token issued") {
		t.Error("a token was issued")
	}
}

// A type error at load names the file, the line and the expression.
func TestIssue25_TypeErrorAtLoadWithFileAndLine(t *testing.T) {
	for _, r := range []Rule{
		{Workload: "wimse://a.example/", When: Expr{Text: `subject.claim.dept == "x"`, Source: condition.Source{File: "policy.yaml", Line: 7, Column: 11, Field: "policy.rules[0].when"}}},
		{Workload: "wimse://a.example/", When: Expr{Text: `request.scopes`, Source: condition.Source{File: "policy.yaml", Line: 7, Field: "policy.rules[0].when"}}},
		{Workload: "wimse://a.example/", GrantScopes: Expr{Text: `request.dlg`, Source: condition.Source{File: "policy.yaml", Line: 7, Field: "policy.rules[0].grant_scopes"}}},
	} {
		p := Policy{Rules: []Rule{r}}
		err := p.normalize()
		var ce *condition.CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "policy.yaml:7") || !strings.Contains(err.Error(), "policy.rules[0].") {
			t.Errorf("got %v, want a compile error at policy.yaml:7", err)
		}
	}
}

// Rules of one workload pattern are tried in order; one after an unconditional rule
// could never decide and is refused at load; a When never lets a request fall through
// to a broader prefix.
func TestIssue25_RulesOfOnePatternInOrder(t *testing.T) {
	p := Policy{Rules: []Rule{{Workload: "wimse://a.example/x"}, {Name: "later", Workload: "wimse://a.example/x", When: when(`true`)}}}
	if err := p.normalize(); err == nil || !strings.Contains(err.Error(), "never decide") {
		t.Errorf("an unreachable rule: %v", err)
	}
	// agent/a1 is governed by its own rule only, even where its When does not hold and
	// the prefix rule wimse://a.example/ would allow the request.
	e := condEnv(t, Rule{Name: "never", Workload: "wimse://a.example/agent/a1", When: when(`false`)})
	_, err := e.request(e.workload("/agent/a1"), e.at("alice", "trip.read", nil))
	wantCode(t, err, errcode.WorkloadNotAllowed)
	if _, err := e.request(e.workload("/agent/a2"), e.at("alice", "trip.read", nil)); err != nil {
		t.Fatalf("a2 under the prefix rule: %v", err)
	}
}

// The detail a client reads names the rule, never the policy file or the cause.
func TestIssue25_RefusalDetailNamesOnlyTheRule(t *testing.T) {
	e := condEnv(t, Rule{Name: "needs dept", Workload: "wimse://a.example/agent/a1", When: when(`subject.claims.dept == "x"`)})
	_, err := e.request(e.workload("/agent/a1"), e.at("alice", "trip.read", nil))
	wantCode(t, err, errcode.ConditionError)
	if msg := err.Error(); strings.Contains(msg, "test.yaml") || !strings.Contains(msg, "needs dept") {
		t.Errorf("client sees %q", msg)
	}
}
