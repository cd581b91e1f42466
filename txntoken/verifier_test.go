package txntoken

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

const (
	tdA       = "a.example"
	tdB       = "b.example"
	ttsIssuer = "https://tts.a.example"
)

// fixture is a TTS key, its key set and a clock, for tokens the tests mint themselves.
type fixture struct {
	t   *testing.T
	key *keys.PrivateKey
	ks  keys.KeySet
	now time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := keys.NewStaticSet(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, key: k, ks: ks, now: time.Unix(1800000000, 0)}
}

func (f *fixture) clock() time.Time { return f.now }

func (f *fixture) verifier(td string, opts ...VerifierOption) *Verifier {
	return NewVerifier(f.ks, td, append([]VerifierOption{WithClock(f.clock)}, opts...)...)
}

// claims returns a complete Txn-Token for tdA, issued now, living five minutes.
func (f *fixture) claims() Claims {
	iat := jose.NumericDate(f.now.Unix())
	exp := iat + 300
	return Claims{Iss: ttsIssuer, Iat: &iat, Exp: &exp, Aud: jose.Audience{tdA}, Txn: "t", Sub: "alice", Scope: "trip.read",
		ReqWL: "wimse://a.example/agent/a1", Tctx: map[string]any{DialogMember: "D1"}}
}

func (f *fixture) mint(c Claims) string {
	f.t.Helper()
	tok, err := jose.SignClaims(Type, f.key, true, c)
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

func wantCode(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	if errcode.CodeOf(err) != code {
		t.Fatalf("got %v (%s), want %s", err, errcode.CodeOf(err), code)
	}
}

// A complete token verifies, and its claims come back as the TTS wrote them: numbers in
// tctx and rctx are json.Number, so large integers survive octet for octet.
func TestVerifyAccepts(t *testing.T) {
	f := newFixture(t)
	c := f.claims()
	c.Rctx = map[string]any{"n": json.Number("12345678901234567890")}
	got, err := f.verifier(tdA, WithIssuer(ttsIssuer)).Verify(t.Context(), f.mint(c))
	if err != nil {
		t.Fatal(err)
	}
	if got.Sub != "alice" || got.Scope != "trip.read" || got.Dialog() != "D1" || got.Rctx["n"] != json.Number("12345678901234567890") || *got.Exp != *c.Exp {
		t.Fatalf("%+v", got)
	}
}

// oauth.md 1.10 (a): the signature, with the key the key set names by kid; never a key
// the token brings.
func TestVerifySignature(t *testing.T) {
	f := newFixture(t)
	v := f.verifier(tdA)
	tok := f.mint(f.claims())
	i := strings.LastIndexByte(tok, '.')
	_, err := v.Verify(t.Context(), tok[:i+1]+strings.Repeat("A", len(tok)-i-1))
	wantCode(t, err, errcode.InvalidSignature)
	other, _ := keys.Generate(keys.ES256)
	forged, _ := jose.SignClaims(Type, other, true, f.claims())
	_, err = v.Verify(t.Context(), forged)
	wantCode(t, err, errcode.UnknownKey)
	// Without keys the check cannot be completed: a rejection of that kind.
	_, err = NewVerifier(nil, tdA).Verify(t.Context(), tok)
	wantCode(t, err, errcode.KeysUnavailable)
	if errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("kind %v", errcode.KindOf(err))
	}
}

// oauth.md 1.7 and 1.10 (b): a token is never accepted outside its trust domain, names
// exactly one, and WithTrustDomains widens the receiver's set, not the token's.
func TestVerifyTrustDomain(t *testing.T) {
	f := newFixture(t)
	tok := f.mint(f.claims())
	_, err := f.verifier(tdB).Verify(t.Context(), tok)
	wantCode(t, err, errcode.AudienceMismatch)
	if _, err := f.verifier(tdB, WithTrustDomains("c.example", tdA)).Verify(t.Context(), tok); err != nil {
		t.Fatalf("a served trust domain refused: %v", err)
	}
	_, err = f.verifier(tdB, WithTrustDomains("c.example")).Verify(t.Context(), tok)
	wantCode(t, err, errcode.AudienceMismatch)
	two := f.claims()
	two.Aud = jose.Audience{tdA, tdB}
	_, err = f.verifier(tdA, WithTrustDomains(tdB)).Verify(t.Context(), f.mint(two))
	wantCode(t, err, errcode.AudienceMismatch)
}

