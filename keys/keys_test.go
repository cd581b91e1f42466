package keys_test

import (
	"context"
	"crypto"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// A generated key's kid is its RFC 7638 thumbprint; a loaded key keeps its kid.
func TestKIDIsRFC7638Thumbprint(t *testing.T) {
	for _, alg := range []string{keys.ES256, keys.EdDSA, keys.Ed25519} {
		k, err := keys.Generate(alg)
		if err != nil {
			t.Fatal(err)
		}
		if k.KID() == "" || k.KID() != k.Public().Thumbprint() {
			t.Fatalf("%s: kid %q is not the thumbprint %q", alg, k.KID(), k.Public().Thumbprint())
		}
		// The thumbprint does not depend on alg or kid (RFC 7638 section 3.2).
		b, _ := json.Marshal(k.Public())
		renamed := strings.Replace(string(b), `"kid":"`+k.KID()+`"`, `"kid":"June 5"`, 1)
		p, err := keys.ParsePublicJWK([]byte(renamed))
		if err != nil {
			t.Fatal(err)
		}
		if p.KID() != "June 5" || p.Thumbprint() != k.KID() {
			t.Fatalf("%s: kid %q thumbprint %q", alg, p.KID(), p.Thumbprint())
		}
	}
}

func TestThumbprintKnownValue(t *testing.T) {
	// RFC 8037 appendix A.3: thumbprint of the Ed25519 example key.
	p, err := keys.ParsePublicJWK([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","alg":"EdDSA"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Thumbprint(); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("thumbprint %s", got)
	}
}

// Exactly one algorithm per key: a present alg must fit the key type (a key without alg
// is pinned by its type: pin_test.go).
func TestOneAlgorithmPerKey(t *testing.T) {
	for jwk, code := range map[string]errcode.Code{
		`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","alg":"ES256"}`: errcode.UnsupportedAlg,
		`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","alg":"none"}`:  errcode.UnsupportedAlg,
		`{"kty":"oct","k":"c2VjcmV0","alg":"HS256"}`:                                                    errcode.UnsupportedAlg,
		`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","alg":"RS256"}`: errcode.UnsupportedAlg,
		`not json`: errcode.InvalidKey,
	} {
		_, err := keys.ParsePublicJWK([]byte(jwk))
		if got := errcode.CodeOf(err); got != code {
			t.Errorf("%s: got %v (%v), want %s", jwk, got, err, code)
		}
	}
	for _, alg := range []string{"EdDSA", "Ed25519"} {
		p, err := keys.ParsePublicJWK([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","alg":"` + alg + `"}`))
		if err != nil || p.Alg() != alg {
			t.Fatalf("%s: %v", alg, err)
		}
	}
}

func TestPrivateJWKRoundTrip(t *testing.T) {
	for _, alg := range []string{keys.ES256, keys.EdDSA, keys.Ed25519} {
		k, _ := keys.Generate(alg)
		b, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		k2, err := keys.ParsePrivateJWK(b)
		if err != nil {
			t.Fatal(err)
		}
		if k2.KID() != k.KID() || k2.Alg() != alg {
			t.Fatalf("%s: %s %s", alg, k2.KID(), k2.Alg())
		}
		sig, _ := k2.Sign([]byte("msg"))
		if !k.Public().Verify([]byte("msg"), sig) {
			t.Fatalf("%s: reloaded key signs differently", alg)
		}
		if strings.Contains(mustJSON(k.Public()), `"d"`) {
			t.Fatal("public JWK carries d")
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// Rotation: publish before use; the old key stays published for the retention window.
func TestRingRotationPublishBeforeUse(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	old, _ := keys.Generate(keys.ES256)
	next, _ := keys.Generate(keys.ES256)
	r := keys.NewRing(old, clock)

	if err := r.Activate(next.KID(), time.Hour); err == nil {
		t.Fatal("a key that was never published was activated")
	}
	r.Publish(next)
	if r.Active() != old || len(r.Public()) != 2 {
		t.Fatal("publishing must not change the signing key")
	}
	if err := r.Activate(next.KID(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if r.Active() != next {
		t.Fatal("activation did not switch the signing key")
	}
	if _, err := r.KeySet().LookupKey(context.Background(), old.KID()); err != nil {
		t.Fatal("the old key was dropped before its tokens expired")
	}
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	if _, err := r.KeySet().LookupKey(context.Background(), old.KID()); errcode.CodeOf(err) != errcode.UnknownKey {
		t.Fatalf("the old key is still published after retention: %v", err)
	}

	srv := httptest.NewServer(r)
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "application/jwk-set+json" {
		t.Fatal(ct)
	}
	var doc struct{ Keys []map[string]any }
	_ = json.NewDecoder(res.Body).Decode(&doc)
	if len(doc.Keys) != 1 || doc.Keys[0]["kid"] != next.KID() || doc.Keys[0]["d"] != nil {
		t.Fatalf("JWKS %v", doc)
	}
}

// The JWKS is cacheable for five minutes unless SetMaxAge shortens it; the header
// carries whole seconds, rounded down, never more than was set.
func TestRingJWKSMaxAge(t *testing.T) {
	k, _ := keys.Generate(keys.ES256)
	r := keys.NewRing(k, nil)
	cacheControl := func() string {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/jwks", nil))
		return rec.Header().Get("Cache-Control")
	}
	if got := cacheControl(); got != "public, max-age=300" || r.MaxAge() != keys.DefaultJWKSMaxAge {
		t.Fatalf("default: %q, MaxAge %s", got, r.MaxAge())
	}
	r.SetMaxAge(1500 * time.Millisecond)
	if got := cacheControl(); got != "public, max-age=1" || r.MaxAge() != 1500*time.Millisecond {
		t.Fatalf("1.5s: %q, MaxAge %s", got, r.MaxAge())
	}
	r.SetMaxAge(0)
	if got := cacheControl(); got != "public, max-age=300" {
		t.Fatalf("back to the default: %q", got)
	}
}

// A JWKS URL: cached; an unknown kid forces a refresh, at most once per interval.
func TestRemoteSetRefreshOnUnknownKidRateLimited(t *testing.T) {
	k1, _ := keys.Generate(keys.ES256)
	k2, _ := keys.Generate(keys.EdDSA)
	var (
		mu      sync.Mutex
		serving = []*keys.PublicKey{k1.Public()}
		fetches atomic.Int32
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		mu.Lock()
		defer mu.Unlock()
		set, _ := keys.NewStaticSet(serving...)
		b, _ := json.Marshal(set)
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Write(b)
	}))
	defer srv.Close()
	now := time.Unix(1_800_000_000, 0)
	var cmu sync.Mutex
	clock := func() time.Time { cmu.Lock(); defer cmu.Unlock(); return now }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs, err := keys.NewRemoteSet(ctx, srv.URL, keys.WithMinRefresh(time.Minute), keys.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.LookupKey(ctx, k1.KID()); err != nil {
		t.Fatal(err)
	}
	base := fetches.Load()
	mu.Lock()
	serving = append(serving, k2.Public())
	mu.Unlock()
	// The initial fetch counts as the last forced refresh: within the interval, an
	// unknown kid is answered from the cache without a fetch.
	if _, err := rs.LookupKey(ctx, k2.KID()); errcode.CodeOf(err) != errcode.UnknownKey {
		t.Fatalf("within the interval: %v", err)
	}
	cmu.Lock()
	now = now.Add(time.Minute)
	cmu.Unlock()
	if _, err := rs.LookupKey(ctx, k2.KID()); err != nil {
		t.Fatalf("rotated-in key not found after refresh: %v", err)
	}
	for i := 0; i < 20; i++ {
		_, _ = rs.LookupKey(ctx, "bogus")
	}
	if got := fetches.Load() - base; got != 1 {
		t.Fatalf("%d fetches for unknown kids, want 1", got)
	}
}

func TestRemoteSetUnavailable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := keys.NewRemoteSet(context.Background(), srv.URL)
	if errcode.CodeOf(err) != errcode.KeysUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("got %v", err)
	}
}

func TestTrust(t *testing.T) {
	k, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(k.Public())
	tr := keys.NewTrust().AddTrustDomain("a.example", set).AddIssuer("https://tts.a.example", set)
	if _, err := tr.ForTrustDomain("a.example"); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.ForTrustDomain("b.example"); errcode.CodeOf(err) != errcode.UntrustedIssuer {
		t.Fatal(err)
	}
	if _, err := tr.ForIssuer("https://tts.a.example"); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.NewStaticSet(k.Public(), k.Public()); err == nil {
		t.Fatal("duplicate kids accepted")
	}
	b, _ := json.Marshal(set)
	parsed, err := keys.ParseJWKS(b)
	if err != nil || len(parsed.Keys()) != 1 {
		t.Fatal(err)
	}
}

// The fast cnf parser and jwx must agree on every key they both accept.
func TestConfirmationJWKAgreesWithJWX(t *testing.T) {
	for i := 0; i < 50; i++ {
		for _, alg := range []string{keys.ES256, keys.EdDSA, keys.Ed25519} {
			k, _ := keys.Generate(alg)
			b, _ := k.Public().ConfirmationJSON()
			fast, err1 := keys.ParseConfirmationJWK(b)
			slow, err2 := keys.ParsePublicJWK(b)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if fast.Thumbprint() != slow.Thumbprint() || fast.Alg() != slow.Alg() || !fast.Crypto().(interface{ Equal(crypto.PublicKey) bool }).Equal(slow.Crypto()) {
				t.Fatalf("%s: fast and jwx parse differ", alg)
			}
		}
	}
	// A point off the curve, a short coordinate, and a private key are refused.
	for _, j := range []string{
		`{"alg":"ES256","kty":"EC","crv":"P-256","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","y":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE"}`,
		`{"alg":"ES256","kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}`,
		`{"alg":"EdDSA","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}`,
		`{"alg":"EdDSA","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHUR"}`,
	} {
		if _, err := keys.ParseConfirmationJWK([]byte(j)); errcode.CodeOf(err) != errcode.InvalidKey {
			t.Errorf("%s: got %v, want invalid_key", j, err)
		}
	}
}
