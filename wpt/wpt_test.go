package wpt_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wpt"
)

const aud = "https://tool.a.example/invoke"

func wantCode(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	if got := errcode.CodeOf(err); got != code {
		t.Fatalf("got %v (%v), want %s", got, err, code)
	}
}

type fixture struct {
	clock *testkit.Clock
	d     *testkit.Domain
	w     *testkit.Workload
	v     *wpt.Verifier
}

func newFixture(t *testing.T, alg string, opts ...wpt.Option) *fixture {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	w := d.Workload(t, "/agent/a2", alg)
	opts = append([]wpt.Option{wpt.WithAudiences(aud), wpt.WithReplay(store.NewMemory(store.WithClock(clock.Now)))}, opts...)
	return &fixture{clock: clock, d: d, w: w, v: wpt.NewVerifier(d.Validator(), opts...)}
}

func (f *fixture) mint(t *testing.T, b wpt.Bound, opts ...wpt.MintOption) string {
	t.Helper()
	p, err := wpt.New(f.w.Key, f.w.WIT, aud, b, append([]wpt.MintOption{wpt.WithClock(f.clock.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr(s string) *string { return &s }

func newRequest(t *testing.T, f *fixture, hdr map[string]string) *http.Request {
	req := httptest.NewRequest("POST", aud, strings.NewReader(`{}`))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if err := wpt.SignRequest(req, f.w.Key, f.w.WIT, aud, wpt.RequestOptions{}, wpt.WithClock(f.clock.Now)); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRequestRoundTrip(t *testing.T) {
	for _, alg := range []string{keys.ES256, keys.EdDSA, keys.Ed25519} {
		f := newFixture(t, alg)
		req := newRequest(t, f, map[string]string{"Txn-Token": "txn.tok.en", "Dialog-Context": `dlg="D1", initiator="wimse://a.example/agent/a1"`})
		res, err := f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{})
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		if res.WIT.Subject != f.w.ID || res.Claims.Dth == "" || res.Claims.Tth == "" {
			t.Fatalf("%s: %+v", alg, res)
		}
	}
}

// wpt-02 section 2 (WPT-1): exactly one Authorization field with scheme WPT.
func TestWPT02Sec2_ExactlyOneAuthorizationWPT(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req := newRequest(t, f, nil)
	req.Header.Add("Authorization", "WPT "+f.mint(t, wpt.Bound{}))
	_, err := f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{})
	wantCode(t, err, errcode.DuplicateField)

	req = newRequest(t, f, nil)
	req.Header.Set("Authorization", "Bearer "+f.mint(t, wpt.Bound{}))
	_, err = f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{})
	wantCode(t, err, errcode.MissingCredential)

	req = newRequest(t, f, nil)
	req.Header.Del("Authorization")
	_, err = f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{})
	wantCode(t, err, errcode.MissingCredential)

	// The scheme name is case-insensitive.
	req = newRequest(t, f, nil)
	req.Header.Set("Authorization", "wpt "+strings.TrimPrefix(req.Header.Get("Authorization"), "WPT "))
	if _, err := f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	// Two WIT fields.
	req = newRequest(t, f, nil)
	req.Header.Add("Workload-Identity-Token", f.w.WIT)
	_, err = f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{})
	wantCode(t, err, errcode.DuplicateField)
}

// wpt-02 section 2 (WPT-2): the WIT is validated first; a good proof with a bad WIT fails.
func TestWPT02Sec2_WITValidatedFirst(t *testing.T) {
	f := newFixture(t, keys.ES256)
	f.clock.Advance(2 * time.Hour) // the WIT (1h) has expired
	p, _ := wpt.New(f.w.Key, f.w.WIT, aud, wpt.Bound{}, wpt.WithClock(f.clock.Now))
	_, err := f.v.Verify(context.Background(), f.w.WIT, p, wpt.Bound{})
	wantCode(t, err, errcode.Expired)
}

// wpt-02 section 2 (WPT-3): alg must string-equal cnf.jwk.alg and the proof must be
// signed by the cnf key.
func TestWPT02Sec2_AlgEqualsConfirmationAlg(t *testing.T) {
	f := newFixture(t, keys.Ed25519) // cnf.jwk.alg = "Ed25519"
	// Same key, other name of the same algorithm: refused, the names must be equal.
	renamed := f.w.Key.WithKID("")
	edName, _ := keys.ParsePrivateJWK(mustJSON(t, renamed, "Ed25519", "EdDSA"))
	p, _ := wpt.New(edName, f.w.WIT, aud, wpt.Bound{}, wpt.WithClock(f.clock.Now))
	_, err := f.v.Verify(context.Background(), f.w.WIT, p, wpt.Bound{})
	wantCode(t, err, errcode.UnsupportedAlg)

	// Another workload's key.
	other, _ := keys.Generate(keys.Ed25519)
	p, _ = wpt.New(other, f.w.WIT, aud, wpt.Bound{}, wpt.WithClock(f.clock.Now))
	_, err = f.v.Verify(context.Background(), f.w.WIT, p, wpt.Bound{})
	wantCode(t, err, errcode.InvalidSignature)
}

// mustJSON re-labels a private JWK's alg.
func mustJSON(t *testing.T, k *keys.PrivateKey, from, to string) []byte {
	b, err := k.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.Replace(string(b), `"alg":"`+from+`"`, `"alg":"`+to+`"`, 1))
}

