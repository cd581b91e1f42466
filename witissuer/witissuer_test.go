package witissuer_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

func wantRefused(t *testing.T, r result, status int, code errcode.Code) {
	t.Helper()
	if r.status != status || r.code != code {
		t.Fatalf("got %d %q, want %d %q", r.status, r.code, status, code)
	}
}

func (h *harness) validator(ctx context.Context) *wit.Validator {
	return wit.NewValidator(keys.NewTrust().AddTrustDomain(td, h.remoteSet(ctx)),
		wit.WithClock(h.clock.Now), wit.WithIssuers(issuerID))
}

// creds-02 sections 6.1 and 9.3, mutual-tls-02 section 3: a workload that authenticates
// with its X.509-SVID over real TLS gets a WIT for exactly its SPIFFE ID, bound to the
// key it proved, and the WIT verifies through the JWKS the issuer serves.
func TestCreds02Sec6_1_SVIDGetsWITForItsSPIFFEID(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	const id = "spiffe://example.org/ns/prod/sa/orders"
	c := h.client(h.svid(id))
	for _, alg := range []string{keys.ES256, keys.EdDSA, keys.Ed25519} {
		k := testkit.NewKey(t, alg)
		r := h.post(c, h.request(k, witissuer.RequestParams{}))
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", alg, r.status, r.code)
		}
		if r.resp.Sub != id || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: sub %q, Cache-Control %q", alg, r.resp.Sub, r.header.Get("Cache-Control"))
		}
		w, err := h.validator(ctx).Validate(ctx, r.resp.WIT)
		if err != nil {
			t.Fatal(err)
		}
		if w.Subject.String() != id || w.Key.Thumbprint() != k.Public().Thumbprint() || w.Key.Alg() != alg {
			t.Fatalf("%s: WIT certifies %s / %s", alg, w.Subject, w.Key)
		}
		if w.Expiry().Unix() != r.resp.ExpiresAt || w.Expiry().Sub(h.clock.Now()) != witissuer.DefaultMaxLifetime {
			t.Fatalf("%s: expiry %v, answer %d", alg, w.Expiry(), r.resp.ExpiresAt)
		}
		if w.Claims.Iss != issuerID {
			t.Fatalf("iss %q", w.Claims.Iss)
		}
	}
}

