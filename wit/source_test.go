package wit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

// fakeIssuer hands out WITs of a fixed lifetime from a real wit.Issuer and records the
// keys it was asked to certify.
type fakeIssuer struct {
	mu    sync.Mutex
	d     *testkit.Domain
	ttl   time.Duration
	keys  []*keys.PrivateKey
	fail  error
	calls atomic.Int32
	gate  chan struct{} // when non-nil, each fetch waits for a value
}

func (f *fakeIssuer) fetch(ctx context.Context, k *keys.PrivateKey) (string, time.Time, error) {
	f.calls.Add(1)
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return "", time.Time{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return "", time.Time{}, f.fail
	}
	f.keys = append(f.keys, k)
	tok, c, err := f.d.Issuer.Issue(identifier.MustParse("wimse://a.example/svc/a"), k.Public(), f.ttl)
	if err != nil {
		return "", time.Time{}, err
	}
	return tok, c.Exp.Time(), nil
}

func newFake(t *testing.T, ttl time.Duration) (*fakeIssuer, *testkit.Clock) {
	clock := testkit.NewClock(testkit.Epoch)
	return &fakeIssuer{d: testkit.NewDomain(t, "a.example", keys.ES256, clock), ttl: ttl}, clock
}

// WIT-3 (workload-creds-02 section 9.4): the private key SHOULD be fresh per WIT, so
// every refresh generates a new key, and the credential carries the key its WIT names.
func TestCreds02Sec9_4_FreshKeyPerRefresh(t *testing.T) {
	f, clock := newFake(t, 10*time.Minute)
	src := wit.NewRefreshingSource(f.fetch, wit.WithClock(clock.Now), wit.WithKeyAlgorithm(keys.EdDSA))
	v := f.d.Validator()
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		c, err := src.Credential(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		w, err := v.Validate(context.Background(), c.WIT)
		if err != nil {
			t.Fatal(err)
		}
		if w.Key.Thumbprint() != c.Key.Public().Thumbprint() || c.Key.Alg() != keys.EdDSA {
			t.Fatal("the credential's key is not the one its WIT names")
		}
		if seen[c.Key.KID()] {
			t.Fatal("a key was used for two WITs")
		}
		seen[c.Key.KID()] = true
		if !c.Expiry.Equal(w.Expiry()) {
			t.Fatalf("expiry %v, WIT says %v", c.Expiry, w.Expiry())
		}
		clock.Advance(9 * time.Minute)
	}
	if n := f.calls.Load(); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}
}

// The credential is cached and refreshed before expiry: at 80% of the lifetime, or the
// margin before expiry when that comes first.
func TestCreds02Sec9_4_RefreshBeforeExpiry(t *testing.T) {
	f, clock := newFake(t, 10*time.Minute)
	src := wit.NewRefreshingSource(f.fetch, wit.WithClock(clock.Now))
	first, err := src.Credential(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(8*time.Minute - time.Second)
	if c, _ := src.Credential(context.Background()); c != first || f.calls.Load() != 1 {
		t.Fatal("refreshed before the refresh point")
	}
	clock.Advance(time.Second)
	second, err := src.Credential(context.Background())
	if err != nil || second == first || f.calls.Load() != 2 {
		t.Fatalf("not refreshed at 80%% of the lifetime: %v", err)
	}

	// A margin larger than 20% of the lifetime moves the refresh point earlier.
	f2, clock2 := newFake(t, 10*time.Minute)
	src2 := wit.NewRefreshingSource(f2.fetch, wit.WithClock(clock2.Now), wit.WithRefreshAt(0.8, 5*time.Minute))
	c1, _ := src2.Credential(context.Background())
	clock2.Advance(5 * time.Minute)
	if c2, _ := src2.Credential(context.Background()); c2 == c1 {
		t.Fatal("not refreshed at expiry minus the margin")
	}
}

// Concurrent callers that find the credential missing or due share one fetch.
func TestSourceConcurrentCallersShareOneFetch(t *testing.T) {
	f, clock := newFake(t, 10*time.Minute)
	f.gate = make(chan struct{})
	src := wit.NewRefreshingSource(f.fetch, wit.WithClock(clock.Now))
	const n = 32
	var wg sync.WaitGroup
	got := make([]*wit.Credential, n)
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = src.Credential(context.Background())
		}()
	}
	// Let the fetch through; every caller is either waiting for it or arrives after it.
	// Closing (not sending) lets a second fetch through too, so the count below sees it.
	close(f.gate)
	wg.Wait()
	if c := f.calls.Load(); c != 1 {
		t.Fatalf("%d fetches for %d concurrent callers, want 1", c, n)
	}
	for i := range got {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
	}
}

