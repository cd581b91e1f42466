package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wic"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// issuerFor builds a witissuer server named issuerURL with the given methods.
func issuerFor(t *testing.T, issuerURL string, methods func(replay store.Replay) []witissuer.Authenticator) http.Handler {
	t.Helper()
	k, _ := keys.Generate(keys.ES256)
	rot, err := keys.NewStaticRotator(k, keys.RotationConfig{Retain: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	replay := store.NewMemory()
	s, err := witissuer.New(witissuer.Config{Issuer: issuerURL, Keys: rot, Replay: replay,
		Policy: witissuer.Policy{TrustDomains: []string{"dev.local", "example.org"}},
		Routes: []witissuer.Route{{Path: witissuer.PathWIT, Methods: methods(replay)}}})
	if err != nil {
		t.Fatal(err)
	}
	return s.Handler()
}

// checkIssued verifies the printed WIT against the issuer's JWKS URL with `wit verify`
// and checks that the key file holds the key the WIT certifies, with mode 0600.
func checkIssued(t *testing.T, out, jwksURL, keyFile, wantSub string) {
	t.Helper()
	tok := strings.TrimSpace(out)
	claimsJSON := mustRun(t, "", "wit verify", "--trust", jwksURL, tok)
	var c wit.Claims
	if err := json.Unmarshal(verifiedClaims(t, claimsJSON), &c); err != nil || c.Sub != wantSub {
		t.Fatalf("verified claims %s: %v", claimsJSON, err)
	}
	st, err := os.Stat(keyFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	b, _ := os.ReadFile(keyFile)
	k, err := keys.ParsePrivateJWK(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wit.ConfirmationKey(c.Cnf, nil)
	if err != nil || got.Thumbprint() != k.Public().Thumbprint() {
		t.Fatalf("the key file does not hold the certified key: %v", err)
	}
}

// devIssuer starts a WIT issuer in development mode for wimse://dev.local/ on a
// loopback HTTP server, closed at the end of the test, and returns its URL.
func devIssuer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = issuerFor(t, url, func(store.Replay) []witissuer.Authenticator {
		d, _ := witissuer.NewDev(nil, []string{"wimse://dev.local/"}, witissuer.DevOptions{})
		return []witissuer.Authenticator{d}
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return url
}

// Development mode over plain HTTP, and `wit verify --trust URL` against the served JWKS.
func TestWITRequestDevModeAndVerifyByURL(t *testing.T) {
	url := devIssuer(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "wit.key.jwk")
	// An existing, wider file must end up 0600.
	if err := os.WriteFile(keyFile, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "", "wit request", "--issuer", url, "--workload", "wimse://dev.local/agent/a1", "--alg", "EdDSA", "--ttl", "10m", "--key-out", keyFile)
	checkIssued(t, out, url+witissuer.PathJWKS, keyFile, "wimse://dev.local/agent/a1")
	p, _ := jose.Parse(strings.TrimSpace(out), 0)
	var c wit.Claims
	_ = json.Unmarshal(p.Payload, &c)
	if int64(*c.Exp)-int64(*c.Iat) != 600 {
		t.Fatalf("lifetime %d, asked for 600s", int64(*c.Exp)-int64(*c.Iat))
	}

	// A refusal is "error: <code>" and exit status 1.
	_, errOut, code := dt(t, "", "wit request", "--issuer", url, "--workload", "wimse://prod.example/agent", "--key-out", keyFile)
	if code != 1 || !strings.HasPrefix(errOut, "error: unauthenticated\n") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	// Usage errors are status 2.
	for _, args := range [][]string{
		{"wit request"},
		{"wit request", "--issuer", url},
		{"wit request", "--issuer", url, "--svid", "a", "--svid-key", "b", "--bundle", "c", "--assertion-key", "d", "--workload", "x"},
		{"wit request", "--issuer", url, "--svid", "a"},
		{"wit request", "--issuer", url, "--assertion-key", "d"},
	} {
		if _, _, code := dt(t, "", args...); code != 2 {
			t.Fatalf("%v: exit %d", args, code)
		}
	}
	// A JWKS URL that does not answer is keys_unavailable.
	_, errOut, code = dt(t, "", "wit verify", "--trust", "http://127.0.0.1:1/jwks.json", strings.TrimSpace(out))
	if code != 1 || !strings.HasPrefix(errOut, "error: keys_unavailable\n") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
}

// Without --key-out the key goes into the per-user state directory (created 0700), not
// the working directory, and stderr says where.
func TestWITRequestDefaultKeyFile(t *testing.T) {
	url := devIssuer(t)
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("XDG_STATE_HOME", state)
	work := t.TempDir()
	t.Chdir(work)
	out, errOut, code := dt(t, "", "wit request", "--issuer", url, "--workload", "wimse://dev.local/agent/a1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	keyFile := filepath.Join(state, "dialogtrust", "wit.key.jwk")
	if errOut != "dialogtrust: wrote the private key to "+keyFile+"\n" {
		t.Fatalf("stderr %q", errOut)
	}
	checkIssued(t, out, url+witissuer.PathJWKS, keyFile, "wimse://dev.local/agent/a1")
	if st, err := os.Stat(filepath.Dir(keyFile)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("key directory: %v %v", st, err)
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Fatalf("the working directory holds %v", left)
	}
	// A --key-out in a directory that does not exist is a usage error, found before the
	// issuer is asked.
	_, errOut, code = dt(t, "", "wit request", "--issuer", "http://127.0.0.1:1", "--workload", "wimse://dev.local/agent/a1",
		"--key-out", filepath.Join(work, "missing", "k.jwk"))
	if code != 2 || !strings.HasPrefix(errOut, "usage error: --key-out: ") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// mTLS with an X.509-SVID (the SPIRE path) and the assertion method, against an issuer on
// a real TLS listener whose own certificate is an SVID checked by --server-id.
func TestWITRequestSVIDAndAssertion(t *testing.T) {
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caDER, err := wic.NewCA(caKey, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(id string) ([]byte, *ecdsa.PrivateKey) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err := wic.IssueWIC(caKey, caDER, k.Public(), identifier.MustParse(id), now.Add(-time.Minute), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	srvDER, srvKey := issue("spiffe://example.org/wit-issuer")
	srvCert := tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", witissuer.ServerTLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &srvCert, nil }))
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + ln.Addr().String()
	dir := t.TempDir()
	bundleFile := filepath.Join(dir, "bundle.pem")
	writePEM(t, bundleFile, "CERTIFICATE", caDER)
	bundles, err := witissuer.LoadFileBundles([]witissuer.BundleFile{{TrustDomain: "example.org", Path: bundleFile}})
	if err != nil {
		t.Fatal(err)
	}
	assertKey, _ := keys.Generate(keys.ES256)
	assertID := identifier.MustParse("wimse://example.org/batch/job")
	h := issuerFor(t, url, func(replay store.Replay) []witissuer.Authenticator {
		a, err := witissuer.NewAssertion(url, []witissuer.RegisteredWorkload{{ID: assertID, Keys: []*keys.PublicKey{assertKey.Public()}}}, replay, witissuer.AssertionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return []witissuer.Authenticator{witissuer.NewX509SVID(bundles, nil), a}
	})
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	cliDER, cliKey := issue("spiffe://example.org/ns/prod/sa/orders")
	svidFile, svidKeyFile := filepath.Join(dir, "svid.pem"), filepath.Join(dir, "svid_key.pem")
	writePEM(t, svidFile, "CERTIFICATE", cliDER)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(cliKey)
	writePEM(t, svidKeyFile, "PRIVATE KEY", pkcs8)
	keyFile := filepath.Join(dir, "k.jwk")
	out := mustRun(t, "", "wit request", "--issuer", url, "--svid", svidFile, "--svid-key", svidKeyFile, "--bundle", bundleFile,
		"--server-id", "spiffe://example.org/wit-issuer", "--key-out", keyFile)

	// wit verify fetches the JWKS over TLS; the test CA is not a system root, so it is
	// fetched here through a verified client and checked from a file.
	jwks := fetchJWKS(t, url, caCert)
	checkIssued(t, out, jwks, keyFile, "spiffe://example.org/ns/prod/sa/orders")

	// The wrong expected server identity is refused before anything is sent.
	_, errOut, code := dt(t, "", "wit request", "--issuer", url, "--svid", svidFile, "--svid-key", svidKeyFile, "--bundle", bundleFile,
		"--server-id", "spiffe://example.org/other", "--key-out", keyFile)
	if code != 1 || !strings.HasPrefix(errOut, "error: issuer_mismatch\n") {
		t.Fatalf("wrong server id: exit %d, %q", code, errOut)
	}

	// The assertion method.
	akFile := filepath.Join(dir, "assert.jwk")
	b, _ := json.Marshal(assertKey)
	if err := os.WriteFile(akFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, "", "wit request", "--issuer", url, "--bundle", bundleFile, "--server-id", "spiffe://example.org/wit-issuer",
		"--assertion-key", akFile, "--workload", assertID.String(), "--key-out", keyFile)
	checkIssued(t, out, jwks, keyFile, assertID.String())
}

// fetchJWKS saves the issuer's JWKS to a file, fetched with the test CA as the only root.
func fetchJWKS(t *testing.T, url string, ca *x509.Certificate) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: witissuer.ClientTLSConfig(nil, []*x509.Certificate{ca}, identifier.MustParse("spiffe://example.org/wit-issuer")),
		DialContext:     (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	res, err := c.Get(url + witissuer.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	p := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
