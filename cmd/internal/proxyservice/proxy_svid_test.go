package proxyservice

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/internal/testkit/fakeworkloadapi"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

const (
	svidIssuerID = "spiffe://a.example/wit-issuer"
	svidAgentID  = "spiffe://a.example/agent/a1"
)

// svidIssuer is a WIT issuer on TLS that authenticates workloads by their X.509-SVIDs
// only (the x509svid method), with a serving SVID of ca, and that records the serial
// of each client certificate it was presented.
type svidIssuer struct {
	url, jwksFile string
	mu            sync.Mutex
	serials       []string
}

func (s *svidIssuer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.serials...)
}

func startSVIDIssuer(t *testing.T, ca *fakeworkloadapi.CA, now func() time.Time) *svidIssuer {
	t.Helper()
	real := time.Now()
	serving := ca.Issue(t, svidIssuerID, real.Add(-time.Minute), real.Add(24*time.Hour))
	cert := &tls.Certificate{Certificate: [][]byte{serving.CertDER}, PrivateKey: mustPKCS8(t, serving.KeyPKCS8)}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", witissuer.ServerTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }))
	if err != nil {
		t.Fatal(err)
	}
	s := &svidIssuer{url: "https://" + ln.Addr().String()}
	key, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	rot, err := keys.NewStaticRotator(key, keys.RotationConfig{Retain: 2 * time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	bundle := x509bundle.FromX509Authorities(spiffeid.RequireTrustDomainFromString("a.example"), []*x509.Certificate{ca.Cert})
	ws, err := witissuer.New(witissuer.Config{Issuer: s.url, Keys: rot, Replay: store.NewMemory(store.WithClock(now)), Now: now,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Policy: witissuer.Policy{TrustDomains: []string{"a.example"}},
		Routes: []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{witissuer.NewX509SVID(bundle, now)}}}})
	if err != nil {
		t.Fatal(err)
	}
	h := ws.Handler()
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == witissuer.PathWIT && len(r.TLS.PeerCertificates) > 0 {
				s.mu.Lock()
				s.serials = append(s.serials, r.TLS.PeerCertificates[0].SerialNumber.String())
				s.mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	jwks, err := rot.Ring().JWKS()
	if err != nil {
		t.Fatal(err)
	}
	s.jwksFile = filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(s.jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

func mustPKCS8(t *testing.T, der []byte) any {
	t.Helper()
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// waitFor polls cond until it holds: it waits for an event in another goroutine (a
// stream's update, a server hearing of a closed stream), not for time to pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 15s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// "dialogtrust proxy" with workload.workload_api: it starts before the agent has an
// SVID for it and is not ready (svid_unavailable) until one arrives; then it obtains a
// WIT for the SVID's SPIFFE ID with that SVID as its client certificate and forwards
// the agent's request with it; at shutdown it closes its stream to the Workload API.
func TestProxyWorkloadAPI(t *testing.T) {
	ca := fakeworkloadapi.NewCA(t, time.Now())
	iss := startSVIDIssuer(t, ca, time.Now)
	api := fakeworkloadapi.Start(t)
	t.Cleanup(func() { // runs after the proxy's stop, registered below
		waitFor(t, "the proxy to close its Workload API stream", func() bool { return api.Streams() == 0 })
	})
	up, seen := headersApp(t)
	urls := startProxy(t, fmt.Sprintf(`listen: 127.0.0.1:0
trust_domains: [a.example]
workload:
  id: %s
  wit_issuer: %s
  auth: x509svid
  workload_api: {socket: %q}
  server_id: %s
wits: [{trust_domain: a.example, jwks_file: %s}]
egress:
  listen: 127.0.0.1:0
  routes: [{prefix: /up, upstream: %s}]
`, svidAgentID, iss.url, api.Addr, svidIssuerID, iss.jwksFile, up.URL))

	readyz := func() (int, string) {
		res, err := http.Get(urls["ops"] + service.PathReadyz)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var doc struct{ Code string }
		_ = json.NewDecoder(res.Body).Decode(&doc)
		return res.StatusCode, doc.Code
	}
	if st, code := readyz(); st != http.StatusServiceUnavailable || code != string(errcode.SVIDUnavailable) {
		t.Fatalf("before any SVID: /readyz %d %q, want 503 %s", st, code, errcode.SVIDUnavailable)
	}
	now := time.Now()
	svid := ca.Issue(t, svidAgentID, now.Add(-time.Minute), now.Add(time.Hour))
	api.Push(svid, ca.Cert.Raw)
	waitFor(t, "/readyz to answer 200 after the SVID arrived", func() bool { st, _ := readyz(); return st == http.StatusOK })

	req, _ := http.NewRequest("POST", urls["egress"]+"/up/x", strings.NewReader("hi"))
	req.Header.Set("Content-Type", "text/plain")
	res, b := testkit.Do(t, http.DefaultClient, req)
	if res.StatusCode != 200 || string(b) != "done" {
		t.Fatalf("through the egress: %d %s", res.StatusCode, b)
	}
	h := <-seen
	if sub := svidWITSubject(t, h.Get(wit.HeaderName)); sub != svidAgentID {
		t.Fatalf("the upstream saw a WIT for %q, want %s", sub, svidAgentID)
	}
	if got := iss.seen(); len(got) == 0 || got[len(got)-1] != svid.Leaf.SerialNumber.String() {
		t.Fatalf("the issuer was presented %v, want the SVID %s", got, svid.Leaf.SerialNumber)
	}
}

func svidWITSubject(t *testing.T, tok string) string {
	t.Helper()
	p, err := jose.Parse(tok, 0)
	if err != nil {
		t.Fatalf("WIT %q: %v", tok, err)
	}
	var c wit.Claims
	if err := netjson.DecodeClaims(p.Payload, &c); err != nil {
		t.Fatal(err)
	}
	return c.Sub
}

// The WIT source of the workload_api mode across an SVID rotation: when the WIT is due
// (time is the test's clock), the new WIT is fetched with the rotated SVID, which the
// issuer sees, not a copy of the first. Close drops the stream.
func TestWorkloadAPIWITRefreshAcrossRotation(t *testing.T) {
	clock := testkit.NewClock(time.Now().Truncate(time.Second))
	ca := fakeworkloadapi.NewCA(t, clock.Now())
	// The issuer on real time (the client's request JWS carries the real time), the
	// source on the test's clock: advancing it makes the WIT due, not expired.
	iss := startSVIDIssuer(t, ca, time.Now)
	api := fakeworkloadapi.Start(t)
	real := time.Now()
	first := ca.Issue(t, svidAgentID, real.Add(-time.Minute), real.Add(24*time.Hour))
	api.Push(first, ca.Cert.Raw)

	svids := kit.OpenWorkloadAPI(t.Context(), api.Addr, "X.509-SVID", slog.New(slog.NewJSONHandler(io.Discard, nil)))
	defer svids.Close()
	src, err := workloadAPIWITSource(ProxyWorkloadConfig{WITIssuer: iss.url, ServerID: svidIssuerID}, svids, wit.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	waitFor(t, "the first SVID", func() bool { return svids.Ready(ctx) == nil })
	c1, err := src.Credential(ctx)
	if err != nil {
		t.Fatal(err)
	}

	second := ca.Issue(t, svidAgentID, real.Add(-time.Minute), real.Add(24*time.Hour))
	api.Push(second, ca.Cert.Raw)
	waitFor(t, "the rotated SVID", func() bool {
		v, err := svids.GetX509SVID()
		return err == nil && v.Certificates[0].SerialNumber.Cmp(second.Leaf.SerialNumber) == 0
	})
	if c, err := src.Credential(ctx); err != nil || c.WIT != c1.WIT {
		t.Fatalf("a WIT not due yet was fetched again: %v", err)
	}
	clock.Advance(witissuer.DefaultMaxLifetime * 5 / 6) // past the refresh point (80%), before the expiry
	c2, err := src.Credential(ctx)
	if err != nil {
		t.Fatalf("the WIT refresh after the rotation: %v", err)
	}
	if c2.WIT == c1.WIT || svidWITSubject(t, c2.WIT) != svidAgentID {
		t.Fatal("no new WIT for the workload after the rotation")
	}
	want := []string{first.Leaf.SerialNumber.String(), second.Leaf.SerialNumber.String()}
	if got := iss.seen(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the issuer was presented %v, want %v", got, want)
	}

	svids.Close()
	waitFor(t, "the closed source's stream to end", func() bool { return api.Streams() == 0 })
	if err := svids.Ready(ctx); errcode.CodeOf(err) != errcode.SVIDUnavailable {
		t.Fatalf("ready after Close: %v", err)
	}
}

// -check-config on the workload_api forms.
func TestProxyCheckConfigWorkloadAPI(t *testing.T) {
	base := func(workload string) string {
		return "trust_domains: [a.example]\nworkload: {id: " + svidAgentID + ", wit_issuer: https://127.0.0.1:1, " + workload + "}\n" +
			"wits: [{trust_domain: a.example, jwks_file: x}]\negress: {listen: 127.0.0.1:0, routes: [{prefix: /x, upstream: http://127.0.0.1:3}]}\n"
	}
	const api = `auth: x509svid, server_id: spiffe://a.example/wit-issuer, workload_api: {socket: "unix:///run/spire/agent.sock"}`
	for name, c := range map[string]struct{ yaml, env, want string }{
		"socket":            {base(api), "", ""},
		"environment":       {base(`auth: x509svid, server_id: spiffe://a.example/wit-issuer, workload_api: {}`), "unix:///run/spire/agent.sock", ""},
		"no socket":         {base(`auth: x509svid, server_id: spiffe://a.example/wit-issuer, workload_api: {}`), "", "SPIFFE_ENDPOINT_SOCKET"},
		"bad socket":        {base(strings.Replace(api, "unix:///run", "/run", 1)), "", "workload_api.socket"},
		"files too":         {base(api + ", svid_cert_file: a.pem"), "", "excludes svid_cert_file"},
		"bundle too":        {base(api + ", bundle_file: b.pem"), "", "excludes svid_cert_file"},
		"no server_id":      {base(strings.Replace(api, "server_id: spiffe://a.example/wit-issuer, ", "", 1)), "", "server_id: required"},
		"other auth":        {base(strings.Replace(api, "auth: x509svid", "auth: development", 1)), "", "only with auth x509svid"},
		"files (unchanged)": {base("auth: x509svid, svid_cert_file: a.pem, svid_key_file: a.key, bundle_file: b.pem"), "", ""},
		"files incomplete":  {base("auth: x509svid, svid_cert_file: a.pem"), "", "needs svid_cert_file, svid_key_file and bundle_file"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("SPIFFE_ENDPOINT_SOCKET", c.env)
			if c.env == "" {
				os.Unsetenv("SPIFFE_ENDPOINT_SOCKET")
			}
			expectCheckConfig(t, name, c.yaml, c.want)
		})
	}
}