// handMade signs an arbitrary protected header and payload.
func handMade(t *testing.T, header map[string]any, payload map[string]any, signer *keys.PrivateKey) string {
	t.Helper()
	hb, _ := json.Marshal(header)
	pb, _ := json.Marshal(payload)
	enc := base64.RawURLEncoding
	in := enc.EncodeToString(hb) + "." + enc.EncodeToString(pb)
	sig, err := signer.Sign([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + enc.EncodeToString(sig)
}

// Every refusal has its own stable code and HTTP status (docs/wit-issuer.md, "API"). Policy
// here: ES256 only, at most 1h, and spiffe://example.org/ns/ may obtain the same path
// under wimse://example.org/ns/.
func TestWITIssuerRefusals(t *testing.T) {
	h := newHarness(t, harnessOpts{policy: witissuer.Policy{
		AllowedAlgs: []string{keys.ES256}, MaxLifetime: time.Hour,
		Rules: []witissuer.Rule{{FromPrefix: "spiffe://example.org/ns/", ToPrefix: "wimse://example.org/ns/"}},
	}})
	const id = "spiffe://example.org/ns/prod/sa/orders"
	good := h.client(h.svid(id))
	now := h.clock.Now()
	k := testkit.NewKey(t, keys.ES256)
	claims := func(mut func(m map[string]any)) map[string]any {
		m := map[string]any{"aud": issuerID, "iat": now.Unix(), "jti": "j-" + time.Now().String(), "cnf": map[string]any{"jwk": cnfOf(t, k)}}
		if mut != nil {
			mut(m)
		}
		return m
	}
	other := newCA(t, now)

	cases := []struct {
		name   string
		client *http.Client
		body   any
		status int
		code   errcode.Code
	}{
		{"SVID from another trust domain", h.client(ptr(other.svid(t, "spiffe://other.org/ns/prod/sa/orders", now.Add(-time.Hour), now.Add(time.Hour)))),
			h.request(k, witissuer.RequestParams{}), 401, errcode.UntrustedIssuer},
		{"SVID of this trust domain signed by a foreign CA", h.client(ptr(other.svid(t, id, now.Add(-time.Hour), now.Add(time.Hour)))),
			h.request(k, witissuer.RequestParams{}), 401, errcode.InvalidSignature},
		{"expired SVID", h.client(ptr(h.ca.svid(t, id, now.Add(-2*time.Hour), now.Add(-time.Second)))),
			h.request(k, witissuer.RequestParams{}), 401, errcode.CertificateNotValid},
		{"proof signed by another key than the one to certify", good,
			rawRequest(t, witissuer.RequestType, testkit.NewKey(t, keys.ES256), claims(nil)), 401, errcode.InvalidSignature},
		{"proof alg differs from cnf.jwk.alg", good,
			rawRequest(t, witissuer.RequestType, testkit.NewKey(t, keys.EdDSA), claims(nil)), 401, errcode.UnsupportedAlg},
		{"subject the policy does not allow", good,
			h.request(k, witissuer.RequestParams{Subject: "spiffe://example.org/ns/prod/sa/payments"}), 403, errcode.SubjectNotAllowed},
		{"mapped subject under another path", good,
			h.request(k, witissuer.RequestParams{Subject: "wimse://example.org/ns/prod/sa/payments"}), 403, errcode.SubjectNotAllowed},
		{"algorithm the policy does not allow", good,
			h.request(testkit.NewKey(t, keys.EdDSA), witissuer.RequestParams{}), 403, errcode.AlgNotAllowed},
		{"lifetime over the maximum", good,
			h.request(k, witissuer.RequestParams{TTL: time.Hour + time.Second}), 403, errcode.LifetimeTooLong},
		{"audience of another issuer", good,
			h.request(k, witissuer.RequestParams{Audience: "https://other.example"}), 401, errcode.AudienceMismatch},
		{"two audiences", good,
			rawRequest(t, witissuer.RequestType, k, claims(func(m map[string]any) { m["aud"] = []string{issuerID, "x"} })), 401, errcode.AudienceMismatch},
		{"iat too old", good, h.request(k, witissuer.RequestParams{Now: now.Add(-61 * time.Second)}), 401, errcode.TooOld},
		{"iat in the future", good, h.request(k, witissuer.RequestParams{Now: now.Add(61 * time.Second)}), 401, errcode.IssuedInFuture},
		{"no iat", good, rawRequest(t, witissuer.RequestType, k, claims(func(m map[string]any) { delete(m, "iat") })), 401, errcode.MissingClaim},
		{"no jti", good, rawRequest(t, witissuer.RequestType, k, claims(func(m map[string]any) { delete(m, "jti") })), 401, errcode.MissingClaim},
		{"jti too long", good, rawRequest(t, witissuer.RequestType, k, claims(func(m map[string]any) { m["jti"] = strings.Repeat("j", 257) })), 401, errcode.InvalidClaim},
		{"no cnf", good, rawRequest(t, witissuer.RequestType, k, claims(func(m map[string]any) { delete(m, "cnf") })), 401, errcode.MissingClaim},
		{"cnf.jwk without alg", good, rawRequest(t, witissuer.RequestType, k, claims(func(m map[string]any) {
			var j map[string]any
			_ = json.Unmarshal(cnfOf(t, k), &j)
			delete(j, "alg")
			m["cnf"] = map[string]any{"jwk": j}
		})), 401, errcode.MissingConfirmationAlg},
		{"ttl not an integer", good, rawRequest(t, witissuer.RequestType, k, claims(func(m map[string]any) { m["ttl"] = 1.5 })), 401, errcode.InvalidClaim},
		{"sub not canonical", good, rawRequest(t, witissuer.RequestType, k, claims(func(m map[string]any) { m["sub"] = "spiffe://Example.org/ns/prod/sa/orders" })), 401, errcode.InvalidTrustDomainChar},
		{"wrong typ", good, rawRequest(t, "JWT", k, claims(nil)), 401, errcode.WrongType},
		{"key in a jwk header", good, witissuer.RequestBody{Request: handMade(t,
			map[string]any{"typ": witissuer.RequestType, "alg": "ES256", "jwk": json.RawMessage(cnfOf(t, k))}, claims(nil), k)}, 401, errcode.ForbiddenHeader},
		{"kid in the request header", good, witissuer.RequestBody{Request: handMade(t,
			map[string]any{"typ": witissuer.RequestType, "alg": "ES256", "kid": "k1"}, claims(nil), k)}, 401, errcode.ForbiddenHeader},
		{"not a JWS", good, witissuer.RequestBody{Request: "a.b"}, 401, errcode.MalformedToken},
		{"no credential at all", h.client(nil), h.request(k, witissuer.RequestParams{}), 401, errcode.Unauthenticated},
		{"no request member", good, `{}`, 400, errcode.InvalidRequest},
		{"unknown member", good, `{"request":"a.b.c","scope":"x"}`, 400, errcode.InvalidRequest},
		{"trailing data", good, `{"request":"a.b.c"}{}`, 400, errcode.InvalidRequest},
		{"body over 64 KiB", good, `{"request":"` + strings.Repeat("a", 70<<10) + `"}`, 413, errcode.BodyTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantRefused(t, h.post(c.client, c.body), c.status, c.code)
		})
	}

	// The mapped subject itself is allowed.
	r := h.post(good, h.request(k, witissuer.RequestParams{Subject: "wimse://example.org/ns/prod/sa/orders"}))
	if r.status != 200 || r.resp.Sub != "wimse://example.org/ns/prod/sa/orders" {
		t.Fatalf("mapped subject: %d %s", r.status, r.code)
	}

	// Content-Type must be JSON.
	req, _ := http.NewRequest(http.MethodPost, h.url+witissuer.PathWIT, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	wantRefused(t, h.do(good, req), 400, errcode.InvalidRequest)
}

func ptr[T any](v T) *T { return &v }

// A replayed request proof is refused: its jti is claimed once. Claims are scoped per
// authenticated sender, so another workload that happens to pick the same jti is not
// refused.
func TestWITIssuerReplayedProof(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := h.client(h.svid("spiffe://example.org/ns/a"))
	body := h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{JTI: "same"})
	if r := h.post(c, body); r.status != 200 {
		t.Fatalf("first: %d %s", r.status, r.code)
	}
	wantRefused(t, h.post(c, body), 401, errcode.Replayed)
	other := h.client(h.svid("spiffe://example.org/ns/b"))
	if r := h.post(other, h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{JTI: "same"})); r.status != 200 {
		t.Fatalf("other sender, same jti: %d %s", r.status, r.code)
	}
}

