package wit_test

import (
	"context"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

// A cached WIT is still subject to the clock, failures are not cached, and the cache is
// bounded.
func TestCacheKeepsTimeRulesAndBound(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.EdDSA, clock)
	v := d.Validator(wit.WithCache(8, time.Minute), wit.WithSkew(0))
	w := d.Workload(t, "/svc/a", keys.EdDSA)
	ctx := context.Background()
	first, err := v.Validate(ctx, w.WIT)
	if err != nil {
		t.Fatal(err)
	}
	second, err := v.Validate(ctx, w.WIT)
	if err != nil || second.Subject != first.Subject || second.Key.Thumbprint() != first.Key.Thumbprint() {
		t.Fatalf("cached validation: %v", err)
	}
	if v.CacheLen() != 1 {
		t.Fatalf("cache holds %d", v.CacheLen())
	}
	// A tampered token is not served from the cache.
	// (One signature character changed, always to a different one: replacing the tail
	// with a fixed string left the token unchanged whenever it already ended so.)
	i := len(w.WIT) - 10
	c := byte('A')
	if w.WIT[i] == c {
		c = 'B'
	}
	tampered := w.WIT[:i] + string(c) + w.WIT[i+1:]
	if _, err := v.Validate(ctx, tampered); errcode.CodeOf(err) != errcode.InvalidSignature {
		t.Fatalf("tampered: %v", err)
	}
	// Expiry applies to cached entries.
	clock.Advance(time.Hour)
	if _, err := v.Validate(ctx, w.WIT); errcode.CodeOf(err) != errcode.Expired {
		t.Fatalf("expired WIT served from cache: %v", err)
	}
	// Bound.
	for i := 0; i < 50; i++ {
		w := d.Workload(t, "/svc/a", keys.EdDSA)
		if _, err := v.Validate(ctx, w.WIT); err != nil {
			t.Fatal(err)
		}
		if v.CacheLen() > 8 {
			t.Fatalf("cache grew to %d", v.CacheLen())
		}
	}
}

// An entry lives at most maxAge, so a key removed from trust stops vouching.
func TestCacheEntryMaxAge(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	w := d.Workload(t, "/svc/a", keys.ES256)
	other, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(d.Key.Public())
	trust := keys.NewTrust().AddTrustDomain("a.example", set)
	v := wit.NewValidator(trust, wit.WithClock(clock.Now), wit.WithCache(16, time.Minute))
	if _, err := v.Validate(context.Background(), w.WIT); err != nil {
		t.Fatal(err)
	}
	rotated, _ := keys.NewStaticSet(other.Public())
	trust.AddTrustDomain("a.example", rotated)
	if _, err := v.Validate(context.Background(), w.WIT); err != nil {
		t.Fatal("within maxAge the cached result stands")
	}
	clock.Advance(time.Minute)
	if _, err := v.Validate(context.Background(), w.WIT); errcode.CodeOf(err) != errcode.UnknownKey {
		t.Fatalf("after maxAge the removed key must not vouch: %v", err)
	}
}

// Expired entries leave within maxAge even when the cache is far from full, so memory
// follows the live WITs under churn.
func TestCacheSweepsExpired(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.EdDSA, clock)
	v := d.Validator(wit.WithCache(1000, time.Minute), wit.WithSkew(0))
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		w := d.Workload(t, "/svc/a", keys.EdDSA)
		if _, err := v.Validate(ctx, w.WIT); err != nil {
			t.Fatal(err)
		}
	}
	if v.CacheLen() != 5 {
		t.Fatalf("cache holds %d", v.CacheLen())
	}
	clock.Advance(2 * time.Minute) // past maxAge: the five entries are stale
	w := d.Workload(t, "/svc/b", keys.EdDSA)
	if _, err := v.Validate(ctx, w.WIT); err != nil {
		t.Fatal(err)
	}
	if v.CacheLen() != 1 {
		t.Fatalf("stale entries kept: cache holds %d", v.CacheLen())
	}
}
