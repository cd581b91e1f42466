package witissuer_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// creds-02 section 9.3 with bundles that change: after a reload, a client whose CA left
// the bundle is refused, also on a resumed TLS session (Go skips VerifyPeerCertificate
// on resumption; the issuer verifies in the handler on every request instead).
func TestCreds02Sec9_3_BundleReloadAppliesToResumedSessions(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	cert := h.svid("spiffe://example.org/ns/a")
	cfg := witissuer.ClientTLSConfig(cert, []*x509.Certificate{h.ca.cert}, serverID)
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	post := func() (result, bool) {
		body, _ := json.Marshal(h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{}))
		req, _ := http.NewRequest(http.MethodPost, h.url+witissuer.PathWIT, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resumed := res.TLS != nil && res.TLS.DidResume
		res.Body.Close()
		return result{status: res.StatusCode}, resumed
	}
	if r, _ := post(); r.status != 200 {
		t.Fatalf("first: %d", r.status)
	}
	if r, resumed := post(); r.status != 200 || !resumed {
		t.Fatalf("second: %d, resumed %v (the resumption path must be exercised)", r.status, resumed)
	}

	// The operator replaces the CA.
	newCA := newCA(t, h.clock.Now())
	if err := os.WriteFile(h.bundleFile, newCA.pem(), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(h.bundleFile, later, later); err != nil {
		t.Fatal(err)
	}
	ticks := make(chan time.Time)
	reports := make(chan bool, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.bundles.Watch(ctx, ticks, func(changed bool, err error) {
		if err != nil {
			t.Error(err)
		}
		reports <- changed
	})
	ticks <- time.Now()
	if !<-reports {
		t.Fatal("the watcher did not see the change")
	}
	r, resumed := post()
	if r.status != 401 || !resumed {
		t.Fatalf("after the CA left the bundle: %d, resumed %v", r.status, resumed)
	}
	// With the harness reader, for the code.
	wantRefused(t, h.post(h.client(cert), h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})), 401, errcode.InvalidSignature)
	// The new CA's workloads get in.
	now := h.clock.Now()
	fresh := newCA.svid(t, "spiffe://example.org/ns/a", now.Add(-time.Hour), now.Add(time.Hour))
	if r := h.post(h.client(&fresh), h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})); r.status != 200 {
		t.Fatalf("new CA: %d %s", r.status, r.code)
	}

	// A half-written bundle keeps the previous one in service.
	if err := os.WriteFile(h.bundleFile, []byte("-----BEGIN CERT"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.bundles.Reload(); err == nil {
		t.Fatal("a broken bundle file loaded")
	}
	if r := h.post(h.client(&fresh), h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})); r.status != 200 {
		t.Fatalf("after a failed reload: %d %s", r.status, r.code)
	}
}

