package witissuerservice

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit/kittest"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wic"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

func dialogtrust(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// start runs a wit-issuer in this process through Program.Run, as main runs it.
func start(t *testing.T, args []string, env []string) *kittest.Process {
	t.Helper()
	return kittest.Start(t, "wit-issuer", 30*time.Second, Program.Run, args, env)
}

// Acceptance: the embedded default (no configuration; here only the port is chosen so
// the test cannot collide with anything on 8080) serves on 127.0.0.1 in development
// mode; `dialogtrust wit request` gets a WIT from it, `dialogtrust wit verify` accepts
// it through the JWKS URL the issuer serves; the issuer shuts down gracefully.
func TestAcceptanceDefaultIssuerWithCLI(t *testing.T) {
	bin := kittest.Build(t, "github.com/dialogtrust/dialogtrust/cmd/dialogtrust")
	s := start(t, []string{"--listen", "127.0.0.1:0"}, nil)
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("url %s", s.URL)
	}
	keyFile := filepath.Join(t.TempDir(), "wit.key.jwk")
	out, errOut, code := dialogtrust(t, bin, "wit", "request", "--issuer", s.URL, "--workload", "wimse://dev.local/agent/a1", "--key-out", keyFile)
	if code != 0 {
		t.Fatalf("wit request: exit %d: %s", code, errOut)
	}
	tok := strings.TrimSpace(out)
	out, errOut, code = dialogtrust(t, bin, "wit", "verify", "--json", "--trust", s.URL+witissuer.PathJWKS, "--iss", s.URL, tok)
	if code != 0 {
		t.Fatalf("wit verify: exit %d: %s", code, errOut)
	}
	var verdict struct {
		Verified bool
		Claims   wit.Claims
	}
	if err := json.Unmarshal([]byte(out), &verdict); err != nil || !verdict.Verified {
		t.Fatalf("verdict %s: %v", out, err)
	}
	c := verdict.Claims
	if c.Sub != "wimse://dev.local/agent/a1" || c.Iss != s.URL {
		t.Fatalf("claims %s", out)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", st, err)
	}
	// Outside the development prefix: refused with its code.
	_, errOut, code = dialogtrust(t, bin, "wit", "request", "--issuer", s.URL, "--workload", "wimse://prod.example/agent", "--key-out", keyFile)
	if code != 1 || !strings.HasPrefix(errOut, "error: unauthenticated") {
		t.Fatalf("exit %d: %s", code, errOut)
	}

	if err := s.Stop(); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	logs := s.Stderr.String()
	for _, want := range []string{"DEVELOPMENT MODE", `"msg":"wit-issuer started"`, `"config":"embedded development default"`,
		tokenhash.Of(tok), `"msg":"stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q", want)
		}
	}
	if strings.Contains(logs, tok) || strings.Contains(logs, strings.Split(tok, ".")[2]) {
		t.Fatal("a WIT is in the log")
	}
	if !strings.Contains(s.Stdout.String(), "listening on "+s.URL) {
		t.Fatalf("stdout %q", s.Stdout.String())
	}
}

// Development mode never binds to a non-loopback address by accident.
func TestDevModeLoopbackOnly(t *testing.T) {
	err := Program.Run(context.Background(), []string{"--listen", "0.0.0.0:0"}, nil, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("got %v", err)
	}
	err = Program.Run(context.Background(), []string{"--listen", "127.0.0.1:0"}, []string{"DIALOGTRUST_WIT_ISSUER_STORE=disk"}, io.Discard, io.Discard, nil)
	if err == nil {
		t.Fatal("unknown store accepted")
	}
}

func pemFile(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The SPIRE set-up of docs/operator.md, end to end: the issuer serves TLS with an SVID from
// files, verifies client SVIDs against a bundle file, keeps its keys in a data
// directory, maps spiffe:// to wimse:// by a rule; a workload runs `dialogtrust wit
// request` with its SVID files.
func TestSPIRESetupEndToEnd(t *testing.T) {
	bin := kittest.Build(t, "github.com/dialogtrust/dialogtrust/cmd/dialogtrust")
	dir := t.TempDir()
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caDER, err := wic.NewCA(caKey, now.Add(-time.Hour), now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	svid := func(name, id string) (string, string) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err := wic.IssueWIC(caKey, caDER, k.Public(), identifier.MustParse(id), now.Add(-time.Minute), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		p8, _ := x509.MarshalPKCS8PrivateKey(k)
		return pemFile(t, dir, name+".pem", "CERTIFICATE", der), pemFile(t, dir, name+"_key.pem", "PRIVATE KEY", p8)
	}
	bundle := pemFile(t, dir, "bundle.pem", "CERTIFICATE", caDER)
	srvCert, srvKey := svid("issuer", "spiffe://example.org/wit-issuer")
	cliCert, cliKey := svid("client", "spiffe://example.org/ns/prod/sa/orders")
	conf := `
listen: 127.0.0.1:0
issuer: https://wit-issuer.example.org
trust_domains: [example.org]
tls: {cert_file: ` + srvCert + `, key_file: ` + srvKey + `}
keys: {data_dir: ` + filepath.Join(dir, "data") + `}
policy:
  max_lifetime: 30m
  rules: [{from_prefix: "spiffe://example.org/", to_prefix: "wimse://example.org/"}]
auth:
  x509svid:
    bundles: [{trust_domain: example.org, file: ` + bundle + `}]
routes: [{path: /v1/wit, methods: [x509svid]}]
`
	cfgFile := testkit.WriteTemp(t, "wit-issuer.yaml", conf)
	s := start(t, []string{"--config", cfgFile}, nil)
	if !strings.HasPrefix(s.URL, "https://127.0.0.1:") || strings.Contains(s.Stderr.String(), "DEVELOPMENT") {
		t.Fatalf("url %s, logs %s", s.URL, s.Stderr.String())
	}
	keyFile := filepath.Join(dir, "wit.key.jwk")
	out, errOut, code := dialogtrust(t, bin, "wit", "request", "--issuer", s.URL, "--svid", cliCert, "--svid-key", cliKey,
		"--bundle", bundle, "--server-id", "spiffe://example.org/wit-issuer", "--sub", "wimse://example.org/ns/prod/sa/orders",
		"--ttl", "15m", "--key-out", keyFile)
	if code != 0 {
		t.Fatalf("wit request: exit %d: %s\n%s", code, errOut, s.Stderr.String())
	}
	tok := strings.TrimSpace(out)

	// The workload's verifier has the issuer's JWKS, fetched over verified TLS.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: witissuer.ClientTLSConfig(nil, []*x509.Certificate{caCert}, identifier.MustParse("spiffe://example.org/wit-issuer")),
		DialContext:     (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	}}
	get := func(path string) (int, []byte) {
		res, err := hc.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	_, jwks := get(witissuer.PathJWKS)
	jwksFile := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = dialogtrust(t, bin, "wit", "verify", "--trust", jwksFile, "--iss", "https://wit-issuer.example.org", tok)
	if code != 0 || !strings.Contains(out, `"sub":"wimse://example.org/ns/prod/sa/orders"`) {
		t.Fatalf("wit verify: exit %d: %s %s", code, out, errOut)
	}
	// Asking for more than the policy allows is refused, not trimmed.
	_, errOut, code = dialogtrust(t, bin, "wit", "request", "--issuer", s.URL, "--svid", cliCert, "--svid-key", cliKey,
		"--bundle", bundle, "--server-id", "spiffe://example.org/wit-issuer", "--ttl", "31m", "--key-out", keyFile)
	if code != 1 || !strings.HasPrefix(errOut, "error: lifetime_too_long") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if st, _ := get(witissuer.PathReadyz); st != 200 {
		t.Fatalf("readyz %d", st)
	}
	if _, m := get(witissuer.PathMetrics); !strings.Contains(string(m), `dialogtrust_wit_issued_total{method="x509svid"} 1`) ||
		!strings.Contains(string(m), `dialogtrust_wit_refused_total{code="lifetime_too_long"} 1`) {
		t.Fatalf("metrics:\n%s", m)
	}
	if st, err := os.Stat(filepath.Join(dir, "data", KeyringFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("keyring %v %v", st, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}

// store.type redis: /readyz pings Redis, and says 503 when it does not answer. The Redis
// tests read DIALOGTRUST_TEST_REDIS and fail instead of skipping when CI=true.
func TestRedisStoreReadiness(t *testing.T) {
	addr := testkit.RedisAddr(t)
	prefix := "dialogtrust:test:wit-issuer:" + time.Now().Format(time.RFC3339Nano) + ":"
	readyz := func(env ...string) int {
		s := start(t, []string{"--listen", "127.0.0.1:0"}, append(env, "DIALOGTRUST_WIT_ISSUER_REDIS_PREFIX="+prefix))
		defer s.Stop()
		res, err := http.Get(s.URL + witissuer.PathReadyz)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if st := readyz("DIALOGTRUST_WIT_ISSUER_STORE=redis", "DIALOGTRUST_WIT_ISSUER_REDIS_ADDRS="+addr); st != 200 {
		t.Fatalf("readyz with Redis up: %d", st)
	}
	if st := readyz("DIALOGTRUST_WIT_ISSUER_STORE=redis", "DIALOGTRUST_WIT_ISSUER_REDIS_ADDRS=127.0.0.1:1"); st != 503 {
		t.Fatalf("readyz with Redis down: %d", st)
	}
}
