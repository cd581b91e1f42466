package interop_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
)

var (
	spireIssuerID  = spiffeid.RequireFromString("spiffe://example.org/wit-issuer")
	spireWorkloadA = spiffeid.RequireFromString("spiffe://example.org/workload-a")
	spireWorkloadB = spiffeid.RequireFromString("spiffe://example.org/workload-b")
)

// spire is one trust domain's SPIRE (a server and one agent) and the WIT issuer that
// takes its serving SVID from that agent, all in one temporary directory.
type spire struct {
	dir, agentSock, issuerURL string
	bundle                    []*x509.Certificate
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
		out := filepath.Join(s.dir, "workload-b.json")
		cmd := exec.Command(filepath.Join(s.dir, "bin", "workload-b"), "-test.run=^TestSpireWorkloadHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			"DIALOGTRUST_SPIRE_HELPER_OUT="+out,
			"DIALOGTRUST_SPIRE_HELPER_SOCKET=unix://"+s.agentSock,
			"DIALOGTRUST_SPIRE_HELPER_ISSUER="+s.issuerURL,
			"DIALOGTRUST_SPIRE_HELPER_SUBS=,"+spireWorkloadB.String()+","+spireWorkloadA.String())
		p := proc.Start(t, "workload-b", filepath.Join(s.dir, "workload-b.log"), cmd)
		select {
		case <-p.Exited():
		case <-time.After(time.Minute):
			t.Fatal("workload B did not finish within a minute")
		}
		if err := p.Err(); err != nil {
			t.Fatalf("workload B: %v\n%s", err, proc.Tail(p.Log, 40))
		}
		var res helperResult
		b, err := os.ReadFile(out)
		if err != nil || json.Unmarshal(b, &res) != nil {
			t.Fatalf("workload B's result: %v %s", err, b)
		}
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

	t.Run("RotationUnderLoad", func(t *testing.T) { s.rotationUnderLoad(t, ctx, src) })
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
	SVID    string         `json:"svid"`
	Answers []helperAnswer `json:"answers"`
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
	x, err := workloadapi.FetchX509Context(ctx, workloadapi.WithAddr(os.Getenv("DIALOGTRUST_SPIRE_HELPER_SOCKET")))
	if err != nil {
		t.Fatal(err)
	}
	svid := x.DefaultSVID()
	b, err := x.Bundles.GetX509BundleForTrustDomain(svid.ID.TrustDomain())
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
	res, err := hc.Get(s.issuerURL + witissuer.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
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
	s := &spire{dir: dir, agentSock: filepath.Join(dir, "agent", "api.sock")}
	for _, d := range []string{"bin", "server", "agent"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
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
	if err := copyFile(self, filepath.Join(dir, "bin", "workload-b")); err != nil {
		t.Fatal(err)
	}

	serverSock := filepath.Join(dir, "server", "api.sock")
	serverPort := proc.FreePort(t)
	serverConf := filepath.Join(dir, "server", "server.conf")
	writeFile(t, serverConf, fmt.Sprintf(`server {
  bind_address = "127.0.0.1"
  bind_port = "%d"
  socket_path = %q
  trust_domain = %q
  data_dir = %q
  log_level = "DEBUG"
  ca_key_type = "ec-p256"
  ca_ttl = "24h"
  default_x509_svid_ttl = "1h"
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
`, serverPort, serverSock, spireTD, filepath.Join(dir, "server", "data"), filepath.Join(dir, "server", "datastore.sqlite3")))
	server := proc.Start(t, "spire-server", filepath.Join(dir, "server", "server.log"),
		exec.Command(serverBin, "run", "-config", serverConf))
	proc.WaitFor(t, 60*time.Second, "spire-server", func() error {
		_, err := proc.Run(serverBin, "healthcheck", "-socketPath", serverSock)
		return err
	}, server)

	bundlePEM, err := proc.Run(serverBin, "bundle", "show", "-socketPath", serverSock, "-format", "pem")
	if err != nil {
		t.Fatal(err)
	}
	bundleFile := filepath.Join(dir, "bundle.pem")
	writeFile(t, bundleFile, bundlePEM)
	if s.bundle, err = witissuer.LoadPEMCertificates(bundleFile); err != nil {
		t.Fatal(err)
	}

	const agentID = "spiffe://example.org/agent"
	tokOut, err := proc.Run(serverBin, "token", "generate", "-socketPath", serverSock, "-spiffeID", agentID, "-ttl", "600")
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(tokOut), "Token:"))
	for _, e := range []struct {
		id   spiffeid.ID
		path string
		ttl  time.Duration
	}{
		{spireIssuerID, issuerBin, spireIssuerSVIDTTL},
		{spireWorkloadA, self, time.Hour},
		{spireWorkloadB, filepath.Join(dir, "bin", "workload-b"), time.Hour},
	} {
		if _, err := proc.Run(serverBin, "entry", "create", "-socketPath", serverSock, "-parentID", agentID,
			"-spiffeID", e.id.String(), "-selector", "unix:path:"+e.path, "-x509SVIDTTL", strconv.Itoa(int(e.ttl.Seconds()))); err != nil {
			t.Fatal(err)
		}
	}

	agentConf := filepath.Join(dir, "agent", "agent.conf")
	writeFile(t, agentConf, fmt.Sprintf(`agent {
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
`, filepath.Join(dir, "agent", "data"), serverPort, s.agentSock, bundleFile, spireTD, token))
	agent := proc.Start(t, "spire-agent", filepath.Join(dir, "agent", "agent.log"),
		exec.Command(agentBin, "run", "-config", agentConf))
	proc.WaitFor(t, 60*time.Second, "spire-agent", func() error {
		_, err := proc.Run(agentBin, "healthcheck", "-socketPath", s.agentSock)
		return err
	}, agent, server)

	port := proc.FreePort(t)
	s.issuerURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	issuerConf := filepath.Join(dir, "wit-issuer.yaml")
	writeFile(t, issuerConf, fmt.Sprintf(`listen: 127.0.0.1:%d
issuer: %s
trust_domains: [%s]
tls: {workload_api_socket: "unix://%s"}
keys: {alg: ES256}
policy: {allowed_algs: [ES256], max_lifetime: 10m}
auth:
  x509svid:
    bundles:
      - {trust_domain: %s, file: %q}
routes:
  - {path: /v1/wit, methods: [x509svid]}
log: {level: debug}
`, port, s.issuerURL, spireTD, s.agentSock, spireTD, bundleFile))
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
	}, issuer, agent, server)
	return s
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
