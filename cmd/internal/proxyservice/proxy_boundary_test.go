package proxyservice

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// boundaryEgressYAML is agent a2's proxy in a.example: one route crossing the trust
// boundary to b1's ingress in b.example.
func boundaryEgressYAML(a, b *testbed.Domain, ingressURL string) string {
	return headYAML("a.example", "wimse://a.example/agent/a2", a.WITURL, "a.example", a.WITURL, "b.example", b.WITURL) + fmt.Sprintf(`egress:
  listen: 127.0.0.1:0
  tts: {token_endpoint: %[1]s/token, issuer: %[1]s, self_signed_subject: alice@a.example}
  routes:
    - prefix: /b1
      upstream: %[3]s/hotel
      audience: a.example
      scope: trip.book
      recipient: "https://b1.b.example/"
      require_signed_response: true
      boundary: {peer_issuer: %[2]s, peer_token_endpoint: %[2]s/token, peer_trust_domain: b.example}
`, a.TTSURL, b.TTSURL, ingressURL)
}

// boundaryIngressYAML is b1's boundary-facing ingress in b.example.
func boundaryIngressYAML(a, b *testbed.Domain, appURL string) string {
	return headYAML("b.example", "wimse://b.example/agent/b1", b.WITURL, "a.example", a.WITURL, "b.example", b.WITURL) + fmt.Sprintf(`ingress:
  listen: 127.0.0.1:0
  upstream: %[2]s
  audiences: ["https://b1.b.example/"]
  proofs: [httpsig]
  stateful: true
  sign_responses: true
  txn_tokens: {jwks_url: %[1]s/.well-known/jwks.json}
  boundary:
    access_tokens: {issuer: %[1]s, jwks_url: %[1]s/.well-known/jwks.json}
    tts_token_endpoint: %[1]s/token
`, b.TTSURL, appURL)
}

