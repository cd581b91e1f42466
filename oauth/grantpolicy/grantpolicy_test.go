package grantpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/oauth"
)

func compileWhen(t *testing.T, place, when, scopes string) *Conditions {
	t.Helper()
	c, err := Compile(place, Expr{Text: when}, Expr{Text: scopes}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testClient() *oauth.Client {
	return &oauth.Client{ID: identifier.MustParse("wimse://a.example/agent/a1"), Method: oauth.MethodWPT}
}

// Issue 25, cost: the rules of the CEL benchmark (docs/performance.md) are bounded at
// load over the sizes the token endpoints keep, so they run without the runtime cost
// tracker; a loop over a claim, whose length no endpoint bounds, keeps it.
func TestIssue25_PolicyCostBoundedAtLoad(t *testing.T) {
	c := compileWhen(t, PlaceIssuance,
		`requester.workload == "wimse://a.example/agent/a1" && subject.type in ["urn:ietf:params:oauth:token-type:access_token"] && subject.claims.sub == "alice"`,
		`request.scopes.filter(s, s in ["trip.read", "trip.book"])`)
	if w, static := c.when.CostBound(); !static {
		t.Errorf("when: worst case %d, not bounded", w)
	}
	if w, static := c.scopes.CostBound(); !static {
		t.Errorf("grant_scopes: worst case %d, not bounded", w)
	}
	u := compileWhen(t, PlaceChaining, `subject.claims.groups.exists(g, g == "admin")`, "")
	if _, static := u.when.CostBound(); static {
		t.Error("a loop over a claim is bounded at load")
	}
}

// The sizes of request.scopes declared to the cost estimate are kept: a request with
// more scopes than a scope parameter can carry, or a longer scope, is refused by an
// expression that reads request (condition_error), not evaluated beyond the bound.
func TestIssue25_RequestScopesBeyondDeclaredSizeRefused(t *testing.T) {
	c := compileWhen(t, PlaceIssuance, `request.scopes.all(s, s != "")`, "")
	many := make([]string, maxRequestScopes+1)
	for i := range many {
		many[i] = fmt.Sprintf("s%d", i)
	}
	for _, scopes := range [][]string{many, {strings.Repeat("x", oauth.MaxScopeSize+1)}} {
		in := NewInput(context.Background(), PlaceIssuance, &oauth.TokenRequest{Scope: scopes}, testClient(), Subject{}, nil)
		_, err := c.Holds("r", in)
		in.Close()
		if errcode.CodeOf(err) != errcode.ConditionError {
			t.Errorf("%d scopes: got %v, want condition_error", len(scopes), err)
		}
	}
	in := NewInput(context.Background(), PlaceIssuance, &oauth.TokenRequest{Scope: many[:maxRequestScopes]}, testClient(), Subject{}, nil)
	defer in.Close()
	if ok, err := c.Holds("r", in); !ok || err != nil {
		t.Fatalf("%d scopes: %v %v", maxRequestScopes, ok, err)
	}
	// The bound is that of the parser: n scope tokens take at least 2n-1 octets.
	if 2*maxRequestScopes-1 > oauth.MaxScopeSize || 2*(maxRequestScopes+1)-1 <= oauth.MaxScopeSize {
		t.Errorf("maxRequestScopes %d does not follow from MaxScopeSize %d", maxRequestScopes, oauth.MaxScopeSize)
	}
}

// The variables of one request are built once for all of its expressions, its JSON
// objects decoded only when read, and a chaining target only at a chaining server.
func TestIssue25_InputVariables(t *testing.T) {
	claims := NewClaims([]byte(`{"sub":"alice","dept":"sales","n":3}`))
	subj := &Subject{Type: "urn:ietf:params:oauth:token-type:access_token", Issuer: "https://idp", Sub: "user:alice", Scopes: []string{"trip.read"}, Claims: claims}
	tr := &oauth.TokenRequest{Audience: "wimse://a.example", Scope: []string{"trip.read"}}
	c := compileWhen(t, PlaceChaining,
		`requester.trust_domain == "a.example" && subject.claims.dept == "sales" && subject.claims.n == 3 && target.peer == "https://b" && "x" in target.audience && !input.present && size(request.details) == 0`,
		`subject.scopes`)
	in := NewInput(context.Background(), PlaceChaining, tr, testClient(), *subj, &Target{Peer: "https://b", Audience: []string{"x"}})
	defer in.Close()
	if ok, err := c.Holds("r", in); !ok || err != nil {
		t.Fatalf("Holds = %v, %v", ok, err)
	}
	if got, err := c.Narrow("r", in, []string{"trip.read", "trip.book"}); err != nil || len(got) != 1 || got[0] != "trip.read" {
		t.Fatalf("Narrow = %v, %v", got, err)
	}
	// At the TTS there is no target: an expression naming it does not compile.
	if _, err := Compile(PlaceIssuance, Expr{Text: `target.peer == ""`}, Expr{}, nil); err == nil {
		t.Error("target compiled at the TTS")
	}
}

// The struct of a request's variables serves the next request once the Input is
// closed: a request reads its own request_details, never the previous one's.
func TestIssue25_RequestVariablesNotCarriedOver(t *testing.T) {
	c := compileWhen(t, PlaceIssuance, `has(request.details.b) && !has(request.details.a) && request.details.b == 2`, "")
	for i, details := range []map[string]json.RawMessage{{"a": json.RawMessage(`1`)}, {"b": json.RawMessage(`2`)}, {"a": json.RawMessage(`1`)}} {
		in := NewInput(context.Background(), PlaceIssuance, &oauth.TokenRequest{RequestDetails: details}, testClient(), Subject{}, nil)
		ok, err := c.Holds("r", in)
		in.Close()
		if err != nil || ok != (i == 1) {
			t.Fatalf("request %d: %v %v", i, ok, err)
		}
	}
}

// A cached token's claims serve the requests of several goroutines at once: decoded
// once, read concurrently (go test -race).
func TestIssue25_SharedClaimsConcurrently(t *testing.T) {
	claims := NewClaims([]byte(`{"sub":"alice","groups":["a","b"]}`))
	c := compileWhen(t, PlaceIssuance, `subject.claims.sub == "alice" && "b" in subject.claims.groups`, `request.scopes.filter(s, s != "x")`)
	done := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 50; i++ {
				in := NewInput(context.Background(), PlaceIssuance, &oauth.TokenRequest{Scope: []string{"a", "x"}}, testClient(), Subject{Claims: claims}, nil)
				ok, err := c.Holds("r", in)
				if err == nil && !ok {
					err = fmt.Errorf("the condition does not hold")
				}
				if err == nil {
					var sc []string
					if sc, err = c.Narrow("r", in, []string{"a", "x"}); err == nil && len(sc) != 1 {
						err = fmt.Errorf("narrowed to %v", sc)
					}
				}
				in.Close()
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
