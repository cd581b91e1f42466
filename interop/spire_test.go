package interop_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/exp/bundle/witbundle"
	"github.com/spiffe/go-spiffe/v2/exp/svid/witsvid"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"github.com/spiffe/go-spiffe/v2/workloadapi"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/witissuer"
	"github.com/dialogtrust/dialogtrust/witissuer/spiffeadapter"

	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
)

const (
	spireTD = "example.org"
	// spireIssuerSVIDTTL is the X.509-SVID lifetime of the WIT issuer's registration
	// entry: short, so that the agent rotates it (at about half of it) during the test.
	spireIssuerSVIDTTL = 16 * time.Second
	// spireRotationWait bounds the wait for that rotation under load.
	spireRotationWait = 60 * time.Second
	// spireWITLifetime is the issuer's default WIT lifetime: short, so that the proxy
	// refreshes its WIT (30 s before the expiry) while the test runs, after SPIRE rotated
	// its SVID (whose lifetime is spireIssuerSVIDTTL too).
	spireWITLifetime = time.Minute
)

var (
	spireIssuerID  = spiffeid.RequireFromString("spiffe://example.org/wit-issuer")
	spireWorkloadA = spiffeid.RequireFromString("spiffe://example.org/workload-a")
	spireWorkloadB = spiffeid.RequireFromString("spiffe://example.org/workload-b")
)

// spire is one trust domain's SPIRE (a server and one agent) and the WIT issuer that
// takes its serving SVID from that agent, all in one temporary directory.
type spire struct {
	dir, serverBin, agentBin string
	a                        *spireDomain
	agentSock                string // domain A's Workload API
	bundleFile               string // domain A's bundle as spire-server bundle show gave it at start
	fedPort                  int    // domain A's SPIFFE bundle endpoint
	issuerURL                string
	bundle                   []*x509.Certificate
}