func kidOf(t *testing.T, tok string) string {
	t.Helper()
	p, err := jose.Parse(tok, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p.Kid
}

func (h *harness) jwksKIDs(t *testing.T) []string {
	t.Helper()
	return testkit.JWKSKIDs(t, h.client(nil), h.url+witissuer.PathJWKS)
}

// creds-02 section 3 (multiple keys for rotation) and WIT-1: rotation publishes before
// use; WITs signed before a rotation verify through the JWKS until they expire; new WITs
// use the new key; a verifier with a cached JWKS (keys.RemoteSet) finds the new key by
// kid; the old key leaves the JWKS after its retention.
func TestCreds02Sec3_RotationPublishBeforeUse(t *testing.T) {
	h := newHarness(t, harnessOpts{rotCfg: keys.RotationConfig{PublishDelay: 10 * time.Minute, Retain: time.Hour + 30*time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := h.client(h.svid("spiffe://example.org/ns/a"))
	issue := func() string {
		t.Helper()
		r := h.post(c, h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{}))
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.code)
		}
		return r.resp.WIT
	}
	// The verifier fetches the JWKS now and caches it.
	v := h.validator(ctx)
	old := issue()
	kid1 := kidOf(t, old)
	if _, err := v.Validate(ctx, old); err != nil {
		t.Fatal(err)
	}

	kid2, err := h.rot.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if kids := h.jwksKIDs(t); len(kids) != 2 || kids[0] != kid1 || kids[1] != kid2 {
		t.Fatalf("after publish the JWKS holds %v", kids)
	}
	if k := kidOf(t, issue()); k != kid1 {
		t.Fatal("a published key signed before its publish delay passed")
	}
	h.clock.Advance(10*time.Minute - time.Second)
	if err := h.rot.Step(); err != nil {
		t.Fatal(err)
	}
	if k := kidOf(t, issue()); k != kid1 {
		t.Fatal("activated early")
	}
	h.clock.Advance(time.Second)
	if err := h.rot.Step(); err != nil {
		t.Fatal(err)
	}
	fresh := issue()
	if kidOf(t, fresh) != kid2 {
		t.Fatal("new WITs do not use the new key")
	}
	// The cached verifier has never seen kid2: the unknown kid forces one refresh.
	if _, err := v.Validate(ctx, fresh); err != nil {
		t.Fatalf("cached verifier did not pick up the new key: %v", err)
	}
	// The old WIT verifies until it expires (issued at t0, exp t0+1h).
	h.clock.Advance(49*time.Minute + 59*time.Second)
	if _, err := v.Validate(ctx, old); err != nil {
		t.Fatalf("old WIT one second before its expiry: %v", err)
	}
	if kids := h.jwksKIDs(t); len(kids) != 2 {
		t.Fatalf("old key left the JWKS while its WITs live: %v", kids)
	}
	// Past exp plus the verifier's 30s skew.
	h.clock.Advance(31 * time.Second)
	if _, err := v.Validate(ctx, old); errcode.CodeOf(err) != errcode.Expired {
		t.Fatalf("old WIT after expiry: %v", err)
	}
	// Retention ends at activation + 1h30s.
	h.clock.Advance(9*time.Minute + 59*time.Second)
	if err := h.rot.Step(); err != nil {
		t.Fatal(err)
	}
	if kids := h.jwksKIDs(t); len(kids) != 2 {
		t.Fatalf("old key left the JWKS before its retention ended: %v", kids)
	}
	h.clock.Advance(time.Second)
	if err := h.rot.Step(); err != nil {
		t.Fatal(err)
	}
	if kids := h.jwksKIDs(t); len(kids) != 1 || kids[0] != kid2 {
		t.Fatalf("after retention the JWKS holds %v", kids)
	}
	if st := h.rot.State(); len(st.Keys) != 1 || st.Keys[0].State != keys.KeyActive {
		t.Fatalf("state %+v", st)
	}
}

// Operations endpoints: health, readiness, metadata, JWKS and Prometheus metrics.
func TestWITIssuerOpsEndpoints(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	c := h.client(h.svid("spiffe://example.org/ns/a"))
	body := h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})
	if r := h.post(c, body); r.status != 200 {
		t.Fatal(r.code)
	}
	wantRefused(t, h.post(c, body), 401, errcode.Replayed)

	get := func(path string) (int, string, http.Header) {
		res, err := c.Get(h.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b), res.Header
	}
	if s, _, _ := get(witissuer.PathHealthz); s != 200 {
		t.Fatalf("healthz %d", s)
	}
	if s, _, _ := get(witissuer.PathReadyz); s != 200 {
		t.Fatalf("readyz %d", s)
	}
	s, b, hdr := get(witissuer.PathJWKS)
	if s != 200 || hdr.Get("Content-Type") != "application/jwk-set+json" || strings.Contains(b, `"d"`) {
		t.Fatalf("jwks %d %s %s", s, hdr.Get("Content-Type"), b)
	}
	s, b, _ = get(witissuer.PathMetadata)
	var md witissuer.Metadata
	if err := json.Unmarshal([]byte(b), &md); err != nil || s != 200 {
		t.Fatal(s, err)
	}
	want := witissuer.Metadata{Issuer: issuerID, JWKSURI: h.url + witissuer.PathJWKS, WITEndpoint: h.url + witissuer.PathWIT,
		SigningAlgValuesSupported: []string{"ES256"}, CnfAlgValuesSupported: witissuer.DefaultAllowedAlgs,
		AuthMethodsSupported: []string{"x509svid", "assertion"}}
	if gotJ, _ := json.Marshal(md); string(gotJ) != mustJSON(want) {
		t.Fatalf("metadata %s, want %s", gotJ, mustJSON(want))
	}
	_, b, _ = get(witissuer.PathMetrics)
	for _, line := range []string{
		`dialogtrust_wit_issued_total{method="x509svid"} 1`,
		`dialogtrust_wit_refused_total{code="replayed"} 1`,
		`dialogtrust_wit_request_duration_seconds_count 2`,
	} {
		if !strings.Contains(b, line) {
			t.Errorf("metrics lack %q", line)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// WIT-5 and the issue's logging rule: logs are JSON and never contain a token, a
// request proof or a client assertion; a WIT appears only as its SHA-256.
func TestCreds02WIT5_LogsNeverContainTokensOrProofs(t *testing.T) {
	h := newHarness(t, harnessOpts{routes: func(h *harness, x, a, d witissuer.Authenticator) []witissuer.Route {
		return []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{x, a, d}}}
	}})
	c := h.client(nil)
	var secrets []string
	body := h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{Subject: "wimse://example.org/dev/a"})
	r := h.post(c, body)
	if r.status != 200 {
		t.Fatal(r.code)
	}
	secrets = append(secrets, body.Request, r.resp.WIT)
	hashes := []string{tokenhash.Of(r.resp.WIT)}
	wantRefused(t, h.post(c, body), 401, errcode.Replayed)

	b2 := h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})
	a, _ := oauth.NewClientAssertion(h.assertKey, h.assertID, issuerID, time.Minute, h.clock.Now())
	b2.ClientAssertionType, b2.ClientAssertion = witissuer.ClientAssertionTypeJWTBearer, a
	r = h.post(c, b2)
	if r.status != 200 {
		t.Fatal(r.code)
	}
	secrets = append(secrets, b2.Request, a, r.resp.WIT)
	hashes = append(hashes, tokenhash.Of(r.resp.WIT))
	wantRefused(t, h.post(c, b2), 401, errcode.Replayed) // a replayed assertion, logged as refused

	logs := h.logs.String()
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("log line is not JSON: %s", line)
		}
	}
	for _, s := range secrets {
		for _, part := range strings.Split(s, ".") {
			if len(part) > 16 && strings.Contains(logs, part) {
				t.Fatalf("a token (or part of one) is in the log")
			}
		}
	}
	for _, hsh := range hashes {
		if !strings.Contains(logs, hsh) {
			t.Fatalf("the log does not name the WIT by its hash %s", hsh)
		}
	}
}

