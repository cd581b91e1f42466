package witissuerservice

import (
	"crypto/x509"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit/fakeworkloadapi"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// The issuer serves TLS with the X.509-SVID the Workload API hands it, and follows a
// rotation: new connections get the new SVID without a restart.
func TestWorkloadAPIServingSVID(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca := fakeworkloadapi.NewCA(t, now)
	caDER, caCert := ca.Cert.Raw, ca.Cert
	const issuerID = "spiffe://example.org/wit-issuer"
	svid := func(notAfter time.Time) fakeworkloadapi.SVID {
		return ca.Issue(t, issuerID, now.Add(-time.Minute), notAfter)
	}

	api := fakeworkloadapi.Start(t)
	first := svid(now.Add(time.Hour))
	api.Push(first, caDER)

	conf := `
listen: 127.0.0.1:0
issuer: https://wit-issuer.example.org
trust_domains: [example.org]
tls: {workload_api_socket: "` + api.Addr + `"}
keys: {data_dir: ` + filepath.Join(dir, "data") + `}
policy:
  rules: [{from_prefix: "spiffe://example.org/", to_prefix: "wimse://example.org/"}]
auth:
  x509svid:
    bundles: [{trust_domain: example.org, file: ` + pemFile(t, dir, "bundle.pem", "CERTIFICATE", caDER) + `}]
routes: [{path: /v1/wit, methods: [x509svid]}]
`
	cfgFile := testkit.WriteTemp(t, "wit-issuer.yaml", conf)
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
	if got := served(); !got.Equal(first.Leaf) {
		t.Fatalf("served %v, want the Workload API's SVID", got.SerialNumber)
	}
	second := svid(now.Add(2 * time.Hour))
	api.Push(second, caDER)
	deadline := time.Now().Add(10 * time.Second)
	for !served().Equal(second.Leaf) {
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
		conf := "trust_domains: [example.org]\nkeys: {data_dir: " + dir + "}\ntls: " + tc.tls + "\nauth: {dev: {prefixes: [\"wimse://example.org/\"]}}\nroutes: [{path: /v1/wit, methods: [dev]}]\n"
		cfgFile := testkit.WriteTemp(t, "c.yaml", conf)
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
