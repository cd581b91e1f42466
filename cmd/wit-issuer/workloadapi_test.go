package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	workload "github.com/spiffe/go-spiffe/v2/proto/spiffe/workload"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/wic"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// fakeWorkloadAPI is a SPIFFE Workload API server on a unix socket, as a SPIRE agent
// serves it: it streams X509SVIDResponses, a new one whenever push is called.
type fakeWorkloadAPI struct {
	workload.UnimplementedSpiffeWorkloadAPIServer
	mu      sync.Mutex
	current *workload.X509SVIDResponse
	changed chan struct{}
}

func (f *fakeWorkloadAPI) push(r *workload.X509SVIDResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current = r
	if f.changed != nil {
		close(f.changed)
	}
	f.changed = make(chan struct{})
}

func (f *fakeWorkloadAPI) FetchX509SVID(_ *workload.X509SVIDRequest, stream grpc.ServerStreamingServer[workload.X509SVIDResponse]) error {
	// A real agent refuses callers without the security header.
	md, _ := metadata.FromIncomingContext(stream.Context())
	if v := md.Get("workload.spiffe.io"); len(v) != 1 || v[0] != "true" {
		return status.Error(codes.InvalidArgument, "security header missing")
	}
	for {
		f.mu.Lock()
		cur, changed := f.current, f.changed
		f.mu.Unlock()
		if err := stream.Send(cur); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		}
	}
}

// The issuer serves TLS with the X.509-SVID the Workload API hands it, and follows a
// rotation: new connections get the new SVID without a restart.
func TestWorkloadAPIServingSVID(t *testing.T) {
	dir, err := os.MkdirTemp("", "wapi") // short: a unix socket path is limited to ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caDER, err := wic.NewCA(caKey, now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	const issuerID = "spiffe://example.org/wit-issuer"
	var serial int64 = 100
	svid := func(notAfter time.Time) (*workload.X509SVIDResponse, *x509.Certificate) {
		// As SPIRE issues it: x509svid.Parse (go-spiffe) wants digitalSignature, which
		// the conformance layout of wic.IssueWIC does not set.
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		serial++
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), URIs: []*url.URL{{Scheme: "spiffe", Host: "example.org", Path: "/wit-issuer"}},
			NotBefore: now.Add(-time.Minute), NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, k.Public(), caKey)
		if err != nil {
			t.Fatal(err)
		}
		p8, _ := x509.MarshalPKCS8PrivateKey(k)
		leaf, _ := x509.ParseCertificate(der)
		return &workload.X509SVIDResponse{Svids: []*workload.X509SVID{{SpiffeId: issuerID, X509Svid: der, X509SvidKey: p8, Bundle: caDER}}}, leaf
	}

	api := &fakeWorkloadAPI{}
	first, firstLeaf := svid(now.Add(time.Hour))
	api.push(first)
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	workload.RegisterSpiffeWorkloadAPIServer(gs, api)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)

	conf := `
listen: 127.0.0.1:0
issuer: https://wit-issuer.example.org
trust_domains: [example.org]
tls: {workload_api_socket: "unix://` + sock + `"}
keys: {data_dir: ` + filepath.Join(dir, "data") + `}
policy:
  rules: [{from_prefix: "spiffe://example.org/", to_prefix: "wimse://example.org/"}]
auth:
  x509svid:
    bundles: [{trust_domain: example.org, file: ` + pemFile(t, dir, "bundle.pem", "CERTIFICATE", caDER) + `}]
routes: [{path: /v1/wit, methods: [x509svid]}]
`
	cfgFile := filepath.Join(dir, "wit-issuer.yaml")
	if err := os.WriteFile(cfgFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, []string{"--config", cfgFile}, nil)
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("url %s", s.URL)
	}
	// The served certificate, on a new connection each time, verified as a workload
	// verifies the issuer: the bundle and the issuer's SPIFFE ID.
	served := func() *x509.Certificate {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: witissuer.ClientTLSConfig(nil, []*x509.Certificate{caCert}, identifier.MustParse(issuerID))}
		defer tr.CloseIdleConnections()
		res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(s.URL + witissuer.PathJWKS)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("JWKS over the Workload API's TLS: %d", res.StatusCode)
		}
		return res.TLS.PeerCertificates[0]
	}
	if got := served(); !got.Equal(firstLeaf) {
		t.Fatalf("served %v, want the Workload API's SVID", got.SerialNumber)
	}
	second, secondLeaf := svid(now.Add(2 * time.Hour))
	api.push(second)
	deadline := time.Now().Add(10 * time.Second)
	for !served().Equal(secondLeaf) {
		if time.Now().After(deadline) {
			t.Fatal("the rotated SVID is not served")
		}
		time.Sleep(20 * time.Millisecond) // waiting for the stream's update to arrive, not for expiry
	}
	if !strings.Contains(s.Stderr.String(), "serving SVID updated") {
		t.Error("the rotation is not logged")
	}
}

func TestWorkloadAPIConfigRefused(t *testing.T) {
	for _, tc := range []struct{ tls, want string }{
		{`{workload_api_socket: "unix:///run/agent.sock", cert_file: a.pem, key_file: a.key}`, "excludes"},
		{`{workload_api_socket: "/run/agent.sock"}`, "workload_api_socket"},
	} {
		dir := t.TempDir()
		cfgFile := filepath.Join(dir, "c.yaml")
		conf := "trust_domains: [example.org]\nkeys: {data_dir: " + dir + "}\ntls: " + tc.tls + "\nauth: {dev: {prefixes: [\"wimse://example.org/\"]}}\nroutes: [{path: /v1/wit, methods: [dev]}]\n"
		if err := os.WriteFile(cfgFile, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := configSpec.Load([]string{"--config", cfgFile}, nil, discard{})
		if err == nil {
			_, err = validate(cfg)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.tls, err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