// failingStore fails every claim, as an unreachable Redis would.
type failingStore struct{}

func (failingStore) Claim(context.Context, string, time.Duration) error {
	return errcode.Unavailable(errcode.StoreUnavailable, errors.New("connection refused"), "redis")
}

func (failingStore) Ping(context.Context) error {
	return errcode.Unavailable(errcode.StoreUnavailable, errors.New("connection refused"), "redis")
}

// A store that cannot answer is "could not be completed" (503), never a success.
func TestWITIssuerStoreUnavailable(t *testing.T) {
	h := newHarness(t, harnessOpts{replay: failingStore{}})
	c := h.client(h.svid("spiffe://example.org/ns/a"))
	wantRefused(t, h.post(c, h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})), 503, errcode.StoreUnavailable)
	res, err := c.Get(h.url + witissuer.PathReadyz)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 503 {
		t.Fatalf("readyz with a failing store: %d", res.StatusCode)
	}
}

// The first method whose credential is present decides: a present but invalid credential
// is a rejection, never a fall-through to the next method.
func TestWITIssuerPresentInvalidCredentialDoesNotFallThrough(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	now := h.clock.Now()
	foreign := newCA(t, now).svid(t, "spiffe://example.org/ns/a", now.Add(-time.Hour), now.Add(time.Hour))
	k := testkit.NewKey(t, keys.ES256)
	body := h.request(k, witissuer.RequestParams{Subject: h.assertID.String()})
	a, err := oauth.NewClientAssertion(h.assertKey, h.assertID, issuerID, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	body.ClientAssertionType, body.ClientAssertion = witissuer.ClientAssertionTypeJWTBearer, a
	// Route [x509svid, assertion]: the bad certificate decides, though the assertion is good.
	wantRefused(t, h.post(h.client(&foreign), body), 401, errcode.InvalidSignature)

	// Route [assertion, x509svid] with a bad assertion and a good certificate.
	h2 := newHarness(t, harnessOpts{routes: func(h *harness, x, a, _ witissuer.Authenticator) []witissuer.Route {
		return []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{a, x}}}
	}})
	body = h2.request(k, witissuer.RequestParams{})
	bad, _ := oauth.NewClientAssertion(h2.assertKey, h2.assertID, "https://other.example", time.Minute, h2.clock.Now())
	body.ClientAssertionType, body.ClientAssertion = witissuer.ClientAssertionTypeJWTBearer, bad
	wantRefused(t, h2.post(h2.client(h2.svid("spiffe://example.org/ns/a")), body), 401, errcode.AudienceMismatch)
}

