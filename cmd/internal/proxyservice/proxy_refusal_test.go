package proxyservice

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// logLines are the JSON log lines of buf with msg.
func logLines(buf *testkit.SyncBuffer, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// checkConfigLog runs -check-config on yaml and returns its log.
func checkConfigLog(t *testing.T, yaml string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, log strings.Builder
	if err := kit.Run(t.Context(), Program, []string{"-check-config", "-config", file}, nil, &out, &log, nil); err != nil || out.String() != "proxy: configuration ok\n" {
		t.Fatalf("-check-config: %v %q", err, out.String())
	}
	return log.String()
}

// Issue 22 point 5, as a new user met it: an egress route without a recipient (so
// wimse-aud is the target URI) requiring a signed response, in front of an ingress whose
// audiences do not list that URI, and a request outside any dialog to an ingress that
// requires one. With two dialogtrust proxy commands, the agent gets the ingress's own
// status and code, marked as the upstream's; each proxy logs the refusal with its code
// (the ingress the WIT's hash, never a token); -check-config and the start warn about
// the defaulted recipient.
func TestIssue22Point5_ProxyCommandsRefusalsReadable(t *testing.T) {
	witURL, ttsURL := proxyDomain(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a refused request reached the application: %s", r.URL)
	}))
	defer app.Close()
	in, inLog := startProxyLogged(t, ingressYAML(witURL, ttsURL, app.URL)+"  require_dialog: true\n")
	eg := strings.Replace(egressYAML(witURL, ttsURL, in["ingress"]+"/invoke"), "    - {prefix: /t1,",
		fmt.Sprintf("    - {prefix: /bare, upstream: %s/invoke, audience: a.example, scope: trip.book, require_signed_response: true}\n    - {prefix: /t1,", in["ingress"]), 1)

	if log := checkConfigLog(t, eg); !strings.Contains(log, `egress.routes[0] (prefix /bare) has no recipient`) || !strings.Contains(log, in["ingress"]+"/invoke") ||
		strings.Contains(log, "egress.routes[1]") {
		t.Errorf("-check-config did not warn of the defaulted recipient alone:\n%s", log)
	}
	out, egLog := startProxyLogged(t, eg)
	if !strings.Contains(egLog.String(), `has no recipient`) {
		t.Errorf("the egress did not warn at the start:\n%s", egLog)
	}

	for _, c := range []struct {
		name, path string
		header     http.Header
		status     int
		code       string
	}{
		{"wimse-aud not accepted", "/bare", http.Header{proxy.StartDialogField: {"?1"}}, 401, "audience_mismatch"},
		{"outside any dialog", "/t1", nil, 400, "invalid_dialog_context"},
	} {
		req, _ := http.NewRequest(http.MethodPost, out["egress"]+c.path, strings.NewReader(`{}`))
		for k, v := range c.header {
			req.Header[k] = v
		}
		res, body := testkit.Do(t, http.DefaultClient, req)
		var doc map[string]any
		_ = json.Unmarshal(body, &doc)
		if res.StatusCode != c.status || doc["code"] != c.code || doc["refused_by"] != "upstream" || res.Header.Get(proxy.RefusedByField) != "upstream" {
			t.Errorf("%s: the agent got %d %s, want %d %s refused by the upstream", c.name, res.StatusCode, body, c.status, c.code)
		}
		found := false
		for _, l := range logLines(egLog, "refused") {
			found = found || l["code"] == c.code && l["refused_by"] == "upstream" && l["side"] == "egress"
		}
		if !found {
			t.Errorf("%s: the egress did not log the refusal with %s:\n%s", c.name, c.code, egLog)
		}
		found = false
		for _, l := range logLines(inLog, "refused") {
			h, _ := l["wit_sha256"].(string)
			found = found || l["code"] == c.code && l["side"] == "ingress" && len(h) == 43
		}
		if !found {
			t.Errorf("%s: the ingress did not log the refusal with %s and the WIT's hash:\n%s", c.name, c.code, inLog)
		}
	}
	if strings.Contains(inLog.String(), "eyJ") || strings.Contains(egLog.String(), "eyJ") {
		t.Errorf("a token in a log:\n%s\n%s", inLog, egLog)
	}
}

// Issue 22 point 5: one file with both sides, a route whose upstream is this ingress
// and whose recipient its audiences do not list, is warned about; a route whose
// recipient they list is not.
func TestIssue22Point5_CheckConfigRecipientAgainstIngress(t *testing.T) {
	both := func(recipient string) string {
		return fmt.Sprintf(`trust_domains: [a.example]
workload: {id: wimse://a.example/agent/a1, wit_issuer: http://127.0.0.1:1, auth: development}
wits: [{trust_domain: a.example, jwks_url: http://127.0.0.1:1/.well-known/jwks.json}]
egress:
  listen: 127.0.0.1:0
  routes:
    - {prefix: /self, upstream: "http://localhost:19482/invoke"%s}
ingress:
  listen: 0.0.0.0:19482
  upstream: http://127.0.0.1:3
  audiences: ["https://a1.a.example/"]
`, recipient)
	}
	log := checkConfigLog(t, both(`, recipient: "https://other.a.example/"`))
	if !strings.Contains(log, `reaches this configuration's ingress`) || !strings.Contains(log, `https://other.a.example/`) {
		t.Errorf("no warning for a recipient the ingress does not accept:\n%s", log)
	}
	log = checkConfigLog(t, both(""))
	if !strings.Contains(log, `do not list its recipient (the target URI, for the prefix itself) \"http://localhost:19482/invoke\"`) {
		t.Errorf("no warning for the defaulted recipient:\n%s", log)
	}
	if log := checkConfigLog(t, both(`, recipient: "https://a1.a.example/"`)); strings.Contains(log, "egress.routes") {
		t.Errorf("a warning for a recipient the ingress accepts:\n%s", log)
	}
}
