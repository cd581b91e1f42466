package witissuer_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/internal/testkit/fakeworkloadapi"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wic"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

const (
	td       = "example.org"
	issuerID = "https://wit-issuer.example.org"
)

var serverID = identifier.MustParse("spiffe://example.org/wit-issuer")

// testCA is an X.509 CA of one trust domain, made in the test.
type testCA struct {
	key  *ecdsa.PrivateKey
	der  []byte
	cert *x509.Certificate
}

func newCA(t testing.TB, now time.Time) *testCA {
	t.Helper()
	ca := fakeworkloadapi.NewCA(t, now)
	return &testCA{key: ca.Key(), der: ca.Cert.Raw, cert: ca.Cert}
}

func (ca *testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der})
}

// svid issues an X.509-SVID (a WIC) for id valid in [nb, na].
func (ca *testCA) svid(t testing.TB, id string, nb, na time.Time) tls.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := wic.IssueWIC(ca.key, ca.der, k.Public(), identifier.MustParse(id), nb, na)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
}

// harness is an issuer on a real TLS listener on loopback with a CA of trust domain
// example.org, a bundle file, a memory replay store and a settable clock.
type harness struct {
	t          *testing.T
	clock      *testkit.Clock
	ca         *testCA
	bundleFile string
	bundles    *witissuer.FileBundles
	rot        *keys.Rotator
	replay     store.Replay
	registry   *prometheus.Registry
	srv        *witissuer.Server
	url        string
	logs       *testkit.SyncBuffer
	assertKey  *keys.PrivateKey
	assertID   identifier.ID
}

type harnessOpts struct {
	policy witissuer.Policy
	routes func(h *harness, x, a, d witissuer.Authenticator) []witissuer.Route
	replay store.Replay
	ready  []witissuer.ReadyCheck
	rotCfg keys.RotationConfig
	// issuedLevel is Config.IssuedLogLevel.
	issuedLevel slog.Level
}

