package tts

import (
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

func (e *env) issued(dialog string) string {
	e.t.Helper()
	resp, _ := e.mustRequest(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken, Dialog: dialog})
	return resp.AccessToken
}

// remoteVerifier verifies through the TTS's published JWKS over HTTP.
func (e *env) remoteVerifier(t *testing.T, td string) *txntoken.Verifier {
	rs, err := keys.NewRemoteSet(t.Context(), e.url+PathJWKS, keys.WithMinRefresh(time.Minute), keys.WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	return txntoken.NewVerifier(rs, td, txntoken.WithClock(e.clock.Now))
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
	forged, _ := jose.SignClaims(txntoken.Type, k, true, txntoken.Claims{Iat: ptr(0), Exp: ptr(1), Aud: jose.Audience{tdA}, Txn: "t", Sub: "s", Scope: "x", ReqWL: "wimse://a.example/x"})
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

// dialog-binding section 12 step 3: tctx.dlg is checked against Dialog-Context.
func TestTT1_10_DialogBinding(t *testing.T) {
	e := newEnv(t)
	c := e.verify(e.issued("7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37"), tdA)
	if err := txntoken.DialogMatches(c, "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, txntoken.DialogMatches(c, "D2"), errcode.DialogMismatch)
	wantCode(t, txntoken.DialogMatches(c, ""), errcode.DialogMismatch)
	wantCode(t, txntoken.DialogMatches(c, "7F3C9A2E-5B1D-4E8A-9C6F-0D2B8E4A1F37"), errcode.DialogMismatch)
	// A token without a dialog matches none.
	wantCode(t, txntoken.DialogMatches(e.verify(e.issued(""), tdA), "D1"), errcode.DialogMismatch)
}

func ptr(n int64) *jose.NumericDate { d := jose.NumericDate(n); return &d }