// wpt-02 section 2 (WPT-4): typ wpt+jwt.
func TestWPT02Sec2_TypeRequired(t *testing.T) {
	f := newFixture(t, keys.ES256)
	c := map[string]any{"aud": aud, "exp": f.clock.Now().Add(time.Minute).Unix(), "jti": "x", "wth": wptHash(f.w.WIT)}
	p, _ := jose.SignClaims("wit+jwt", f.w.Key, false, c)
	_, err := f.v.Verify(context.Background(), f.w.WIT, p, wpt.Bound{})
	wantCode(t, err, errcode.WrongType)
}

func wptHash(s string) string { return tokenhash.Of(strings.Trim(s, " \t")) }

// wpt-02 section 3.1 (WPT-5): aud is matched against configured audiences only.
func TestWPT02Sec3_1_Audience(t *testing.T) {
	f := newFixture(t, keys.ES256)
	p, _ := wpt.New(f.w.Key, f.w.WIT, "https://other.example/invoke", wpt.Bound{}, wpt.WithClock(f.clock.Now))
	_, err := f.v.Verify(context.Background(), f.w.WIT, p, wpt.Bound{})
	wantCode(t, err, errcode.AudienceMismatch)
}

// wpt-02 section 2 (WPT-6): exp present, not passed, not unreasonably far ahead.
func TestWPT02Sec2_Expiry(t *testing.T) {
	f := newFixture(t, keys.ES256, wpt.WithSkew(0))
	p := f.mint(t, wpt.Bound{})
	f.clock.Advance(61 * time.Second)
	_, err := f.v.Verify(context.Background(), f.w.WIT, p, wpt.Bound{})
	wantCode(t, err, errcode.Expired)

	p = f.mint(t, wpt.Bound{}, wpt.WithTTL(time.Hour))
	_, err = f.v.Verify(context.Background(), f.w.WIT, p, wpt.Bound{})
	wantCode(t, err, errcode.LifetimeTooLong)

	c := map[string]any{"aud": aud, "jti": "x", "wth": tokenhash.Of(f.w.WIT)}
	p, _ = jose.SignClaims(wpt.Type, f.w.Key, false, c)
	_, err = f.v.Verify(context.Background(), f.w.WIT, p, wpt.Bound{})
	wantCode(t, err, errcode.MissingClaim)
}

// wpt-02 section 2 (WPT-7): wth binds the WIT as carried.
func TestWPT02Sec2_WTHBindsWIT(t *testing.T) {
	f := newFixture(t, keys.ES256)
	second, _, _ := f.d.Issuer.Issue(f.w.ID, f.w.Key.Public(), time.Hour) // same key, other WIT
	p := f.mint(t, wpt.Bound{})
	_, err := f.v.Verify(context.Background(), second, p, wpt.Bound{})
	wantCode(t, err, errcode.WITBindingMismatch)
}

// wpt-02 section 3.1 (WPT-8): a jti is accepted once; a store failure rejects and says
// the check could not be completed.
func TestWPT02Sec3_1_ReplayedJTIRejected(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req := newRequest(t, f, nil)
	if _, err := f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{})
	wantCode(t, err, errcode.Replayed)

	broken := wpt.NewVerifier(f.d.Validator(), wpt.WithAudiences(aud), wpt.WithReplay(failingStore{}))
	_, err = broken.VerifyRequest(context.Background(), newRequest(t, f, nil), wpt.RequestOptions{})
	wantCode(t, err, errcode.StoreUnavailable)
	if errcode.KindOf(err) != errcode.Incomplete {
		t.Fatal("a store failure must be reported as could-not-complete")
	}
}

type failingStore struct{}

func (failingStore) Claim(context.Context, string, time.Duration) error {
	return errcode.Unavailable(errcode.StoreUnavailable, errors.New("connection refused"), "claim")
}