// TestSpire runs the WIT issuer against a real SPIRE: spire-server (sqlite datastore,
// join-token node attestation) and spire-agent (unix workload attestor, with the
// workload's binary path as selector), on loopback TCP and unix sockets. Workload A is
// this test process, workload B a copy of the test binary run as a subprocess; the
// issuer is the wit-issuer binary built from this checkout.
func TestSpire(t *testing.T) {
	serverBin := proc.Binary(t, "DIALOGTRUST_SPIRE_SERVER")
	agentBin := proc.Binary(t, "DIALOGTRUST_SPIRE_AGENT")
	s := startSpire(t, serverBin, agentBin)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Workload A: this process, identified by the agent through /proc/<pid>/exe.
	src, err := workloadapi.NewX509Source(ctx, workloadapi.WithClientOptions(workloadapi.WithAddr("unix://"+s.agentSock)))
	if err != nil {
		t.Fatalf("workload A's X.509-SVID from the Workload API: %v", err)
	}
	t.Cleanup(func() { _ = src.Close() })
	svid, err := src.GetX509SVID()
	if err != nil || svid.ID != spireWorkloadA {
		t.Fatalf("workload A got %v, %v", svid, err)
	}
	hc := s.httpClient(src.GetX509SVID)

	t.Run("OwnID", func(t *testing.T) {
		c := &witissuer.Client{Endpoint: s.issuerURL + witissuer.PathWIT, Audience: s.issuerURL, HTTPClient: hc}
		bundle := s.witBundle(t, hc)
		for _, sub := range []string{"", spireWorkloadA.String()} {
			cc := *c
			cc.Subject = sub
			r, err := cc.Request(ctx, mustKey(t))
			if err != nil {
				t.Fatalf("sub %q: %v", sub, err)
			}
			if r.Sub != spireWorkloadA.String() {
				t.Fatalf("sub %q: issued for %s", sub, r.Sub)
			}
			got, err := witsvid.ParseAndValidate(r.WIT, bundle)
			if err != nil || got.ID != spireWorkloadA {
				t.Fatalf("go-spiffe on the issued WIT: %v, %v", got, err)
			}
			// The same WIT with one character of its signature changed.
			sig := r.WIT[len(r.WIT)-10]
			alt := byte('A')
			if sig == 'A' {
				alt = 'B'
			}
			if _, err := witsvid.ParseAndValidate(r.WIT[:len(r.WIT)-10]+string(alt)+r.WIT[len(r.WIT)-9:], bundle); err == nil {
				t.Fatal("go-spiffe accepted a WIT with a changed signature")
			}
		}
		// The adapters against the real issuer: a go-spiffe witsvid.Source.
		bundles, err := spiffeadapter.NewJWKSSource(ctx, hc, spiffeid.RequireTrustDomainFromString(spireTD), s.issuerURL+witissuer.PathJWKS, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ws := spiffeadapter.NewSVIDSource(c, bundles)
		if got, err := ws.GetWITSVIDForID(spireWorkloadA); err != nil || got.ID != spireWorkloadA || got.PrivateKey == nil {
			t.Fatalf("SVIDSource for its own ID: %v, %v", got, err)
		}
		if _, err := ws.GetWITSVIDForID(spireWorkloadB); errcode.CodeOf(err) != errcode.SubjectNotAllowed {
			t.Fatalf("SVIDSource for workload B's ID: %v", err)
		}
	})

	t.Run("OtherID", func(t *testing.T) {
		c := &witissuer.Client{Endpoint: s.issuerURL + witissuer.PathWIT, Audience: s.issuerURL, HTTPClient: hc, Subject: spireWorkloadB.String()}
		_, err := c.Request(ctx, mustKey(t))
		if errcode.CodeOf(err) != errcode.SubjectNotAllowed {
			t.Fatalf("workload A asking for workload B's ID: %v, want %s", err, errcode.SubjectNotAllowed)
		}
	})

	t.Run("NoSVID", func(t *testing.T) {
		noCert := s.httpClient(nil)
		c := &witissuer.Client{Endpoint: s.issuerURL + witissuer.PathWIT, Audience: s.issuerURL, HTTPClient: noCert, Subject: spireWorkloadA.String()}
		if _, err := c.Request(ctx, mustKey(t)); errcode.CodeOf(err) != errcode.Unauthenticated {
			t.Fatalf("no client SVID: %v, want %s", err, errcode.Unauthenticated)
		}
	})

	t.Run("WorkloadB", func(t *testing.T) {
		res := s.runHelper(t, "workload-b", s.agentSock, ","+spireWorkloadB.String()+","+spireWorkloadA.String())
		if res.SVID != spireWorkloadB.String() || len(res.Answers) != 3 {
			t.Fatalf("workload B: %+v", res)
		}
		bundle := s.witBundle(t, hc)
		for _, a := range res.Answers[:2] {
			if a.Code != "" {
				t.Fatalf("workload B, sub %q: %s", a.Sub, a.Code)
			}
			if got, err := witsvid.ParseAndValidate(a.WIT, bundle); err != nil || got.ID != spireWorkloadB {
				t.Fatalf("workload B's WIT: %v, %v", got, err)
			}
		}
		if a := res.Answers[2]; a.Code != string(errcode.SubjectNotAllowed) || a.WIT != "" {
			t.Fatalf("workload B asking for workload A's ID: %+v, want %s", a, errcode.SubjectNotAllowed)
		}
	})

	// The client side of the x509svid method with go-spiffe's X509Source itself, as a Go
	// agent uses it: SVID and bundle from the agent at each handshake.
	t.Run("ClientTLSConfigFromSource", func(t *testing.T) {
		cfg, err := witissuer.ClientTLSConfigFromSource(src, src, identifier.MustParse(spireIssuerID.String()))
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
		c, _, err := witissuer.NewClient(ctx, hc, s.issuerURL)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Request(ctx, mustKey(t))
		if err != nil || r.Sub != spireWorkloadA.String() {
			t.Fatalf("WIT over the source's SVID: %+v, %v", r, err)
		}
		if got, err := witsvid.ParseAndValidate(r.WIT, s.witBundle(t, hc)); err != nil || got.ID != spireWorkloadA {
			t.Fatalf("go-spiffe on the WIT: %v, %v", got, err)
		}
	})

	t.Run("Proxy", s.proxy)

	t.Run("RotationUnderLoad", func(t *testing.T) { s.rotationUnderLoad(t, ctx, src) })

	// Last: it adds an authority to domain A's bundle.
	t.Run("Federation", s.federation)
}

// spireProxyID is the identity of "dialogtrust proxy" (the binary built from this
// checkout), registered by its path.
var spireProxyID = spiffeid.RequireFromString("spiffe://example.org/proxy")

// proxy runs "dialogtrust proxy" with workload.workload_api on the agent's socket. It is
// started before its registration entry exists, so the agent has no SVID for it: its
// /readyz answers svid_unavailable. Once registered, it becomes ready, and a request
// through its egress reaches the upstream with a WIT the issuer made for the proxy's
// SPIFFE ID (the issuer authenticated it by the SVID from the agent; go-spiffe verifies
// the WIT against the issuer's JWKS). The entry's SVID lifetime is short
// (spireIssuerSVIDTTL): the agent rotates the SVID, the first one expires, and the WIT
// the proxy fetches when its first is due (spireWITLifetime) is issued after that
// expiry, so the issuer must have been presented the rotated SVID.
func (s *spire) proxy(t *testing.T) {
	bin := filepath.Join(s.dir, "bin", "dialogtrust")
	if _, err := proc.Run("go", "build", "-C", "..", "-o", bin, "./cmd/dialogtrust"); err != nil {
		t.Fatal(err)
	}
	hc := s.httpClient(nil)
	res, err := hc.Get(s.issuerURL + witissuer.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the issuer's JWKS: %d %v", res.StatusCode, err)
	}
	jwksFile := filepath.Join(s.dir, "wit-issuer-jwks.json")
	writeFile(t, jwksFile, string(jwks))

	seen := make(chan string, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("Workload-Identity-Token")
		_, _ = io.WriteString(w, "done")
	}))
	defer up.Close()
	ops, egress := testkit.FreePort(t), testkit.FreePort(t)
	conf := filepath.Join(s.dir, "proxy.yaml")
	writeFile(t, conf, fmt.Sprintf(`listen: 127.0.0.1:%d
trust_domains: [%s]
log: {level: debug}
workload:
  id: %s
  wit_issuer: %s
  auth: x509svid
  workload_api: {socket: "unix://%s"}
  server_id: %s
wits: [{trust_domain: %s, jwks_file: %q}]
egress:
  listen: 127.0.0.1:%d
  routes: [{prefix: /up, upstream: %q}]
`, ops, spireTD, spireProxyID, s.issuerURL, s.agentSock, spireIssuerID, spireTD, jwksFile, egress, up.URL))
	check := exec.Command(bin, "proxy", "-check-config", "-config", conf)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("-check-config: %v\n%s", err, out)
	}
	p := proc.Start(t, "dialogtrust-proxy", filepath.Join(s.dir, "proxy.log"), exec.Command(bin, "proxy", "-config", conf))
	opsURL := fmt.Sprintf("http://127.0.0.1:%d", ops)
	readyz := func() (int, string, error) {
		res, err := http.Get(opsURL + "/readyz")
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		var doc struct{ Code string }
		_ = json.NewDecoder(res.Body).Decode(&doc)
		return res.StatusCode, doc.Code, nil
	}
	proc.WaitFor(t, 30*time.Second, "the proxy's ops listener", func() error {
		_, _, err := readyz()
		return err
	}, p)
	if st, code, _ := readyz(); st != http.StatusServiceUnavailable || code != string(errcode.SVIDUnavailable) {
		t.Fatalf("unregistered proxy: /readyz %d %q, want 503 %s", st, code, errcode.SVIDUnavailable)
	}
	s.a.register(t, spireProxyID, bin, spireIssuerSVIDTTL)
	proc.WaitFor(t, 90*time.Second, "the proxy to be ready with its SVID", func() error {
		st, code, err := readyz()
		if err != nil {
			return err
		}
		if st != http.StatusOK {
			return fmt.Errorf("/readyz %d %s", st, code)
		}
		return nil
	}, p, s.a.agent)

	res, err = http.Post(fmt.Sprintf("http://127.0.0.1:%d/up/x", egress), "text/plain", strings.NewReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(body) != "done" {
		t.Fatalf("through the egress: %d %s\n%s", res.StatusCode, body, proc.Tail(p.Log, 30))
	}
	first := <-seen
	got, err := witsvid.ParseAndValidate(first, s.witBundle(t, hc))
	if err != nil || got.ID != spireProxyID {
		t.Fatalf("the upstream's WIT: %v, %v, want one for %s", got, err, spireProxyID)
	}
	firstSVID := proxySVIDNotAfter(t, p.Log)

	// Across the rotation: requests until the upstream sees another WIT.
	var second string
	proc.WaitFor(t, 2*spireWITLifetime, "the proxy's next WIT", func() error {
		res, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/up/x", egress), "text/plain", strings.NewReader("hi"))
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("egress %d", res.StatusCode)
		}
		if tok := <-seen; tok != first {
			second = tok
			return nil
		}
		return errors.New("still the first WIT")
	}, p, s.a.agent)
	got, err = witsvid.ParseAndValidate(second, s.witBundle(t, hc))
	if err != nil || got.ID != spireProxyID {
		t.Fatalf("the refreshed WIT: %v, %v, want one for %s", got, err, spireProxyID)
	}
	if issued := got.Expiry.Add(-spireWITLifetime); !issued.After(firstSVID) {
		t.Fatalf("the second WIT was issued at %s, before the first SVID expired (%s): nothing shows the rotation", issued, firstSVID)
	}
	if b, _ := os.ReadFile(p.Log); !strings.Contains(string(b), "X.509-SVID updated") {
		t.Errorf("the proxy logged no SVID rotation:\n%s", proc.Tail(p.Log, 30))
	}
	p.Stop(t)
	if err := p.Err(); err != nil {
		t.Errorf("the proxy's stop: %v\n%s", err, proc.Tail(p.Log, 30))
	}
}

