package wit_test

import (
	"context"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

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