func newHarness(t *testing.T, o harnessOpts) *harness {
	t.Helper()
	// Real time as the start: the client checks the issuer's certificate with the
	// real clock, the issuer checks client certificates with this one.
	clock := testkit.NewClock(time.Now().Truncate(time.Second))
	h := &harness{t: t, clock: clock, ca: newCA(t, clock.Now()), logs: &testkit.SyncBuffer{}}
	h.bundleFile = filepath.Join(t.TempDir(), "example.org.pem")
	if err := os.WriteFile(h.bundleFile, h.ca.pem(), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	h.bundles, err = witissuer.LoadFileBundles([]witissuer.BundleFile{{TrustDomain: td, Path: h.bundleFile}})
	if err != nil {
		t.Fatal(err)
	}
	signing, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	rc := o.rotCfg
	rc.Now = clock.Now
	if rc.Retain == 0 {
		rc.Retain = time.Hour + 30*time.Second
	}
	h.rot, err = keys.NewStaticRotator(signing, rc)
	if err != nil {
		t.Fatal(err)
	}
	h.replay = o.replay
	if h.replay == nil {
		h.replay = store.NewMemory(store.WithClock(clock.Now))
	}
	h.assertKey, _ = keys.Generate(keys.EdDSA)
	h.assertID = identifier.MustParse("wimse://example.org/batch/reporter")
	x := witissuer.NewX509SVID(h.bundles, clock.Now)
	a, err := witissuer.NewAssertion(issuerID, []witissuer.RegisteredWorkload{{ID: h.assertID, Keys: []*keys.PublicKey{h.assertKey.Public()}}},
		h.replay, witissuer.AssertionOptions{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	d, err := witissuer.NewDev(nil, []string{"wimse://example.org/dev/"}, witissuer.DevOptions{})
	if err != nil {
		t.Fatal(err)
	}
	routes := []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{x, a}}}
	if o.routes != nil {
		routes = o.routes(h, x, a, d)
	}
	pol := o.policy
	if len(pol.TrustDomains) == 0 {
		pol.TrustDomains = []string{td}
	}

	ln, err := tls.Listen("tcp", "127.0.0.1:0", witissuer.ServerTLSConfig(h.serverCert()))
	if err != nil {
		t.Fatal(err)
	}
	h.url = "https://" + ln.Addr().String()
	h.registry = prometheus.NewRegistry()
	h.srv, err = witissuer.New(witissuer.Config{
		Issuer: issuerID, PublicURL: h.url, Keys: h.rot, Replay: h.replay, Policy: pol, Routes: routes,
		Registry: h.registry, Logger: slog.New(slog.NewJSONHandler(h.logs, nil)), Now: clock.Now,
		ReadyChecks: o.ready, IssuedLogLevel: o.issuedLevel,
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h.srv.Handler(), ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return h
}

func (h *harness) serverCert() func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := h.clock.Now()
	c := h.ca.svid(h.t, serverID.String(), now.Add(-time.Hour), now.Add(time.Hour))
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &c, nil }
}

// client returns an HTTP client that verifies the issuer by its SPIFFE ID against the
// test CA and presents cert when given.
func (h *harness) client(cert *tls.Certificate) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: witissuer.ClientTLSConfig(cert, []*x509.Certificate{h.ca.cert}, serverID),
		DialContext:     (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
}

// svid issues a client SVID valid around the harness clock.
func (h *harness) svid(id string) *tls.Certificate {
	now := h.clock.Now()
	c := h.ca.svid(h.t, id, now.Add(-time.Hour), now.Add(time.Hour))
	return &c
}

// result is the outcome of one POST.
type result struct {
	status int
	code   errcode.Code
	resp   witissuer.Response
	header http.Header
}

func (h *harness) post(c *http.Client, body any) result {
	h.t.Helper()
	var b []byte
	switch v := body.(type) {
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			h.t.Fatal(err)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, h.url+witissuer.PathWIT, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	return h.do(c, req)
}

func (h *harness) do(c *http.Client, req *http.Request) result {
	h.t.Helper()
	res, err := c.Do(req)
	if err != nil {
		h.t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(res.Body)
	r := result{status: res.StatusCode, header: res.Header}
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(rb, &r.resp); err != nil {
			h.t.Fatalf("response %q: %v", rb, err)
		}
		return r
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		h.t.Fatalf("error response of type %q: %s", ct, rb)
	}
	r.code = errcode.CodeOf(problem.Read(res.StatusCode, rb))
	return r
}

// request builds a request body whose proof is made with key.
func (h *harness) request(key *keys.PrivateKey, p witissuer.RequestParams) witissuer.RequestBody {
	h.t.Helper()
	if p.Audience == "" {
		p.Audience = issuerID
	}
	if p.Now.IsZero() {
		p.Now = h.clock.Now()
	}
	j, err := witissuer.NewRequestJWS(key, p)
	if err != nil {
		h.t.Fatal(err)
	}
	return witissuer.RequestBody{Request: j}
}

// rawRequest signs arbitrary request claims with signer (the typ can be replaced).
func rawRequest(t testing.TB, typ string, signer *keys.PrivateKey, claims map[string]any) witissuer.RequestBody {
	t.Helper()
	j, err := jose.SignClaims(typ, signer, false, claims)
	if err != nil {
		t.Fatal(err)
	}
	return witissuer.RequestBody{Request: j}
}

func cnfOf(t testing.TB, k *keys.PrivateKey) json.RawMessage {
	t.Helper()
	b, err := k.Public().ConfirmationJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// remoteSet is a verifier's view of the JWKS the issuer serves, over TLS, through
// keys.NewRemoteSet (the JWKS URL configured out of band, WIT-1).
func (h *harness) remoteSet(ctx context.Context) *keys.RemoteSet {
	h.t.Helper()
	rs, err := keys.NewRemoteSet(ctx, h.url+witissuer.PathJWKS, keys.WithHTTPClient(h.client(nil)), keys.WithClock(h.clock.Now))
	if err != nil {
		h.t.Fatal(err)
	}
	return rs
}