// Section 11 through two proxy commands: a2's egress (a.example) on a route crossing
// the trust boundary, b1's boundary-facing ingress (b.example). The application in B
// sees the linked dialog D2, initiated and sent by a2, and the claims of B's Txn-Token
// recording it; the agent's answer is in its dialog D1; no Txn-Token field and not D1
// reach B's application.
func TestProxyCommandBoundary(t *testing.T) {
	// a.example's AS A issues grants for b.example's AS B for trip.book; B maps A's
	// subjects to "a.example:<sub>".
	w, err := testbed.Start(t.Context())
	mustNil(t, err)
	t.Cleanup(w.Close)
	a, b := w.A, w.B
	var mu sync.Mutex
	var seen []http.Header
	var bodies []string
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, bodies = append(seen, r.Header.Clone()), append(bodies, string(body))
		mu.Unlock()
		io.WriteString(w, "booked")
	}))
	defer app.Close()
	in := startProxy(t, boundaryIngressYAML(a, b, app.URL))
	out := startProxy(t, boundaryEgressYAML(a, b, in["ingress"]))

	d1, err := dialog.New("D1-"+agent.NewDialogID(), identifier.MustParse("wimse://a.example/agent/a1"))
	mustNil(t, err)
	call := func(body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", out["egress"]+"/b1", strings.NewReader(body))
		req.Header.Set(dialog.HeaderName, d1.Value())
		res, b := testkit.Do(t, http.DefaultClient, req)
		return res, string(b)
	}
	res, body := call(`{"city":"Lisbon"}`)
	if res.StatusCode != 200 || body != "booked" {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	d2 := res.Header.Get(proxy.LinkedDialogField)
	if res.Header.Get(dialog.HeaderName) != d1.Value() || d2 == "" || d2 == d1.DLG() || res.Header.Get(proxy.LinkedEstablishedField) != "true" {
		t.Fatalf("the agent's answer: %v", res.Header)
	}
	if res, body = call(`{"q":2}`); res.StatusCode != 200 || res.Header.Get(proxy.LinkedDialogField) != d2 || res.Header.Get(proxy.LinkedEstablishedField) != "false" {
		t.Fatalf("continue: %d %s %v", res.StatusCode, body, res.Header)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, h := range seen {
		if h.Get(proxy.VerifiedSenderField) != "wimse://a.example/agent/a2" || h.Get(proxy.VerifiedDialogField) != d2 || h.Get(proxy.VerifiedInitiatorField) != "wimse://a.example/agent/a2" {
			t.Fatalf("request %d: the application saw %v", i, h)
		}
		var claims txntoken.Claims
		if err := json.Unmarshal([]byte(h.Get(proxy.VerifiedTxnTokenClaimsField)), &claims); err != nil || claims.Dialog() != d2 || claims.Iss != b.TTSURL || claims.Sub != "a.example:alice@a.example" {
			t.Fatalf("request %d: B's Txn-Token claims %+v %v", i, claims, err)
		}
		for name, vals := range h {
			if strings.EqualFold(name, txntoken.HeaderName) || strings.EqualFold(name, "Authorization") {
				t.Fatalf("request %d: the application got %s", i, name)
			}
			for _, v := range vals {
				if strings.Contains(v, d1.DLG()) {
					t.Fatalf("request %d: D1 in %s", i, name)
				}
			}
		}
		if strings.Contains(bodies[i], d1.DLG()) {
			t.Fatalf("request %d: D1 in the body", i)
		}
	}
}

// -check-config refuses a route crossing a trust boundary without its chaining
// configuration, and a boundary-facing ingress that could not do steps 3 and 4.
func TestProxyCheckConfigBoundary(t *testing.T) {
	a := &testbed.Domain{Name: "a.example", WITURL: "http://127.0.0.1:1", TTSURL: "http://127.0.0.1:2"}
	b := &testbed.Domain{Name: "b.example", WITURL: "http://127.0.0.1:3", TTSURL: "http://127.0.0.1:4"}
	eg, in := boundaryEgressYAML(a, b, "http://127.0.0.1:5"), boundaryIngressYAML(a, b, "http://127.0.0.1:6")
	peers := "boundary: {peer_issuer: http://127.0.0.1:4, peer_token_endpoint: http://127.0.0.1:4/token, peer_trust_domain: b.example}"
	for name, c := range map[string]struct{ yaml, want string }{
		"good egress":               {eg, ""},
		"good ingress":              {in, ""},
		"no chaining configuration": {strings.Replace(eg, peers, "boundary: {}", 1), "peer_issuer and peer_token_endpoint"},
		"no peer token endpoint":    {strings.Replace(eg, ", peer_token_endpoint: http://127.0.0.1:4/token", "", 1), "peer_issuer and peer_token_endpoint"},
		"no Txn-Token to chain":     {strings.Replace(eg, "      audience: a.example\n", "", 1), "needs audience"},
		"WPT":                       {strings.Replace(eg, "      require_signed_response: true\n", "      proof: wpt\n", 1), "needs proof httpsig"},
		"plain AS B":                {strings.Replace(eg, "peer_token_endpoint: http://127.0.0.1:4/token", "peer_token_endpoint: http://as.b.example/token", 1), "plain HTTP only to loopback"},
		"unknown member":            {strings.Replace(eg, "peer_issuer:", "peer_isuer: x, peer_issuer:", 1), "peer_isuer"},
		"peer client":               {strings.Replace(eg, "peer_issuer:", "peer_client: {client_id: agents, secret_file: /run/secrets/as-b}, peer_issuer:", 1), ""},
		"peer client no secret":     {strings.Replace(eg, "peer_issuer:", "peer_client: {client_id: agents}, peer_issuer:", 1), "exactly one of secret_file, secret_env"},
		"peer client two secrets":   {strings.Replace(eg, "peer_issuer:", "peer_client: {client_id: agents, secret_file: f, secret_env: E}, peer_issuer:", 1), "exactly one of secret_file, secret_env"},
		"peer client no client_id":  {strings.Replace(eg, "peer_issuer:", "peer_client: {secret_env: E}, peer_issuer:", 1), "a client_id"},
		"peer client inline secret": {strings.Replace(eg, "peer_issuer:", "peer_client: {client_id: agents, secret: s3cret}, peer_issuer:", 1), "never written in the configuration"},
		"no peer trust domain":      {strings.Replace(eg, ", peer_trust_domain: b.example", "", 1), "peer_trust_domain: required"},
		"own peer trust domain":     {strings.Replace(eg, "peer_trust_domain: b.example", "peer_trust_domain: a.example", 1), "own trust domain"},
		"signers of the peer":       {strings.Replace(eg, "      require_signed_response: true\n", "      require_signed_response: true\n      response_signers: [wimse://b.example/agent/b1]\n", 1), ""},
		"signers of the own domain": {strings.Replace(eg, "      require_signed_response: true\n", "      require_signed_response: true\n      response_signers: [wimse://a.example/agent/]\n", 1), "come from b.example"},
		"ingress no access tokens":  {strings.Replace(in, "    access_tokens: {issuer: http://127.0.0.1:4, jwks_url: http://127.0.0.1:4/.well-known/jwks.json}\n", "", 1), "access_tokens"},
		"ingress no TTS":            {strings.Replace(in, "    tts_token_endpoint: http://127.0.0.1:4/token\n", "", 1), "tts_token_endpoint"},
		"ingress no txn_tokens":     {strings.Replace(in, "  txn_tokens: {jwks_url: http://127.0.0.1:4/.well-known/jwks.json}\n", "", 1), "needs ingress.txn_tokens"},
		"ingress Txn-Token":         {strings.Replace(in, "  stateful: true\n", "  stateful: true\n  require_txn_token: true\n", 1), "excludes require_txn_token"},
		"ingress stateless":         {strings.Replace(in, "  stateful: true\n", "", 1), "needs stateful"},
		"ingress WPT only":          {strings.Replace(in, "proofs: [httpsig]", "proofs: [wpt]", 1), "needs proof httpsig"},
	} {
		expectCheckConfig(t, name, c.yaml, c.want)
	}
}

// The trust boundary examples of docs/proxy.md pass -check-config.
func TestProxyDocBoundaryExamples(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "proxy.md"))
	mustNil(t, err)
	_, rest, ok := strings.Cut(string(doc), "## Trust boundaries")
	if !ok {
		t.Fatal("docs/proxy.md has no section on trust boundaries")
	}
	n := 0
	for {
		var example string
		_, rest, ok = strings.Cut(rest, "```yaml\n")
		if !ok {
			break
		}
		example, rest, _ = strings.Cut(rest, "```")
		n++
		if _, err := checkProxyConfig(t, example); err != nil {
			t.Fatalf("example %d: %v", n, err)
		}
	}
	if n != 2 {
		t.Fatalf("%d examples, want the egress's and the ingress's", n)
	}
}