// The client side: discovery, a refreshing Source with a fresh key per WIT (creds-02
// section 9.4), refusals carrying the issuer's code, and the assertion method.
func TestCreds02Sec9_4_ClientSourceAgainstIssuer(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx := context.Background()
	hc := h.client(h.svid("spiffe://example.org/ns/a"))
	cl, md, err := witissuer.NewClient(ctx, hc, h.url)
	if err != nil {
		t.Fatal(err)
	}
	if md.Issuer != issuerID || cl.Endpoint != h.url+witissuer.PathWIT {
		t.Fatalf("discovered %+v", md)
	}
	cl.Now = h.clock.Now
	cl.TTL = 10 * time.Minute
	src := cl.Source(wit.WithClock(h.clock.Now))
	v := h.validator(ctx)
	c1, err := src.Credential(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w1, err := v.Validate(ctx, c1.WIT)
	if err != nil || w1.Key.Thumbprint() != c1.Key.Public().Thumbprint() || w1.Subject.String() != "spiffe://example.org/ns/a" {
		t.Fatalf("first credential: %v", err)
	}
	h.clock.Advance(8 * time.Minute)
	c2, err := src.Credential(ctx)
	if err != nil || c2 == c1 || c2.Key.KID() == c1.Key.KID() {
		t.Fatalf("refresh at 80%%: %v", err)
	}
	if _, err := v.Validate(ctx, c2.WIT); err != nil {
		t.Fatal(err)
	}

	// A refusal carries the issuer's code.
	cl.Subject = "spiffe://example.org/ns/b"
	if _, err := cl.Request(ctx, testkit.NewKey(t, keys.ES256)); errcode.CodeOf(err) != errcode.SubjectNotAllowed {
		t.Fatalf("refusal: %v", err)
	}

	// The assertion method through the client.
	ac := &witissuer.Client{Endpoint: cl.Endpoint, Audience: issuerID, HTTPClient: h.client(nil), Now: h.clock.Now}
	ac.Assertion = witissuer.AssertionFunc(h.assertKey, ac, h.assertID, time.Minute)
	res, err := ac.Request(ctx, testkit.NewKey(t, keys.EdDSA))
	if err != nil || res.Sub != h.assertID.String() {
		t.Fatalf("assertion client: %v", err)
	}

	// An unreachable issuer is "could not be completed".
	dead := &witissuer.Client{Endpoint: "http://127.0.0.1:1/v1/wit", Audience: issuerID}
	if _, err := dead.Request(ctx, testkit.NewKey(t, keys.ES256)); errcode.CodeOf(err) != errcode.IssuerUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("dead issuer: %v", err)
	}
}