// The assertion method (RFC 7523 client-assertion style, draft-ietf-oauth-rfc7523bis
// explicit typing) for workloads without SPIFFE.
func TestWITIssuerAssertionMethod(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := h.client(nil)
	now := h.clock.Now()
	assertion := func(key *keys.PrivateKey, typ string, mut func(m map[string]any)) string {
		m := map[string]any{"iss": h.assertID.String(), "sub": h.assertID.String(), "aud": issuerID,
			"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": "a-" + time.Now().String()}
		if mut != nil {
			mut(m)
		}
		return handMade(t, map[string]any{"typ": typ, "alg": key.Alg(), "kid": key.KID()}, m, key)
	}
	body := func(a string) witissuer.RequestBody {
		b := h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})
		b.ClientAssertionType, b.ClientAssertion = witissuer.ClientAssertionTypeJWTBearer, a
		return b
	}
	r := h.post(c, body(assertion(h.assertKey, witissuer.AssertionType, nil)))
	if r.status != 200 || r.resp.Sub != h.assertID.String() {
		t.Fatalf("good assertion: %d %s", r.status, r.code)
	}
	replayed := assertion(h.assertKey, witissuer.AssertionType, func(m map[string]any) { m["jti"] = "once" })
	if r := h.post(c, body(replayed)); r.status != 200 {
		t.Fatalf("first use: %d %s", r.status, r.code)
	}
	unregistered := identifier.MustParse("wimse://example.org/batch/other")
	stranger := testkit.NewKey(t, keys.EdDSA)
	cases := []struct {
		name   string
		body   witissuer.RequestBody
		status int
		code   errcode.Code
	}{
		{"replayed assertion jti", body(replayed), 401, errcode.Replayed},
		{"typ JWT (explicit typing only)", body(assertion(h.assertKey, "JWT", nil)), 401, errcode.WrongType},
		{"unregistered workload", body(assertion(stranger, witissuer.AssertionType, func(m map[string]any) {
			m["iss"], m["sub"] = unregistered.String(), unregistered.String()
		})), 401, errcode.UntrustedIssuer},
		{"signed by another key under the registered kid", body(assertion(stranger.WithKID(h.assertKey.KID()), witissuer.AssertionType, nil)), 401, errcode.InvalidSignature},
		{"sub differs from iss", body(assertion(h.assertKey, witissuer.AssertionType, func(m map[string]any) { m["sub"] = "wimse://example.org/batch/other" })), 401, errcode.InvalidClaim},
		{"audience of another issuer", body(assertion(h.assertKey, witissuer.AssertionType, func(m map[string]any) { m["aud"] = "https://other.example" })), 401, errcode.AudienceMismatch},
		{"no exp", body(assertion(h.assertKey, witissuer.AssertionType, func(m map[string]any) { delete(m, "exp") })), 401, errcode.MissingClaim},
		{"expired", body(assertion(h.assertKey, witissuer.AssertionType, func(m map[string]any) {
			m["iat"], m["exp"] = now.Add(-10*time.Minute).Unix(), now.Add(-5*time.Minute).Unix()
		})), 401, errcode.Expired},
		{"lives longer than 5 minutes", body(assertion(h.assertKey, witissuer.AssertionType, func(m map[string]any) { m["exp"] = now.Add(10 * time.Minute).Unix() })), 403, errcode.LifetimeTooLong},
		{"no iat", body(assertion(h.assertKey, witissuer.AssertionType, func(m map[string]any) { delete(m, "iat") })), 401, errcode.MissingClaim},
		{"no jti", body(assertion(h.assertKey, witissuer.AssertionType, func(m map[string]any) { delete(m, "jti") })), 401, errcode.MissingClaim},
		{"wrong client_assertion_type", func() witissuer.RequestBody {
			b := body(assertion(h.assertKey, witissuer.AssertionType, nil))
			b.ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:saml2-bearer"
			return b
		}(), 400, errcode.InvalidRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantRefused(t, h.post(c, tc.body), tc.status, tc.code) })
	}
}

