package wit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

func wantCode(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	if got := errcode.CodeOf(err); got != code {
		t.Fatalf("got %v (%v), want %s", got, err, code)
	}
}

// signClaims signs arbitrary WIT claims with the domain's issuer key.
func signClaims(t *testing.T, d *testkit.Domain, claims map[string]any) string {
	t.Helper()
	tok, err := jose.SignClaims(wit.Type, d.Key, true, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func baseClaims(t *testing.T, d *testkit.Domain, cnf *keys.PublicKey) map[string]any {
	cj, _ := cnf.ConfirmationJSON()
	now := d.Clock.Now().Unix()
	return map[string]any{
		"iss": "https://" + d.Name, "sub": "wimse://" + d.Name + "/svc/a",
		"iat": now, "exp": now + 3600, "jti": "j1", "cnf": map[string]any{"jwk": json.RawMessage(cj)},
	}
}

func TestIssueAndValidate(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	for _, alg := range []string{keys.ES256, keys.EdDSA, keys.Ed25519} {
		d := testkit.NewDomain(t, "a.example", alg, clock)
		w := d.Workload(t, "/agent/a1", alg)
		got, err := d.Validator().Validate(context.Background(), w.WIT)
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		if !got.Subject.Equal(w.ID) || got.Key.Thumbprint() != w.Key.Public().Thumbprint() || got.Key.Alg() != alg {
			t.Fatalf("%s: wrong subject or key: %+v", alg, got)
		}
	}
}

// wimse.md WIT-1 (creds-02 section 3): the trust domain of sub selects the trust
// anchors. A key trusted for one domain cannot vouch for another domain's workloads.
func TestCreds02Sec3_TrustDomainSelectsAnchors(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	a := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	b := testkit.NewDomain(t, "b.example", keys.ES256, clock)
	trust := keys.NewTrust()
	setA, _ := a.Trust.ForTrustDomain("a.example")
	setB, _ := b.Trust.ForTrustDomain("b.example")
	trust.AddTrustDomain("a.example", setA).AddTrustDomain("b.example", setB)
	v := wit.NewValidator(trust, wit.WithClock(clock.Now))

	k, _ := keys.Generate(keys.ES256)
	// A's issuer mints a WIT for a workload of B.
	forged, _, err := a.Issuer.Issue(identifier.MustParse("wimse://b.example/svc/pay"), k.Public(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Validate(context.Background(), forged)
	if err == nil {
		t.Fatal("a WIT for b.example signed by a.example's key was accepted")
	}
	// Unknown trust domain.
	c := testkit.NewDomain(t, "c.example", keys.ES256, clock)
	w := c.Workload(t, "/x", keys.ES256)
	_, err = v.Validate(context.Background(), w.WIT)
	wantCode(t, err, errcode.UntrustedIssuer)
}

// wimse.md WIT-1: keys are never fetched from data found only in the token. A WIT whose
// iss is a URL serving the signing key's JWKS is still refused, and nothing is fetched.
func TestCreds02Sec3_NoKeyFetchFromToken(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	trusted := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	attacker := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := json.Marshal(map[string]any{"keys": []any{attacker.Key.Public()}})
		w.Write(b)
	}))
	defer srv.Close()
	k, _ := keys.Generate(keys.ES256)
	claims := baseClaims(t, attacker, k.Public())
	claims["iss"] = srv.URL
	tok := signClaims(t, attacker, claims)
	_, err := trusted.Validator().Validate(context.Background(), tok)
	wantCode(t, err, errcode.UnknownKey)
	if hits.Load() != 0 {
		t.Fatal("the validator fetched keys named by the token")
	}
}

// wimse.md 2.5 step 2 (identifier-03 section 4.1): sub must be one canonical identifier;
// non-canonical input is rejected, never repaired.
func TestCreds02Sec5_1_SubMustBeCanonicalIdentifier(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	k, _ := keys.Generate(keys.ES256)
	for sub, code := range map[string]errcode.Code{
		"wimse://A.example/svc/a":  errcode.InvalidTrustDomainChar,
		"wimse://a.example/svc/a/": errcode.EmptyPathSegment,
		"wimse://a.example/%61":    errcode.NonNormalizedPercentEncoding,
		"https://a.example/svc":    errcode.UnsupportedScheme,
	} {
		c := baseClaims(t, d, k.Public())
		c["sub"] = sub
		_, err := d.Validator().Validate(context.Background(), signClaims(t, d, c))
		if errcode.CodeOf(err) != code {
			t.Errorf("sub %q: got %v, want %s", sub, err, code)
		}
	}
	c := baseClaims(t, d, k.Public())
	delete(c, "sub")
	_, err := d.Validator().Validate(context.Background(), signClaims(t, d, c))
	wantCode(t, err, errcode.MissingClaim)
	// WIT-2: exactly one identifier; an array is not one.
	c = baseClaims(t, d, k.Public())
	c["sub"] = []string{"wimse://a.example/a", "wimse://a.example/b"}
	_, err = d.Validator().Validate(context.Background(), signClaims(t, d, c))
	if err == nil {
		t.Fatal("two identifiers accepted")
	}
}

// wimse.md 2.5 step 6 and creds-02 section 9.2.1: exp required, not passed, lifetime capped.
func TestCreds02Sec5_1_ExpiryAndLifetime(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	k, _ := keys.Generate(keys.ES256)
	c := baseClaims(t, d, k.Public())
	delete(c, "exp")
	_, err := d.Validator().Validate(context.Background(), signClaims(t, d, c))
	wantCode(t, err, errcode.MissingClaim)

	c = baseClaims(t, d, k.Public())
	c["exp"] = clock.Now().Add(48 * time.Hour).Unix()
	_, err = d.Validator().Validate(context.Background(), signClaims(t, d, c))
	wantCode(t, err, errcode.LifetimeTooLong)

	w := d.Workload(t, "/svc/a", keys.ES256)
	clock.Advance(time.Hour)
	_, err = d.Validator(wit.WithSkew(0)).Validate(context.Background(), w.WIT)
	wantCode(t, err, errcode.Expired)
	// Within skew it is still accepted.
	if _, err := d.Validator(wit.WithSkew(time.Minute)).Validate(context.Background(), w.WIT); err != nil {
		t.Fatalf("within skew: %v", err)
	}

	// The issuer refuses, never trims, a lifetime above its cap.
	_, _, err = d.Issuer.Issue(w.ID, k.Public(), 25*time.Hour)
	wantCode(t, err, errcode.LifetimeTooLong)
}

// wimse.md 2.5 step 7: cnf.jwk with an alg that can prove possession and fits the key.
func TestCreds02Sec5_1_ConfirmationKey(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	ec, _ := keys.Generate(keys.ES256)
	ecPriv, _ := json.Marshal(ec)
	cases := map[string]struct {
		cnf  any
		code errcode.Code
	}{
		"no cnf":          {nil, errcode.MissingClaim},
		"no jwk":          {map[string]any{}, errcode.MissingClaim},
		"no alg":          {map[string]any{"jwk": map[string]any{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}, errcode.MissingConfirmationAlg},
		"alg none":        {map[string]any{"jwk": map[string]any{"alg": "none", "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}, errcode.ForbiddenConfirmationAlg},
		"symmetric":       {map[string]any{"jwk": map[string]any{"alg": "HS256", "kty": "oct", "k": "c2VjcmV0"}}, errcode.ForbiddenConfirmationAlg},
		"encryption":      {map[string]any{"jwk": map[string]any{"alg": "RSA-OAEP", "kty": "RSA"}}, errcode.ForbiddenConfirmationAlg},
		"unsupported":     {map[string]any{"jwk": map[string]any{"alg": "RS256", "kty": "RSA"}}, errcode.UnsupportedConfirmationAlg},
		"alg misfits key": {map[string]any{"jwk": map[string]any{"alg": "ES256", "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}, errcode.UnsupportedConfirmationAlg},
		"private key":     {map[string]any{"jwk": json.RawMessage(ecPriv)}, errcode.InvalidKey},
	}
	for name, tc := range cases {
		c := baseClaims(t, d, ec.Public())
		if tc.cnf == nil {
			delete(c, "cnf")
		} else {
			c["cnf"] = tc.cnf
		}
		_, err := d.Validator().Validate(context.Background(), signClaims(t, d, c))
		if got := errcode.CodeOf(err); got != tc.code {
			t.Errorf("%s: got %v (%v), want %s", name, got, err, tc.code)
		}
	}
}

// wimse.md 2.5 step 8: when configured, iss must be on the allow-list.
func TestCreds02Sec9_1_IssuerAllowList(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	w := d.Workload(t, "/svc/a", keys.ES256)
	if _, err := d.Validator(wit.WithIssuers("https://a.example/wit-issuer")).Validate(context.Background(), w.WIT); err != nil {
		t.Fatal(err)
	}
	_, err := d.Validator(wit.WithIssuers("https://other.example")).Validate(context.Background(), w.WIT)
	wantCode(t, err, errcode.IssuerMismatch)
}

func TestIssuedInFutureAndNotBefore(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	k, _ := keys.Generate(keys.ES256)
	c := baseClaims(t, d, k.Public())
	c["iat"] = clock.Now().Add(time.Minute).Unix()
	_, err := d.Validator(wit.WithSkew(0)).Validate(context.Background(), signClaims(t, d, c))
	wantCode(t, err, errcode.IssuedInFuture)
	c = baseClaims(t, d, k.Public())
	c["nbf"] = clock.Now().Add(time.Minute).Unix()
	_, err = d.Validator(wit.WithSkew(0)).Validate(context.Background(), signClaims(t, d, c))
	wantCode(t, err, errcode.NotYetValid)
}

// Issue 23 point 5: one WithClock value serves the issuer, the validator and the
// source, and each of them keeps time by it: the WIT is issued at the clock's time,
// validated by it, and refreshed by it.
func TestIssue23_5_OneClockServesIssuerValidatorSource(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	withClock := wit.WithClock(clock.Now)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	iss := wit.NewIssuer("https://a.example", func() *keys.PrivateKey { return d.Key }, withClock)
	v := wit.NewValidator(d.Trust, withClock, wit.WithSkew(0))
	fetches := 0
	src := wit.NewRefreshingSource(func(_ context.Context, k *keys.PrivateKey) (string, time.Time, error) {
		fetches++
		tok, c, err := iss.Issue(identifier.MustParse("wimse://a.example/svc/a"), k.Public(), 10*time.Minute)
		if err != nil {
			return "", time.Time{}, err
		}
		return tok, c.Exp.Time(), nil
	}, withClock)

	cred, err := src.Credential(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := testkit.Epoch.Add(10 * time.Minute); !cred.Expiry.Equal(want) {
		t.Fatalf("issued to expire at %v, want %v (the issuer's clock)", cred.Expiry, want)
	}
	if _, err := v.Validate(t.Context(), cred.WIT); err != nil {
		t.Fatalf("validator at the clock's time: %v", err)
	}
	clock.Advance(11 * time.Minute)
	_, err = v.Validate(t.Context(), cred.WIT)
	wantCode(t, err, errcode.Expired)
	if _, err := src.Credential(t.Context()); err != nil || fetches != 2 {
		t.Fatalf("source after its clock passed the expiry: %d fetches, %v; want a refresh", fetches, err)
	}
}

// Issue 23 point 5: WithClock(nil) keeps the default (time.Now) in every constructor,
// as in every other package, instead of leaving a nil clock to panic at first use.
func TestIssue23_5_NilClockKeepsDefault(t *testing.T) {
	d := testkit.NewDomain(t, "a.example", keys.ES256, testkit.NewClock(testkit.Epoch))
	before := time.Now()
	if got := wit.NewValidator(d.Trust, wit.WithClock(nil)).Now(); got.Before(before) {
		t.Fatalf("validator's clock says %v, before time.Now %v", got, before)
	}
	k, _ := keys.Generate(keys.ES256)
	_, c, err := wit.NewIssuer("", func() *keys.PrivateKey { return d.Key }, wit.WithClock(nil)).
		Issue(identifier.MustParse("wimse://a.example/svc/a"), k.Public(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.Iat.Time().Before(before.Truncate(time.Second)) {
		t.Fatalf("issued at %v, before time.Now %v", c.Iat.Time(), before)
	}
	src := wit.NewRefreshingSource(func(context.Context, *keys.PrivateKey) (string, time.Time, error) {
		return "w", time.Now().Add(time.Minute), nil
	}, wit.WithClock(nil))
	if _, err := src.Credential(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Issue 23 point 5: one WithMaxLifetime caps both sides: the issuer refuses a longer
// lifetime and the validator a longer-lived WIT.
func TestIssue23_5_MaxLifetimeServesIssuerAndValidator(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	maxLifetime := wit.WithMaxLifetime(time.Hour)
	k, _ := keys.Generate(keys.ES256)
	iss := wit.NewIssuer("", func() *keys.PrivateKey { return d.Key }, wit.WithClock(clock.Now), maxLifetime)
	_, _, err := iss.Issue(identifier.MustParse("wimse://a.example/svc/a"), k.Public(), 2*time.Hour)
	wantCode(t, err, errcode.LifetimeTooLong)

	c := baseClaims(t, d, k.Public())
	c["exp"] = clock.Now().Add(2 * time.Hour).Unix()
	_, err = wit.NewValidator(d.Trust, wit.WithClock(clock.Now), maxLifetime).Validate(t.Context(), signClaims(t, d, c))
	wantCode(t, err, errcode.LifetimeTooLong)
	c["exp"] = clock.Now().Add(50 * time.Minute).Unix()
	if _, err := wit.NewValidator(d.Trust, wit.WithClock(clock.Now), maxLifetime).Validate(t.Context(), signClaims(t, d, c)); err != nil {
		t.Fatalf("a WIT within the cap: %v", err)
	}
}