// peer_client's secret comes from its file (without the trailing newline) or its
// environment variable; an empty file or an unset variable is an error.
func TestProxyPeerClientSecret(t *testing.T) {
	dir := t.TempDir()
	file, empty := filepath.Join(dir, "secret"), filepath.Join(dir, "empty")
	mustNil(t, os.WriteFile(file, []byte("s3cr:et\n"), 0o600))
	mustNil(t, os.WriteFile(empty, []byte("\n"), 0o600))
	t.Setenv("DIALOGTRUST_TEST_PEER_SECRET", "from-env")
	for name, c := range map[string]struct {
		pc         PeerClientConfig
		want, fail string
	}{
		"file":       {PeerClientConfig{ClientID: "c", SecretFile: file}, "s3cr:et", ""},
		"env":        {PeerClientConfig{ClientID: "c", SecretEnv: "DIALOGTRUST_TEST_PEER_SECRET"}, "from-env", ""},
		"empty file": {PeerClientConfig{ClientID: "c", SecretFile: empty}, "", "is empty"},
		"no file":    {PeerClientConfig{ClientID: "c", SecretFile: filepath.Join(dir, "none")}, "", "secret_file"},
		"unset env":  {PeerClientConfig{ClientID: "c", SecretEnv: "DIALOGTRUST_TEST_PEER_SECRET_UNSET"}, "", "is not set"},
	} {
		got, err := c.pc.secret()
		if got != c.want || (c.fail == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.fail) {
			t.Fatalf("%s: %q, %v", name, got, err)
		}
	}
}
