package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `dialogtrust proxy` runs the proxy's program (cmd/internal/proxyservice, whose tests
// cover the configuration and the wiring): -check-config on the command line checks a
// file and says so, and a refused file ends the command with status 1 and the reason.
func TestProxyCommandCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(`trust_domains: [a.example]
workload: {id: "wimse://a.example/agent/a1", wit_issuer: "http://127.0.0.1:1", auth: development}
wits: [{trust_domain: a.example, jwks_url: "http://127.0.0.1:1/jwks"}]
egress:
  listen: 127.0.0.1:0
  routes:
    - {prefix: /t1, upstream: "http://127.0.0.1:2/", allow_plain_http: true, recipient: "http://127.0.0.1:2/"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"proxy", "-check-config", "-config", good}, nil, &stdout, &stderr); code != 0 || stdout.String() != "proxy: configuration ok\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("trust_domains: [a.example]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"proxy", "-check-config", "-config", bad}, nil, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "dialogtrust proxy: an egress section, an ingress section or both are required") {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
}

// TestIssue24Point4ProxyConfigErrorLocated: a semantic refusal of the proxy's
// configuration file is shown as a YAML error is, with the file, line and column, the
// source line and a caret under the value, and the member's path; not as a rejection
// code. The same member set by the environment names the variable instead.
func TestIssue24Point4ProxyConfigErrorLocated(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(`trust_domains: [a.example]
workload: {id: "wimse://a.example/agent/a1", wit_issuer: "http://127.0.0.1:1", auth: development}
wits: [{trust_domain: a.example, jwks_url: "http://127.0.0.1:1/jwks"}]
egress:
  listen: 127.0.0.1:0
  routes:
    - prefix: /t1
      upstream: 127.0.0.1:19484
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"proxy", "--check-config", "--config", bad}, {"proxy", "--config", bad}} {
		var stdout, stderr strings.Builder
		code := run(args, nil, &stdout, &stderr)
		want := "dialogtrust proxy: " + bad + `: [8:17] egress.routes[0].upstream: invalid_request: upstream "127.0.0.1:19484" must be an absolute http(s) URL`
		if code != 1 || !strings.HasPrefix(stderr.String(), want) ||
			!strings.Contains(stderr.String(), "\n>  8 |       upstream: 127.0.0.1:19484\n"+strings.Repeat(" ", 23)+"^\n") ||
			strings.Contains(stderr.String(), "error: invalid_request") {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant it to start %q, with a caret under the value", args, code, stderr.String(), want)
		}
	}
	var stdout, stderr strings.Builder
	t.Setenv("DIALOGTRUST_PROXY_WORKLOAD_ID", "https://a.example/a1")
	if code := run([]string{"proxy", "--check-config", "--config", bad}, nil, &stdout, &stderr); code != 1 ||
		!strings.HasPrefix(stderr.String(), "dialogtrust proxy: environment variable DIALOGTRUST_PROXY_WORKLOAD_ID: workload.id: ") {
		t.Errorf("env: exit %d, stderr %s", code, stderr.String())
	}
}