// Development mode: no secret; the request's sub is believed when listed, and every
// issuance through it is logged as a warning.
func TestWITIssuerDevMethod(t *testing.T) {
	h := newHarness(t, harnessOpts{routes: func(h *harness, _, _, d witissuer.Authenticator) []witissuer.Route {
		return []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{d}}}
	}})
	c := h.client(nil)
	r := h.post(c, h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{Subject: "wimse://example.org/dev/agent"}))
	if r.status != 200 || r.resp.Sub != "wimse://example.org/dev/agent" {
		t.Fatalf("listed: %d %s", r.status, r.code)
	}
	if !strings.Contains(h.logs.String(), `"level":"WARN","msg":"DEVELOPMENT MODE`) {
		t.Fatalf("no development-mode warning in the log: %s", h.logs.String())
	}
	wantRefused(t, h.post(c, h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{Subject: "wimse://example.org/prod/agent"})), 401, errcode.Unauthenticated)
	wantRefused(t, h.post(c, h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})), 401, errcode.Unauthenticated)
	// A prefix that does not end in "/" would match across a segment boundary.
	if _, err := witissuer.NewDev(nil, []string{"wimse://example.org/dev"}, witissuer.DevOptions{}); err == nil {
		t.Fatal("prefix without a trailing slash accepted")
	}
	// dev must come last in a route: it is always "present".
	if _, err := witissuer.New(witissuer.Config{Issuer: issuerID, Keys: h.rot, Replay: h.replay, Policy: witissuer.Policy{TrustDomains: []string{td}},
		Routes: []witissuer.Route{{Path: "/v1/wit", Methods: []witissuer.Authenticator{mustDev(t), witissuer.NewX509SVID(h.bundles, nil)}}}}); err == nil {
		t.Fatal("dev before another method accepted")
	}
}

// A workload registered with a key (the assertion method's) is never issued through the
// dev method, even under one of its prefixes and in a route that offers both: whoever
// reaches the issuer would get what only the key's holder may have. Its key still gets
// it; other identities under the prefix still come for the asking.
func TestWITIssuerDevMethodSkipsRegisteredWorkloads(t *testing.T) {
	h := newHarness(t, harnessOpts{routes: func(h *harness, _, a, _ witissuer.Authenticator) []witissuer.Route {
		d, err := witissuer.NewDev(nil, []string{"wimse://example.org/"}, witissuer.DevOptions{Registered: []identifier.ID{h.assertID}})
		if err != nil {
			t.Fatal(err)
		}
		return []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{a, d}}}
	}})
	c := h.client(nil)
	wantRefused(t, h.post(c, h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{Subject: h.assertID.String()})), 401, errcode.Unauthenticated)
	if r := h.post(c, h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{Subject: "wimse://example.org/dev/agent"})); r.status != 200 {
		t.Fatalf("an unregistered identity under the prefix: %d %s", r.status, r.code)
	}
	now := h.clock.Now()
	a := handMade(t, map[string]any{"typ": witissuer.AssertionType, "alg": h.assertKey.Alg(), "kid": h.assertKey.KID()},
		map[string]any{"iss": h.assertID.String(), "sub": h.assertID.String(), "aud": issuerID,
			"iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": "registered"}, h.assertKey)
	b := h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})
	b.ClientAssertionType, b.ClientAssertion = witissuer.ClientAssertionTypeJWTBearer, a
	if r := h.post(c, b); r.status != 200 || r.resp.Sub != h.assertID.String() {
		t.Fatalf("the registered workload with its key: %d %s", r.status, r.code)
	}
}

func mustDev(t *testing.T) *witissuer.Dev {
	d, err := witissuer.NewDev(nil, []string{"wimse://example.org/dev/"}, witissuer.DevOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Two issuers sharing one Redis see each other's claims: a proof accepted by one is a
// replay at the other. /readyz pings Redis.
func TestWITIssuerRedisReplayShared(t *testing.T) {
	addr := testkit.RedisAddr(t)
	client := redisstore.NewClient([]string{addr}, false)
	t.Cleanup(func() { _ = client.Close() })
	prefix := "dialogtrust:test:witissuer:" + time.Now().Format(time.RFC3339Nano) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		it := client.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for it.Next(ctx) {
			client.Del(ctx, it.Val())
		}
	})
	shared := redisstore.NewReplay(client, redisstore.WithPrefix(prefix))
	ping := func(ctx context.Context) error { return client.Ping(ctx).Err() }
	a := newHarness(t, harnessOpts{replay: shared, ready: []witissuer.ReadyCheck{ping}})
	b := newHarness(t, harnessOpts{replay: shared})
	// b trusts a's CA too, so the same SVID works at both.
	if err := os.WriteFile(b.bundleFile, a.ca.pem(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.bundles.Reload(); err != nil {
		t.Fatal(err)
	}
	cert := a.svid("spiffe://example.org/ns/a")
	body := a.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})
	if r := a.post(a.client(cert), body); r.status != 200 {
		t.Fatalf("issuer a: %d %s", r.status, r.code)
	}
	wantRefused(t, b.post(b.client(cert), body), 401, errcode.Replayed)

	res, err := a.client(nil).Get(a.url + witissuer.PathReadyz)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("readyz with Redis up: %d", res.StatusCode)
	}
}