// oauth.md 1.10 (c): exp not passed (within the skew), iat not in the future, and a
// lifetime no longer than the receiver allows (Txn-Tokens live minutes, 1.8).
func TestVerifyTimes(t *testing.T) {
	f := newFixture(t)
	tok := f.mint(f.claims())
	v := f.verifier(tdA)
	f.now = f.now.Add(300*time.Second + DefaultSkew - time.Second)
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatalf("within the skew: %v", err)
	}
	f.now = f.now.Add(time.Second)
	_, err := v.Verify(t.Context(), tok)
	wantCode(t, err, errcode.Expired)
	f.now = f.now.Add(-DefaultSkew)
	_, err = f.verifier(tdA, WithSkew(0)).Verify(t.Context(), tok)
	wantCode(t, err, errcode.Expired)

	f = newFixture(t)
	future := f.claims()
	*future.Iat += 60
	*future.Exp += 60
	_, err = f.verifier(tdA).Verify(t.Context(), f.mint(future))
	wantCode(t, err, errcode.IssuedInFuture)

	long := f.claims()
	*long.Exp = jose.NumericDate(f.now.Add(DefaultMaxLifetime + DefaultSkew + time.Second).Unix())
	_, err = f.verifier(tdA).Verify(t.Context(), f.mint(long))
	wantCode(t, err, errcode.LifetimeTooLong)
	_, err = f.verifier(tdA, WithMaxLifetime(time.Minute)).Verify(t.Context(), f.mint(f.claims()))
	wantCode(t, err, errcode.LifetimeTooLong)
	if _, err := f.verifier(tdA, WithMaxLifetime(2*time.Hour)).Verify(t.Context(), f.mint(long)); err != nil {
		t.Fatalf("WithMaxLifetime(2h): %v", err)
	}
}

// WithIssuer requires iss to be the configured TTS.
func TestVerifyIssuer(t *testing.T) {
	f := newFixture(t)
	tok := f.mint(f.claims())
	_, err := f.verifier(tdA, WithIssuer("https://tts.b.example")).Verify(t.Context(), tok)
	wantCode(t, err, errcode.IssuerMismatch)
	noIss := f.claims()
	noIss.Iss = ""
	_, err = f.verifier(tdA, WithIssuer(ttsIssuer)).Verify(t.Context(), f.mint(noIss))
	wantCode(t, err, errcode.IssuerMismatch)
	if _, err := f.verifier(tdA).Verify(t.Context(), f.mint(noIss)); err != nil {
		t.Fatalf("iss is optional without WithIssuer: %v", err)
	}
}

// oauth.md 1.10 (implied by RFC 8725): typ is checked, alg none and algorithms outside
// the allow-list are refused, and the claims 1.7 requires must be present.
func TestVerifyTypAlgAndClaims(t *testing.T) {
	f := newFixture(t)
	v := f.verifier(tdA)
	full := f.claims()
	wrongTyp, _ := jose.SignClaims("wit+jwt", f.key, true, full)
	_, err := v.Verify(t.Context(), wrongTyp)
	wantCode(t, err, errcode.WrongType)
	appTyp, _ := jose.SignClaims("application/TxnToken+JWT", f.key, true, full)
	if _, err := v.Verify(t.Context(), appTyp); err != nil {
		t.Fatalf("typ with application/ prefix and other case: %v", err)
	}
	none := "eyJ0eXAiOiJ0eG50b2tlbitqd3QiLCJhbGciOiJub25lIn0." + strings.Split(wrongTyp, ".")[1] + ".AA"
	_, err = v.Verify(t.Context(), none)
	wantCode(t, err, errcode.UnsupportedAlg)
	_, err = f.verifier(tdA, WithAlgorithms(keys.EdDSA)).Verify(t.Context(), f.mint(full))
	wantCode(t, err, errcode.UnsupportedAlg)
	if _, err := f.verifier(tdA, WithAlgorithms(keys.EdDSA, keys.ES256)).Verify(t.Context(), f.mint(full)); err != nil {
		t.Fatalf("allowed algorithm refused: %v", err)
	}
	for _, drop := range []func(*Claims){
		func(c *Claims) { c.Txn = "" }, func(c *Claims) { c.Sub = "" }, func(c *Claims) { c.Scope = "" },
		func(c *Claims) { c.ReqWL = "" }, func(c *Claims) { c.Iat = nil }, func(c *Claims) { c.Exp = nil },
		func(c *Claims) { c.Aud = nil },
	} {
		c := full
		drop(&c)
		_, err := v.Verify(t.Context(), f.mint(c))
		wantCode(t, err, errcode.MissingClaim)
	}
}

