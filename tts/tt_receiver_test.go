package tts

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

func (e *env) issued(dialog string) string {
	e.t.Helper()
	resp, _ := e.mustRequest(e.workload("/agent/a1"), Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken, Dialog: dialog})
	return resp.AccessToken
}

// remoteVerifier verifies through the TTS's published JWKS over HTTP.
func (e *env) remoteVerifier(t *testing.T, td string) *Verifier {
	rs, err := keys.NewRemoteSet(t.Context(), e.url+PathJWKS, keys.WithMinRefresh(time.Minute), keys.WithRefreshClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	return NewVerifier(rs, td, WithVerifierClock(e.clock.Now))
}

// oauth.md 1.10 (a): the signature, with the key the JWKS names by kid.
func TestTT1_10_SignatureVerifiedByJWKS(t *testing.T) {
	e := newEnv(t)
	v := e.remoteVerifier(t, tdA)
	tok := e.issued("D1")
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndexByte(tok, '.')
	_, err := v.Verify(t.Context(), tok[:i+1]+strings.Repeat("A", len(tok)-i-1))
	wantCode(t, err, errcode.InvalidSignature)
	// A token signed by a key the TTS does not publish.
	k, _ := keys.Generate(keys.ES256)
	forged, _ := jose.SignClaims(Type, k, true, Claims{Iat: ptr(0), Exp: ptr(1), Aud: jose.Audience{tdA}, Txn: "t", Sub: "s", Scope: "x", ReqWL: "wimse://a.example/x"})
	_, err = v.Verify(t.Context(), forged)
	wantCode(t, err, errcode.UnknownKey)
}

// oauth.md 1.10 (a) with 1.12: a rotated-in key is found by refetching the JWKS on an
// unknown kid (rate limited).
func TestTT1_10_KeyRotationRefetch(t *testing.T) {
	e := newEnv(t)
	v := e.remoteVerifier(t, tdA)
	if _, err := v.Verify(t.Context(), e.issued("D1")); err != nil {
		t.Fatal(err)
	}
	next, _ := keys.Generate(keys.ES256)
	e.ring.Publish(next)
	if err := e.ring.Activate(next.KID(), time.Hour); err != nil {
		t.Fatal(err)
	}
	tok := e.issued("D1")
	e.clock.Advance(time.Minute) // past the refetch rate limit
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("rotated key not found: %v", err)
	}
}

// oauth.md 1.10 (b): a token for another trust domain is refused at the receiver.
func TestTT1_10_OtherTrustDomainRefused(t *testing.T) {
	e := newEnv(t)
	_, err := e.remoteVerifier(t, tdB).Verify(t.Context(), e.issued("D1"))
	wantCode(t, err, errcode.AudienceMismatch)
}

// oauth.md 1.10 (c): an expired token is refused.
func TestTT1_10_ExpiredRefused(t *testing.T) {
	e := newEnv(t)
	v := e.remoteVerifier(t, tdA)
	tok := e.issued("D1")
	e.clock.Advance(DefaultLifetime + time.Minute)
	_, err := v.Verify(t.Context(), tok)
	wantCode(t, err, errcode.Expired)
}

// oauth.md 1.10 (implied by RFC 8725): typ is checked, alg none and algorithms outside
// the allow-list are refused, and required claims must be present.
func TestTT1_10_TypAlgAndClaims(t *testing.T) {
	e := newEnv(t)
	v := e.verifier(tdA)
	now := jose.NumericDate(e.clock.Now().Unix())
	later := now + 60
	full := Claims{Iss: e.url, Iat: &now, Exp: &later, Aud: jose.Audience{tdA}, Txn: "t", Sub: "s", Scope: "x", ReqWL: "wimse://a.example/x"}
	wrongTyp, _ := jose.SignClaims("wit+jwt", e.ttsKey, true, full)
	_, err := v.Verify(t.Context(), wrongTyp)
	wantCode(t, err, errcode.WrongType)
	appTyp, _ := jose.SignClaims("application/TxnToken+JWT", e.ttsKey, true, full)
	if _, err := v.Verify(t.Context(), appTyp); err != nil {
		t.Fatalf("typ with application/ prefix and other case: %v", err)
	}
	none := "eyJ0eXAiOiJ0eG50b2tlbitqd3QiLCJhbGciOiJub25lIn0." + strings.Split(wrongTyp, ".")[1] + ".AA"
	_, err = v.Verify(t.Context(), none)
	wantCode(t, err, errcode.UnsupportedAlg)
	for _, drop := range []func(*Claims){
		func(c *Claims) { c.Txn = "" }, func(c *Claims) { c.Sub = "" }, func(c *Claims) { c.Scope = "" },
		func(c *Claims) { c.ReqWL = "" }, func(c *Claims) { c.Iat = nil },
	} {
		c := full
		drop(&c)
		tok, _ := jose.SignClaims(Type, e.ttsKey, true, c)
		_, err := v.Verify(t.Context(), tok)
		wantCode(t, err, errcode.MissingClaim)
	}
	two := full
	two.Aud = jose.Audience{tdA, tdB}
	tok, _ := jose.SignClaims(Type, e.ttsKey, true, two)
	_, err = v.Verify(t.Context(), tok)
	wantCode(t, err, errcode.AudienceMismatch)
}

// oauth.md 1.10 item 1: the Txn-Token field holds exactly one token.
func TestTT1_10_TxnTokenFieldExactlyOnce(t *testing.T) {
	e := newEnv(t)
	tok := e.issued("D1")
	v := e.verifier(tdA)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	_, err := v.VerifyRequest(t.Context(), r)
	wantCode(t, err, errcode.MissingCredential)
	r.Header.Add(HeaderName, tok)
	if _, err := v.VerifyRequest(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	r.Header.Add(HeaderName, tok)
	_, err = v.VerifyRequest(t.Context(), r)
	wantCode(t, err, errcode.DuplicateField)
	r.Header.Set(HeaderName, tok+", "+tok)
	_, err = v.VerifyRequest(t.Context(), r)
	wantCode(t, err, errcode.DuplicateField)
}

// dialog-binding section 12 step 3: tctx.dlg is checked against Dialog-Context.
func TestTT1_10_DialogBinding(t *testing.T) {
	e := newEnv(t)
	c := e.verify(e.issued("7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37"), tdA)
	if err := DialogMatches(c, "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, DialogMatches(c, "D2"), errcode.DialogMismatch)
	wantCode(t, DialogMatches(c, ""), errcode.DialogMismatch)
	wantCode(t, DialogMatches(c, "7F3C9A2E-5B1D-4E8A-9C6F-0D2B8E4A1F37"), errcode.DialogMismatch)
	// A token without a dialog matches none.
	wantCode(t, DialogMatches(e.verify(e.issued(""), tdA), "D1"), errcode.DialogMismatch)
}

func ptr(n int64) *jose.NumericDate { d := jose.NumericDate(n); return &d }