// wpt-02 section 2 (WPT-9): tth and oth present exactly when their fields are, and
// matching; an oth entry that is not understood rejects the proof.
func TestWPT02Sec2_ContextTokenBindings(t *testing.T) {
	f := newFixture(t, keys.ES256)
	ctx := context.Background()
	p := f.mint(t, wpt.Bound{TxnToken: ptr("t1")})
	_, err := f.v.Verify(ctx, f.w.WIT, p, wpt.Bound{TxnToken: ptr("t2")})
	wantCode(t, err, errcode.TxnTokenBindingMismatch)
	_, err = f.v.Verify(ctx, f.w.WIT, f.mint(t, wpt.Bound{}), wpt.Bound{TxnToken: ptr("t1")})
	wantCode(t, err, errcode.TxnTokenBindingMismatch)
	_, err = f.v.Verify(ctx, f.w.WIT, f.mint(t, wpt.Bound{TxnToken: ptr("t1")}), wpt.Bound{})
	wantCode(t, err, errcode.TxnTokenBindingMismatch)

	p = f.mint(t, wpt.Bound{Other: map[string]string{"X-Ctx": "c1"}})
	if _, err := f.v.Verify(ctx, f.w.WIT, p, wpt.Bound{Other: map[string]string{"x-ctx": " c1 "}}); err != nil {
		t.Fatalf("oth with surrounding spaces: %v", err)
	}
	_, err = f.v.Verify(ctx, f.w.WIT, f.mint(t, wpt.Bound{Other: map[string]string{"x-ctx": "c1"}}), wpt.Bound{})
	wantCode(t, err, errcode.OtherTokenBindingMismatch)
	_, err = f.v.Verify(ctx, f.w.WIT, f.mint(t, wpt.Bound{}), wpt.Bound{Other: map[string]string{"x-ctx": "c1"}})
	wantCode(t, err, errcode.OtherTokenBindingMismatch)
}

// dialog-binding section 8: dth is REQUIRED when the request carries Dialog-Context; a
// missing or wrong dth MUST be rejected.
func TestDialogBindingSec8_DTHRequiredAndMatched(t *testing.T) {
	f := newFixture(t, keys.ES256)
	ctx := context.Background()
	dc := `dlg="D1", initiator="wimse://a.example/agent/a1"`

	req := newRequest(t, f, nil) // signed without Dialog-Context
	req.Header.Set("Dialog-Context", dc)
	_, err := f.v.VerifyRequest(ctx, req, wpt.RequestOptions{})
	wantCode(t, err, errcode.DialogContextBindingMismatch)

	req = newRequest(t, f, map[string]string{"Dialog-Context": dc})
	req.Header.Set("Dialog-Context", `dlg="D2", initiator="wimse://a.example/agent/a1"`)
	_, err = f.v.VerifyRequest(ctx, req, wpt.RequestOptions{})
	wantCode(t, err, errcode.DialogContextBindingMismatch)

	req = newRequest(t, f, map[string]string{"Dialog-Context": dc})
	req.Header.Del("Dialog-Context")
	_, err = f.v.VerifyRequest(ctx, req, wpt.RequestOptions{})
	wantCode(t, err, errcode.DialogContextBindingMismatch)

	req = newRequest(t, f, map[string]string{"Dialog-Context": dc})
	req.Header.Add("Dialog-Context", dc)
	_, err = f.v.VerifyRequest(ctx, req, wpt.RequestOptions{})
	wantCode(t, err, errcode.DuplicateField)

	req = newRequest(t, f, map[string]string{"Dialog-Context": dc})
	if _, err := f.v.VerifyRequest(ctx, req, wpt.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wpt-01 carriage: Workload-Proof-Token with ath over the bearer token; the bearer token
// itself authenticates nothing (WPT-10).
func TestWPT01Carriage(t *testing.T) {
	f := newFixture(t, keys.ES256)
	at := "access-token-123"
	p := f.mint(t, wpt.Bound{AccessToken: &at})
	req := httptest.NewRequest("GET", aud, nil)
	req.Header.Set("Workload-Identity-Token", f.w.WIT)
	req.Header.Set("Workload-Proof-Token", p)
	req.Header.Set("Authorization", "Bearer "+at)
	if _, err := f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{}); err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Workload-Proof-Token", f.mint(t, wpt.Bound{AccessToken: &at}))
	req.Header.Set("Authorization", "Bearer other")
	_, err := f.v.VerifyRequest(context.Background(), req, wpt.RequestOptions{})
	wantCode(t, err, errcode.OtherTokenBindingMismatch)
}