// proxySVIDNotAfter is the expiry of the first X.509-SVID the proxy logged.
func proxySVIDNotAfter(t *testing.T, logFile string) time.Time {
	t.Helper()
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var l struct {
			Msg      string    `json:"msg"`
			SPIFFEID string    `json:"spiffe_id"`
			NotAfter time.Time `json:"not_after"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "X.509-SVID from the SPIFFE Workload API" {
			if l.SPIFFEID != spireProxyID.String() {
				t.Fatalf("the proxy got an SVID for %s", l.SPIFFEID)
			}
			return l.NotAfter
		}
	}
	t.Fatalf("the proxy logged no SVID:\n%s", proc.Tail(logFile, 30))
	return time.Time{}
}

// federation starts a second trust domain, other.example (B), whose server trusts
// example.org (A) through A's SPIFFE bundle endpoint (https_spiffe profile, on
// loopback). B is bootstrapped with A's bundle as it was at start; A then prepares a new
// X.509 authority, which only A's endpoint can tell B about. Workload C, registered in B
// and federated with A, must see A's current bundle in its Workload API, verify the
// issuer's serving SVID with it, and be refused by the issuer, which trusts no bundle of
// other.example, with untrusted_issuer.
func (s *spire) federation(t *testing.T) {
	if _, err := s.a.run("localauthority", "x509", "prepare"); err != nil {
		t.Fatal(err)
	}
	out, err := s.a.run("bundle", "show", "-format", "pem")
	if err != nil {
		t.Fatal(err)
	}
	current := pemCerts(out)
	if len(current) <= len(s.bundle) {
		t.Fatalf("domain A's bundle has %d authorities after prepare, %d before", len(current), len(s.bundle))
	}

	b := s.startServer(t, "b", "other.example", "")
	if _, err := b.run("federation", "create", "-trustDomain", spireTD,
		"-bundleEndpointURL", fmt.Sprintf("https://127.0.0.1:%d", s.fedPort),
		"-bundleEndpointProfile", "https_spiffe", "-endpointSpiffeID", "spiffe://"+spireTD+"/spire/server",
		"-trustDomainBundlePath", s.bundleFile, "-trustDomainBundleFormat", "pem"); err != nil {
		t.Fatal(err)
	}
	proc.WaitFor(t, 30*time.Second, "domain B to fetch A's bundle from its endpoint", func() error {
		if _, err := b.run("federation", "refresh", "-id", spireTD); err != nil {
			return err
		}
		out, err := b.run("bundle", "list", "-id", "spiffe://"+spireTD, "-format", "pem")
		if err != nil {
			return err
		}
		if n := len(pemCerts(out)); n != len(current) {
			return fmt.Errorf("B holds %d of A's authorities, A has %d", n, len(current))
		}
		return nil
	}, b.server, s.a.server)

	workloadC := spiffeid.RequireFromString("spiffe://other.example/workload-c")
	b.register(t, workloadC, filepath.Join(s.dir, "bin", "workload-c"), time.Hour, "-federatesWith", "spiffe://"+spireTD)
	sock := b.startAgent(t)
	res := s.runHelper(t, "workload-c", sock, "")
	if res.SVID != workloadC.String() {
		t.Fatalf("workload C got %s", res.SVID)
	}
	if !sameCerts(res.IssuerBundle, current) {
		t.Fatalf("workload C's bundle of %s has %d authorities, not A's current %d", spireTD, len(res.IssuerBundle), len(current))
	}
	if len(res.Answers) != 1 || res.Answers[0].Code != string(errcode.UntrustedIssuer) {
		t.Fatalf("workload C of other.example: %+v, want %s", res.Answers, errcode.UntrustedIssuer)
	}
}

// runHelper runs the copy of this test binary named name as a workload of the agent at
// sock, asking the issuer for subs (comma-separated), and returns what it reports.
func (s *spire) runHelper(t *testing.T, name, sock, subs string) helperResult {
	t.Helper()
	out := filepath.Join(s.dir, name+".json")
	cmd := exec.Command(filepath.Join(s.dir, "bin", name), "-test.run=^TestSpireWorkloadHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		"DIALOGTRUST_SPIRE_HELPER_OUT="+out,
		"DIALOGTRUST_SPIRE_HELPER_SOCKET=unix://"+sock,
		"DIALOGTRUST_SPIRE_HELPER_ISSUER="+s.issuerURL,
		"DIALOGTRUST_SPIRE_HELPER_SUBS="+subs)
	p := proc.Start(t, name, filepath.Join(s.dir, name+".log"), cmd)
	select {
	case <-p.Exited():
	case <-time.After(time.Minute):
		t.Fatalf("%s did not finish within a minute", name)
	}
	if err := p.Err(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, proc.Tail(p.Log, 40))
	}
	var res helperResult
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("%s's result: %v %s", name, err, b)
	}
	return res
}

// pemCerts returns the DER of each certificate in a PEM text.
func pemCerts(s string) [][]byte {
	var out [][]byte
	rest := []byte(s)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return out
		}
		if b.Type == "CERTIFICATE" {
			out = append(out, b.Bytes)
		}
	}
}

func sameCerts(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y []byte) bool { return bytes.Equal(x, y) }) {
			return false
		}
	}
	return true
}

// rotationUnderLoad keeps four workers requesting WITs, each over a new TLS connection
// that verifies the issuer's certificate against SPIRE's bundle and ID, until the
// serving certificate has changed (SPIRE rotated the issuer's SVID) and a few more
// requests went through on the new one. No request may fail.
func (s *spire) rotationUnderLoad(t *testing.T, ctx context.Context, src *workloadapi.X509Source) {
	var (
		mu       sync.Mutex
		serials  []string // distinct serving certificates, in order of appearance
		afterNew int      // requests served with a certificate other than the first
		ok       atomic.Int64
		failures []error
	)
	hc := s.httpClient(src.GetX509SVID)
	hc.Transport.(*http.Transport).DisableKeepAlives = true
	tr := hc.Transport.(*http.Transport)
	tr.TLSClientConfig.ClientSessionCache = nil // every request a full handshake
	c := &witissuer.Client{Endpoint: s.issuerURL + witissuer.PathWIT, Audience: s.issuerURL, HTTPClient: hc}
	seen := func(serial string) {
		mu.Lock()
		defer mu.Unlock()
		if len(serials) == 0 || !strings.Contains(strings.Join(serials, ","), serial) {
			serials = append(serials, serial)
		}
		if serial != serials[0] {
			afterNew++
		}
	}
	prev := tr.TLSClientConfig.VerifyConnection
	tr.TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		if err := prev(cs); err != nil {
			return err
		}
		seen(cs.PeerCertificates[0].SerialNumber.String())
		return nil
	}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return afterNew >= 20 || len(failures) > 0
	}
	lctx, cancel := context.WithTimeout(ctx, spireRotationWait)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lctx.Err() == nil && !done() {
				key, err := keys.Generate(keys.ES256)
				if err != nil {
					panic(err)
				}
				r, err := c.Request(lctx, key)
				if err != nil && lctx.Err() == nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
					continue
				}
				if err == nil && r.Sub == spireWorkloadA.String() {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d WITs issued; serving certificates seen: %v", ok.Load(), serials)
	if len(failures) > 0 {
		t.Fatalf("%d failed requests during rotation; first: %v", len(failures), failures[0])
	}
	if len(serials) < 2 || afterNew < 20 {
		t.Fatalf("the serving SVID did not rotate within %s (certificates %v, %d requests after)", spireRotationWait, serials, afterNew)
	}
}

// helperResult is what workload B reports.
type helperResult struct {
	SVID string `json:"svid"`
	// IssuerBundle is the bundle of the issuer's trust domain the Workload API gave
	// (DER of each authority): for a federated workload, the one SPIRE fetched.
	IssuerBundle [][]byte       `json:"issuer_bundle"`
	Answers      []helperAnswer `json:"answers"`
}

type helperAnswer struct {
	Sub  string `json:"sub"`
	WIT  string `json:"wit,omitempty"`
	Code string `json:"code,omitempty"`
}

// TestSpireWorkloadHelper is workload B when TestSpire runs a copy of this test binary
// with DIALOGTRUST_SPIRE_HELPER_OUT set; otherwise it does nothing. It fetches its
// X.509-SVID from the Workload API, asks the issuer for a WIT per subject in
// DIALOGTRUST_SPIRE_HELPER_SUBS (comma-separated; empty: its own identity) and writes
// the answers as JSON.
func TestSpireWorkloadHelper(t *testing.T) {
	out := os.Getenv("DIALOGTRUST_SPIRE_HELPER_OUT")
	if out == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	// An X509Source waits (retrying) until the agent has this workload's SVID: a fresh
	// agent answers "no identity issued" until its first sync.
	x, err := workloadapi.NewX509Source(ctx, workloadapi.WithClientOptions(workloadapi.WithAddr(os.Getenv("DIALOGTRUST_SPIRE_HELPER_SOCKET"))))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	svid, err := x.GetX509SVID()
	if err != nil {
		t.Fatal(err)
	}
	b, err := x.GetX509BundleForTrustDomain(spireIssuerID.TrustDomain())
	if err != nil {
		t.Fatal(err)
	}
	cert := &tls.Certificate{PrivateKey: svid.PrivateKey, Leaf: svid.Certificates[0]}
	for _, c := range svid.Certificates {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	issuer := os.Getenv("DIALOGTRUST_SPIRE_HELPER_ISSUER")
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: witissuer.ClientTLSConfig(cert, b.X509Authorities(), identifier.MustParse(spireIssuerID.String()))}}
	res := helperResult{SVID: svid.ID.String()}
	for _, c := range b.X509Authorities() {
		res.IssuerBundle = append(res.IssuerBundle, c.Raw)
	}
	for _, sub := range strings.Split(os.Getenv("DIALOGTRUST_SPIRE_HELPER_SUBS"), ",") {
		c := &witissuer.Client{Endpoint: issuer + witissuer.PathWIT, Audience: issuer, HTTPClient: hc, Subject: sub}
		a := helperAnswer{Sub: sub}
		r, err := c.Request(ctx, mustKey(t))
		switch {
		case err == nil:
			a.WIT = r.WIT
		case errcode.CodeOf(err) != "":
			a.Code = string(errcode.CodeOf(err))
		default:
			t.Fatalf("sub %q: %v", sub, err)
		}
		res.Answers = append(res.Answers, a)
	}
	j, _ := json.Marshal(res)
	if err := os.WriteFile(out, j, 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustKey(t testing.TB) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// httpClient returns a client that presents the SVID svid returns (nil: no client
// certificate) and accepts only the issuer's SVID, verified against SPIRE's bundle.
func (s *spire) httpClient(svid func() (*x509svid.SVID, error)) *http.Client {
	cfg := witissuer.ClientTLSConfig(nil, s.bundle, identifier.MustParse(spireIssuerID.String()))
	if svid != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			v, err := svid()
			if err != nil {
				return nil, err
			}
			c := &tls.Certificate{PrivateKey: v.PrivateKey, Leaf: v.Certificates[0]}
			for _, x := range v.Certificates {
				c.Certificate = append(c.Certificate, x.Raw)
			}
			return c, nil
		}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// witBundle fetches the issuer's JWKS over hc as go-spiffe's WIT bundle.
func (s *spire) witBundle(t *testing.T, hc *http.Client) *witbundle.Bundle {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.issuerURL+witissuer.PathJWKS, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, b := testkit.Do(t, hc, req)
	wb, err := spiffeadapter.BundleFromJWKS(spiffeid.RequireTrustDomainFromString(spireTD), b)
	if err != nil {
		t.Fatal(err)
	}
	return wb
}

// startSpire builds the wit-issuer, starts spire-server, registers the issuer and the
// two workloads, starts spire-agent with a join token, then the issuer, and waits
// until each is ready.
func startSpire(t *testing.T, serverBin, agentBin string) *spire {
	dir, err := os.MkdirTemp("", "spire")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // after the processes' stops (cleanups run last first)
	s := &spire{dir: dir, serverBin: serverBin, agentBin: agentBin}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	issuerBin := filepath.Join(dir, "bin", "wit-issuer")
	// Built in the core module (the parent directory), with its own go.mod and go.sum.
	if _, err := proc.Run("go", "build", "-C", "..", "-o", issuerBin, "./cmd/wit-issuer"); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"workload-b", "workload-c"} {
		if err := copyFile(self, filepath.Join(dir, "bin", name)); err != nil {
			t.Fatal(err)
		}
	}

	s.fedPort = testkit.FreePort(t)
	a := s.startServer(t, "a", spireTD, fmt.Sprintf(`
  federation {
    bundle_endpoint {
      address = "127.0.0.1"
      port = %d
    }
  }`, s.fedPort))
	s.a = a
	s.bundleFile = filepath.Join(dir, "bundle-a.pem")
	if s.bundle, err = witissuer.LoadPEMCertificates(s.bundleFile); err != nil {
		t.Fatal(err)
	}
	a.register(t, spireIssuerID, issuerBin, spireIssuerSVIDTTL)
	a.register(t, spireWorkloadA, self, time.Hour)
	a.register(t, spireWorkloadB, filepath.Join(dir, "bin", "workload-b"), time.Hour)
	s.agentSock = a.startAgent(t)

	port := testkit.FreePort(t)
	s.issuerURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	issuerConf := filepath.Join(dir, "wit-issuer.yaml")
	writeFile(t, issuerConf, fmt.Sprintf(`listen: 127.0.0.1:%d
issuer: %s
trust_domains: [%s]
tls: {workload_api_socket: "unix://%s"}
keys: {alg: ES256}
policy: {allowed_algs: [ES256], max_lifetime: 10m, default_lifetime: %s}
auth:
  x509svid:
    bundles:
      - {trust_domain: %s, file: %q}
routes:
  - {path: /v1/wit, methods: [x509svid]}
log: {level: debug}
`, port, s.issuerURL, spireTD, s.agentSock, spireWITLifetime, spireTD, s.bundleFile))
	issuer := proc.Start(t, "wit-issuer", filepath.Join(dir, "wit-issuer.log"),
		exec.Command(issuerBin, "--config", issuerConf))
	hc := s.httpClient(nil)
	proc.WaitFor(t, 60*time.Second, "wit-issuer", func() error {
		res, err := hc.Get(s.issuerURL + witissuer.PathReadyz)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return errors.New(res.Status)
		}
		return nil
	}, issuer, a.agent, a.server)
	return s
}

// spireDomain is one trust domain's spire-server (and, once started, its agent) under
// dir/<name>.
type spireDomain struct {
	s                   *spire
	name, td, dir, sock string
	port                int
	bundleFile, token   string
	server, agent       *proc.Process
}

const spireAgentID = "/agent"

// startServer starts the spire-server of trust domain td, with extra lines in its
// server block, waits until it is healthy, writes its bundle to dir/bundle-<name>.pem
// and makes a join token for its agent.
func (s *spire) startServer(t *testing.T, name, td, extra string) *spireDomain {
	t.Helper()
	d := &spireDomain{s: s, name: name, td: td, dir: filepath.Join(s.dir, name), port: testkit.FreePort(t)}
	d.sock = filepath.Join(d.dir, "server.sock")
	if err := os.MkdirAll(d.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(d.dir, "server.conf")
	writeFile(t, conf, fmt.Sprintf(`server {
  bind_address = "127.0.0.1"
  bind_port = "%d"
  socket_path = %q
  trust_domain = %q
  data_dir = %q
  log_level = "DEBUG"
  ca_key_type = "ec-p256"
  ca_ttl = "24h"
  default_x509_svid_ttl = "1h"%s
}
plugins {
  DataStore "sql" {
    plugin_data {
      database_type = "sqlite3"
      connection_string = %q
    }
  }
  NodeAttestor "join_token" {
    plugin_data {}
  }
  KeyManager "memory" {
    plugin_data {}
  }
}
`, d.port, d.sock, td, filepath.Join(d.dir, "server-data"), extra, filepath.Join(d.dir, "datastore.sqlite3")))
	d.server = proc.Start(t, "spire-server-"+name, filepath.Join(d.dir, "server.log"),
		exec.Command(s.serverBin, "run", "-config", conf))
	proc.WaitFor(t, 60*time.Second, "spire-server "+name, func() error {
		_, err := proc.Run(s.serverBin, "healthcheck", "-socketPath", d.sock)
		return err
	}, d.server)
	pem, err := d.run("bundle", "show", "-format", "pem")
	if err != nil {
		t.Fatal(err)
	}
	d.bundleFile = filepath.Join(s.dir, "bundle-"+name+".pem")
	writeFile(t, d.bundleFile, pem)
	out, err := d.run("token", "generate", "-spiffeID", "spiffe://"+td+spireAgentID, "-ttl", "600")
	if err != nil {
		t.Fatal(err)
	}
	d.token = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "Token:"))
	return d
}

// run runs a spire-server command against this domain's server.
func (d *spireDomain) run(args ...string) (string, error) {
	return proc.Run(d.s.serverBin, append(args[:len(args):len(args)], "-socketPath", d.sock)...)
}

// register creates the entry of id for the binary at path, under the agent's alias ID.
// The token's alias entry lets entries name the stable spiffe://<td>/agent as parent.
func (d *spireDomain) register(t *testing.T, id spiffeid.ID, path string, ttl time.Duration, extra ...string) {
	t.Helper()
	args := append([]string{"entry", "create", "-parentID", "spiffe://" + d.td + spireAgentID, "-spiffeID", id.String(),
		"-selector", "unix:path:" + path, "-x509SVIDTTL", strconv.Itoa(int(ttl.Seconds()))}, extra...)
	if _, err := d.run(args...); err != nil {
		t.Fatal(err)
	}
}

// startAgent starts the domain's spire-agent (bootstrapped from the server's bundle,
// not insecurely) and returns its Workload API socket once it is healthy.
func (d *spireDomain) startAgent(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(d.dir, "agent.sock")
	conf := filepath.Join(d.dir, "agent.conf")
	writeFile(t, conf, fmt.Sprintf(`agent {
  data_dir = %q
  log_level = "DEBUG"
  server_address = "127.0.0.1"
  server_port = "%d"
  socket_path = %q
  trust_bundle_path = %q
  trust_domain = %q
  join_token = %q
  experimental {
    sync_interval = "1s"
  }
}
plugins {
  NodeAttestor "join_token" {
    plugin_data {}
  }
  KeyManager "memory" {
    plugin_data {}
  }
  WorkloadAttestor "unix" {
    plugin_data {
      discover_workload_path = true
    }
  }
}
`, filepath.Join(d.dir, "agent-data"), d.port, sock, d.bundleFile, d.td, d.token))
	d.agent = proc.Start(t, "spire-agent-"+d.name, filepath.Join(d.dir, "agent.log"),
		exec.Command(d.s.agentBin, "run", "-config", conf))
	proc.WaitFor(t, 60*time.Second, "spire-agent "+d.name, func() error {
		_, err := proc.Run(d.s.agentBin, "healthcheck", "-socketPath", sock)
		return err
	}, d.agent, d.server)
	return sock
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o700)
}