// Metadata must not send a workload's credentials to another origin.
func TestDiscoverRefusesForeignLinks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(witissuer.Metadata{Issuer: "x", WITEndpoint: "https://evil.example/v1/wit", JWKSURI: "http://" + r.Host + "/jwks"})
	}))
	defer srv.Close()
	if _, err := witissuer.Discover(context.Background(), srv.Client(), srv.URL); errcode.CodeOf(err) != errcode.IssuerMismatch {
		t.Fatalf("got %v", err)
	}
}

// A client refuses a WIT that does not certify the key it asked for.
func TestClientRefusesWITForAnotherKey(t *testing.T) {
	d := newDomainIssuer(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other := testkit.NewKey(t, keys.ES256)
		tok, c, _ := d.Issue(identifier.MustParse("wimse://example.org/a"), other.Public(), time.Hour)
		_ = json.NewEncoder(w).Encode(witissuer.Response{WIT: tok, ExpiresAt: int64(*c.Exp), Sub: c.Sub})
	}))
	defer srv.Close()
	cl := &witissuer.Client{Endpoint: srv.URL, Audience: issuerID, HTTPClient: srv.Client()}
	if _, err := cl.Request(context.Background(), testkit.NewKey(t, keys.ES256)); errcode.CodeOf(err) != errcode.InvalidClaim {
		t.Fatalf("got %v", err)
	}
}

func newDomainIssuer(t *testing.T) *wit.Issuer {
	k := testkit.NewKey(t, keys.ES256)
	return wit.NewIssuer(issuerID, func() *keys.PrivateKey { return k })
}

// IssuedLogLevel moves the "wit issued" line: at debug, under a logger at info, no line
// is written for a WIT issued; a refusal is still logged.
func TestIssuedLogLevel(t *testing.T) {
	h := newHarness(t, harnessOpts{issuedLevel: slog.LevelDebug})
	c := h.client(nil)
	b := h.request(testkit.NewKey(t, keys.ES256), witissuer.RequestParams{})
	a, _ := oauth.NewClientAssertion(h.assertKey, h.assertID, issuerID, time.Minute, h.clock.Now())
	b.ClientAssertionType, b.ClientAssertion = witissuer.ClientAssertionTypeJWTBearer, a
	if r := h.post(c, b); r.status != 200 {
		t.Fatal(r.code)
	}
	wantRefused(t, h.post(c, b), 401, errcode.Replayed)
	logs := h.logs.String()
	if strings.Contains(logs, `"wit issued"`) {
		t.Errorf("issued line at debug under an info logger:\n%s", logs)
	}
	if !strings.Contains(logs, `"wit refused"`) {
		t.Errorf("no line for the refusal:\n%s", logs)
	}
}