// A refresh that fails while the credential is still valid keeps it in service (and is
// retried only after the retry interval); once it has expired, the error comes through.
func TestSourceFailingRefreshKeepsValidCredential(t *testing.T) {
	f, clock := newFake(t, 10*time.Minute)
	src := wit.NewRefreshingSource(f.fetch, wit.WithClock(clock.Now), wit.WithRetryInterval(time.Minute))
	first, err := src.Credential(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.fail = errcode.Unavailable(errcode.IssuerUnavailable, errors.New("down"), "issuer")
	f.mu.Unlock()
	clock.Advance(8 * time.Minute)
	c, err := src.Credential(context.Background())
	if err != nil || c != first {
		t.Fatalf("failed refresh did not keep the valid credential: %v", err)
	}
	if f.calls.Load() != 2 {
		t.Fatal("no refresh was attempted at the refresh point")
	}
	clock.Advance(30 * time.Second)
	if c, _ := src.Credential(context.Background()); c != first || f.calls.Load() != 2 {
		t.Fatal("retried before the retry interval")
	}
	clock.Advance(30 * time.Second)
	if c, _ := src.Credential(context.Background()); c != first || f.calls.Load() != 3 {
		t.Fatal("not retried after the retry interval")
	}
	// At expiry the old credential is never returned.
	clock.Advance(time.Minute)
	c, err = src.Credential(context.Background())
	if c != nil || errcode.CodeOf(err) != errcode.IssuerUnavailable {
		t.Fatalf("got %v, %v; want no credential and the fetch error", c, err)
	}
	// The issuer recovers.
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	if c, err := src.Credential(context.Background()); err != nil || c == first {
		t.Fatalf("no new credential after recovery: %v", err)
	}
}

// WIT-3: a key MUST NOT be used after the credential's expiry, so a fetched credential
// that is already expired is refused rather than handed out.
func TestCreds02Sec9_4_NeverReturnsExpired(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	fetch := func(context.Context, *keys.PrivateKey) (string, time.Time, error) {
		return "x.y.z", clock.Now(), nil
	}
	src := wit.NewRefreshingSource(fetch, wit.WithClock(clock.Now))
	c, err := src.Credential(context.Background())
	if c != nil || errcode.CodeOf(err) != errcode.Expired {
		t.Fatalf("got %v, %v", c, err)
	}
}

// A caller that gives up stops waiting; the fetch it started goes on for the others.
func TestSourceCallerCancel(t *testing.T) {
	f, clock := newFake(t, 10*time.Minute)
	f.gate = make(chan struct{})
	src := wit.NewRefreshingSource(f.fetch, wit.WithClock(clock.Now))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Credential(ctx); errcode.CodeOf(err) != errcode.IssuerUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("cancelled caller got %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := src.Credential(context.Background())
		done <- err
	}()
	f.gate <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.calls.Load() != 1 {
		t.Fatalf("%d fetches, want 1", f.calls.Load())
	}
}

// Issue 23 point 6: a fixed credential is its own Source (as go-spiffe's x509svid.SVID
// is an x509svid.Source): it gives itself, the same value every time.
func TestIssue23_6_CredentialIsItsOwnSource(t *testing.T) {
	k, _ := keys.Generate(keys.ES256)
	c := &wit.Credential{WIT: "w", Key: k, Expiry: testkit.Epoch}
	var src wit.Source = c
	for range 2 {
		got, err := src.Credential(t.Context())
		if err != nil || got != c {
			t.Fatalf("got %p, %v; want the credential itself %p", got, err, c)
		}
	}
}

// Issue 23 point 6 and the Source contract (never an expired credential): the
// credential a linked dialog pins gives itself before its Expiry by the injected clock
// and is refused with expired from its Expiry on.
func TestIssue23_6_ExpiringRefusesFromExpiry(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	k, _ := keys.Generate(keys.ES256)
	c := &wit.Credential{WIT: "w", Key: k, Expiry: testkit.Epoch.Add(time.Minute)}
	src := c.Expiring(clock.Now)
	if got, err := src.Credential(t.Context()); err != nil || got != c {
		t.Fatalf("before expiry: %p, %v; want %p", got, err, c)
	}
	clock.Advance(time.Minute)
	got, err := src.Credential(t.Context())
	if got != nil {
		t.Fatal("an expired credential was handed out")
	}
	wantCode(t, err, errcode.Expired)
}