// Claims that are not one JSON object of the expected shape are invalid_encoding, and a
// token over the size bound is refused before its signature is checked.
func TestVerifyEncodingAndSize(t *testing.T) {
	f := newFixture(t)
	v := f.verifier(tdA)
	doc, _ := f.claims().MarshalJSON()
	for _, payload := range []string{string(doc) + " {}", `{"sub":1}`, `[]`, `not json`} {
		tok, err := jose.Sign(Type, f.key, true, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.Verify(t.Context(), tok)
		wantCode(t, err, errcode.InvalidEncoding)
	}
	big := f.claims()
	big.Tctx["pad"] = strings.Repeat("x", DefaultMaxTokenSize)
	_, err := v.Verify(t.Context(), f.mint(big))
	wantCode(t, err, errcode.TokenTooLong)
}

// oauth.md 1.10 item 1: the Txn-Token field holds exactly one token.
func TestVerifyRequestFieldExactlyOnce(t *testing.T) {
	f := newFixture(t)
	tok := f.mint(f.claims())
	v := f.verifier(tdA)
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	_, err := v.VerifyRequest(t.Context(), r)
	wantCode(t, err, errcode.MissingCredential)
	r.Header.Add(HeaderName, " "+tok+" ")
	if c, err := v.VerifyRequest(t.Context(), r); err != nil || c.Sub != "alice" {
		t.Fatal(err)
	}
	r.Header.Add(HeaderName, tok)
	_, err = v.VerifyRequest(t.Context(), r)
	wantCode(t, err, errcode.DuplicateField)
	r.Header.Set(HeaderName, tok+", "+tok)
	_, err = v.VerifyRequest(t.Context(), r)
	wantCode(t, err, errcode.DuplicateField)
}

// dialog-binding section 10 (and section 12 step 3): tctx.dlg is compared exactly with
// the dialog of the request; a token without a dialog matches none.
func TestDialogMatches(t *testing.T) {
	f := newFixture(t)
	const dlg = "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37"
	bound := f.claims()
	bound.Tctx = map[string]any{DialogMember: dlg}
	c, err := f.verifier(tdA).Verify(t.Context(), f.mint(bound))
	if err != nil {
		t.Fatal(err)
	}
	if err := DialogMatches(c, dlg); err != nil {
		t.Fatal(err)
	}
	wantCode(t, DialogMatches(c, "D2"), errcode.DialogMismatch)
	wantCode(t, DialogMatches(c, ""), errcode.DialogMismatch)
	wantCode(t, DialogMatches(c, strings.ToUpper(dlg)), errcode.DialogMismatch)
	unbound := f.claims()
	unbound.Tctx = nil
	c, err = f.verifier(tdA).Verify(t.Context(), f.mint(unbound))
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, DialogMatches(c, "D1"), errcode.DialogMismatch)
}

// RFC 7519 section 4: claim names are case-sensitive. A Txn-Token whose claims are
// spelled AUD, SUB, TCTX is not read as having aud, sub and tctx.
func TestRFC7519Sec4_TxnTokenClaimNamesAreCaseSensitive(t *testing.T) {
	f := newFixture(t)
	v := f.verifier(tdA)
	c := f.claims()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"aud", "sub", "tctx", "scope", "txn"} {
		up := maps.Clone(m)
		up[strings.ToUpper(name)] = up[name]
		delete(up, name)
		tok, err := jose.SignClaims(Type, f.key, true, up)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(context.Background(), tok); errcode.CodeOf(err) != errcode.InvalidEncoding {
			t.Errorf("%s spelled %s: %v, want invalid_encoding", name, strings.ToUpper(name), err)
		}
	}
	if _, err := v.Verify(context.Background(), f.mint(c)); err != nil {
		t.Fatalf("the claims as spelled by the spec: %v", err)
	}
}
