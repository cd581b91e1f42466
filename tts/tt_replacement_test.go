package tts

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// original gets a first Txn-Token for alice in dialog D1 with two scopes.
func (e *env) original(w *testkit.Workload) (string, *txntoken.Claims) {
	e.t.Helper()
	resp, c := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read trip.book", SubjectToken: e.accessToken("alice", "trip.read trip.book", 0),
		SubjectTokenType: TokenTypeAccessToken, Dialog: "D1", Details: map[string]any{"purpose": "book"}})
	return resp.AccessToken, c
}

func (e *env) replace(w *testkit.Workload, tok, scope string, details map[string]any) (*txntoken.Claims, error) {
	resp, err := e.request(w, txntoken.Request{Audience: tdA, Scope: scope, SubjectToken: tok, SubjectTokenType: TokenTypeTxnToken, Details: details})
	if err != nil {
		return nil, err
	}
	return e.verify(resp.AccessToken, tdA), nil
}

// oauth.md 1.8, row "narrow asserted values, or add new ones: MAY".
func TestTT1_8_ReplacementNarrowsAndAdds(t *testing.T) {
	e := newEnv(t)
	tok, in := e.original(e.workload("/agent/a1"))
	out, err := e.replace(e.workload("/agent/a2"), tok, "trip.read", map[string]any{"order_id": "o-1"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Scope != "trip.read" || out.Tctx["order_id"] != "o-1" || out.Tctx["purpose"] != "book" || out.Dialog() != in.Dialog() {
		t.Fatalf("claims %+v", out)
	}
}

// oauth.md 1.8, row "expand permitted actions: MUST NOT": scope only narrows.
func TestTT1_8_ReplacementNeverWidensScope(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	tok, _ := e.original(w)
	narrow, _ := e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeTxnToken})
	status, _, body := e.rawPost(w, baseForm(tdA, "trip.read trip.book", narrow.AccessToken, TokenTypeTxnToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidScope, errcode.ScopeTooBroad)
}

// oauth.md 1.8, row "change txn, sub or aud: MUST NOT".
func TestTT1_8_ReplacementNeverChangesTxnSubAud(t *testing.T) {
	e := newEnv(t)
	multi := e.workload("/agent/multi")
	tok, in := e.original(multi)
	out, err := e.replace(e.workload("/agent/a2"), tok, "trip.read", nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Txn != in.Txn || out.Sub != in.Sub || out.Aud[0] != in.Aud[0] {
		t.Fatalf("in %+v out %+v", in, out)
	}
	// Another served trust domain, by a workload that may request for both.
	_, err = e.request(multi, txntoken.Request{Audience: tdB, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeTxnToken})
	wantCode(t, err, errcode.ImmutableClaimChanged)
	// Asking to change sub or txn through request_details.
	for _, name := range []string{"sub", "txn"} {
		_, err = e.replace(multi, tok, "trip.read", map[string]any{name: "admin"})
		wantCode(t, err, errcode.ImmutableClaimChanged)
	}
	// The final check catches a change whatever produced it.
	changed := *out
	changed.Sub = "mallory"
	wantCode(t, checkReplacement(in, &changed, 3), errcode.ImmutableClaimChanged)
	changed = *out
	changed.Txn = newTxn()
	wantCode(t, checkReplacement(in, &changed, 3), errcode.ImmutableClaimChanged)
}

// oauth.md 1.8 and dialog-binding section 10: tctx.dlg never changes.
func TestTT1_8_ReplacementNeverChangesDialog(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	tok, in := e.original(w)
	status, _, body := e.rawPost(w, func() map[string][]string {
		f := baseForm(tdA, "trip.read", tok, TokenTypeTxnToken)
		f.Set("request_details", `{"dlg":"D2"}`)
		return f
	}(), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.DialogMismatch)
	// Restating the same dialog is fine; so is a member that is not there yet.
	out, err := e.replace(w, tok, "trip.read", map[string]any{"dlg": "D1"})
	if err != nil || out.Dialog() != "D1" {
		t.Fatalf("%v %+v", err, out)
	}
	// Other tctx members are immutable too.
	_, err = e.replace(w, tok, "trip.read", map[string]any{"purpose": "cancel"})
	wantCode(t, err, errcode.ImmutableClaimChanged)
	changed := *out
	changed.Tctx = map[string]any{"dlg": "D2", "purpose": "book"}
	wantCode(t, checkReplacement(in, &changed, 3), errcode.DialogMismatch)
}

// oauth.md 1.8: rctx values the gateway asserted (req_ip) cannot be changed later.
func TestTT1_8_ReplacementKeepsRequestContext(t *testing.T) {
	e := newEnv(t)
	gw := e.workload("/edge-gateway")
	resp, _ := e.mustRequest(gw, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken, Context: map[string]any{"req_ip": "192.0.2.7"}})
	_, err := e.request(gw, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: resp.AccessToken, SubjectTokenType: TokenTypeTxnToken, Context: map[string]any{"req_ip": "198.51.100.1"}})
	wantCode(t, err, errcode.ImmutableClaimChanged)
	out, err := e.replace(e.workload("/agent/a1"), resp.AccessToken, "trip.read", nil)
	if err != nil || out.Rctx["req_ip"] != "192.0.2.7" {
		t.Fatalf("%v %+v", err, out)
	}
}

