package testbed_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// WithClock runs the whole world on the clock: a day in the past, the WIT issuer, its
// client, the TTS and its checks of the WIT and the proof all agree, the Txn-Token is
// issued at the clock's time, and it expires when the clock moves past it (not when
// the real time does).
func TestWithClockRunsTheWorld(t *testing.T) {
	clock := testkit.NewClock(time.Now().Add(-24 * time.Hour).Truncate(time.Second))
	w, err := testbed.Start(t.Context(), testbed.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	planner := w.A.Workload("/agent/planner")
	tok, err := w.A.TxnToken(t.Context(), planner, "alice@a.example", testbed.Scope, agent.NewDialogID())
	if err != nil {
		t.Fatalf("a world a day in the past: %v", err)
	}
	onClock := txntoken.NewVerifier(w.A.TTSKeys(t.Context()), w.A.Name, txntoken.WithClock(clock.Now))
	c, err := onClock.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.Iat == nil || c.Exp == nil || int64(*c.Iat) != clock.Now().Unix() {
		t.Fatalf("issued at %v, want the clock's %d", c.Iat, clock.Now().Unix())
	}
	if _, err := txntoken.NewVerifier(w.A.TTSKeys(t.Context()), w.A.Name).Verify(t.Context(), tok); errcode.CodeOf(err) != errcode.Expired {
		t.Fatalf("on the real clock: %v, want expired", err)
	}
	clock.Advance(time.Duration(*c.Exp-*c.Iat)*time.Second + time.Hour)
	if _, err := onClock.Verify(t.Context(), tok); errcode.CodeOf(err) != errcode.Expired {
		t.Fatalf("after the clock passed its expiry: %v, want expired", err)
	}
}

// WithMiddleware wraps every server the world starts, each named by its domain and
// role, the third domain's too.
func TestWithMiddlewareWrapsEveryServer(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	w, err := testbed.Start(t.Context(), testbed.WithDomainC(), testbed.WithMiddleware(func(domain, server string, next http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[domain+" "+server]++
			mu.Unlock()
			next.ServeHTTP(rw, r)
		})
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, d := range []*testbed.Domain{w.A, w.B, w.C} {
		for _, u := range []string{d.WITURL, d.TTSURL} {
			res, err := http.Get(u + "/.well-known/jwks.json")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		}
	}
	for _, d := range []string{"a.example", "b.example", "c.example"} {
		for _, s := range []string{testbed.ServerWITIssuer, testbed.ServerTTS} {
			if seen[d+" "+s] != 1 {
				t.Errorf("%s %s: wrapped %d requests, want 1 (%v)", d, s, seen[d+" "+s], seen)
			}
		}
	}
}

// WithScopes are the scopes AS A lets cross to AS B: without it only Scope does.
func TestWithScopesLetsThemCross(t *testing.T) {
	for _, tc := range []struct {
		opts []testbed.Option
		want errcode.Code
	}{{nil, errcode.ScopeTooBroad}, {[]testbed.Option{testbed.WithScopes("trip.read", testbed.Scope)}, ""}} {
		w, err := testbed.Start(t.Context(), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		planner := w.A.Workload("/agent/planner")
		txn, err := w.A.TxnToken(t.Context(), planner, "alice@a.example", "trip.read", agent.NewDialogID())
		if err != nil {
			t.Fatal(err)
		}
		_, err = (&chaining.Client{WITSource: planner.Source}).Grant(t.Context(), chaining.GrantParams{TokenEndpoint: w.A.TokenEndpoint(), TxnToken: txn, Audience: w.B.TTSURL})
		w.Close()
		if errcode.CodeOf(err) != tc.want {
			t.Fatalf("options %d: a grant for trip.read: %v, want %q", len(tc.opts), err, tc.want)
		}
	}
}