// oauth.md 1.8, row "replace an expired Txn-Token: MUST NOT".
func TestTT1_8_NeverReplaceExpiredToken(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	tok, _ := e.original(w)
	e.clock.Advance(DefaultLifetime + time.Minute)
	status, _, body := e.rawPost(w, baseForm(tdA, "trip.read", tok, TokenTypeTxnToken), nil)
	wantOAuth(t, status, body, http.StatusBadRequest, oauth.ErrInvalidRequest, errcode.Expired)
}

// oauth.md 1.8, rows "longer lifetime: MAY" and "limit the replacements that extend
// lifetime: SHOULD": each extension counts in ext; at the cap the input's exp is kept.
func TestTT1_8_LifetimeExtensionsCapped(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Policy.MaxLifetimeExtensions = 2 })
	w := e.workload("/agent/a1")
	tok, c := e.original(w)
	for i := 1; i <= 4; i++ {
		e.clock.Advance(time.Minute)
		resp, err := e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeTxnToken})
		if err != nil {
			t.Fatal(err)
		}
		out := e.verify(resp.AccessToken, tdA)
		switch {
		case i <= 2 && (out.Ext != i || int64(*out.Exp) != e.clock.Now().Add(DefaultLifetime).Unix()):
			t.Fatalf("replacement %d: ext %d exp %d", i, out.Ext, *out.Exp)
		case i > 2 && (out.Ext != 2 || *out.Exp != *c.Exp):
			t.Fatalf("replacement %d past the cap: ext %d exp %d, input exp %d", i, out.Ext, *out.Exp, *c.Exp)
		}
		tok, c = resp.AccessToken, out
	}
	// A shorter replacement does not count.
	e2 := newEnv(t)
	tok2, _ := e2.original(e2.workload("/agent/a1"))
	out, _ := e2.replace(e2.workload("/agent/a1"), tok2, "trip.read", nil)
	if out.Ext != 0 {
		t.Fatalf("ext %d for a replacement that did not extend", out.Ext)
	}
}

// oauth.md 1.8, row "keep the Call Chain of requesters: MUST": req_wl is the newest
// requester (one identifier, editor's copy) and req_chain keeps every one, oldest
// first; a -08 peer's comma list is read as a chain; the chain is capped.
func TestTT1_8_CallChainKept(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Policy.MaxCallChain = 3 })
	a1, a2, a3, a4 := e.workload("/agent/a1"), e.workload("/agent/a2"), e.workload("/agent/a3"), e.workload("/agent/a4")
	tok, _ := e.original(a1)
	var out *txntoken.Claims
	for _, w := range []*testkit.Workload{a2, a3} {
		resp, err := e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeTxnToken})
		if err != nil {
			t.Fatal(err)
		}
		tok, out = resp.AccessToken, e.verify(resp.AccessToken, tdA)
	}
	want := []string{a1.ID.String(), a2.ID.String(), a3.ID.String()}
	if out.ReqWL != a3.ID.String() || !slices.Equal(out.ReqChain, want) || !slices.Equal(out.CallChain(), want) {
		t.Fatalf("req_wl %q chain %v", out.ReqWL, out.ReqChain)
	}
	_, err := e.request(a4, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeTxnToken})
	wantCode(t, err, errcode.ReplacementLimitReached)
	legacy := &txntoken.Claims{ReqWL: a1.ID.String() + "," + a2.ID.String()}
	if got := legacy.CallChain(); !slices.Equal(got, want[:2]) {
		t.Fatalf("-08 req_wl read as %v", got)
	}
	dropped := *out
	dropped.ReqChain = []string{a3.ID.String(), a4.ID.String()}
	iat := jose.NumericDate(0)
	dropped.Iat = &iat
	wantCode(t, checkReplacement(out, &dropped, 3), errcode.ImmutableClaimChanged)
}

// oauth.md 1.8: the TTS replaces only its own tokens: a Txn-Token signed by another key
// is refused.
func TestTT1_8_ReplaceOnlyOwnTokens(t *testing.T) {
	e, other := newEnv(t), newEnv(t)
	tok, _ := other.original(other.workload("/agent/a1"))
	_, err := e.request(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeTxnToken})
	if err == nil {
		t.Fatal("a foreign Txn-Token was replaced")
	}
}
