package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// The files an operator loads into Grafana and Prometheus (deploy/).
var (
	dashboardFile = filepath.Join("..", "..", "deploy", "grafana", "dialogtrust.json")
	alertsFile    = filepath.Join("..", "..", "deploy", "prometheus", "alerts.yaml")
)

// metricNameRE is a metric of the services or of the Go and process collectors, as the
// dashboard and the rules name it (in queries and in the text around them).
var metricNameRE = regexp.MustCompile(`\b(?:dialogtrust|process|go)_[a-z0-9_]+\b`)

// Issue 27: every metric the dashboard and the alerting rules name is one the services
// and the proxy really export, and every dialogtrust_ metric they export has a panel.
// What they export is read from their /metrics after dev --proxies has done the whole
// of its printed flow (WIT, Txn-Token, grant at AS A, access token at AS B, the linked
// dialog's Txn-Token, a request through the proxy pair) and each service refused one
// request: a labelled counter appears only once counted.
func TestDashboardAndAlertsNameExportedMetrics(t *testing.T) {
	cache := t.TempDir()
	out, dir, _ := startDevWith(t, cache, true)
	text := out.String()
	svc := serviceURLs(t, text)
	dashboard, err := filepath.Abs(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	cmds := devCommands(text)
	runDevCommands(t, cmds[:devCommandCount], dir)
	egress := regexp.MustCompile(`(?m)^\s*egress\s+(http://\S+)`).FindStringSubmatch(text)
	ops := regexp.MustCompile(`\bops (http://\S+)`).FindAllStringSubmatch(text, -1)
	if egress == nil || len(ops) != 2 {
		t.Fatalf("no egress or proxy ops URLs in:\n%s", text)
	}
	req, err := http.NewRequest(http.MethodPost, egress[1]+devPairPrefix+"/echo", strings.NewReader(`{"hello":"t1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(proxy.StartDialogField, "?1") // as the printed curl command
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("through the proxies: %v %v", res, err)
	}
	res.Body.Close()
	refuse := func(u string, form url.Values) {
		t.Helper()
		res, err := http.PostForm(u, form)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode < 400 {
			t.Fatalf("%s %v: %d, want a refusal", u, form, res.StatusCode)
		}
	}
	refuse(svc["wit"]+witissuer.PathWIT, url.Values{})
	refuse(svc["tts"]+tts.PathToken, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}})
	refuse(svc["tts"]+tts.PathToken, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:jwt"}, "audience": {svc["peer"]}})
	refuse(svc["peer"]+tts.PathToken, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"x.y.z"}})

	exported := map[string]dto.MetricType{}
	for _, u := range append([]string{svc["wit"], svc["tts"], svc["peer"], svc["peerWIT"]}, ops[0][1], ops[1][1]) {
		for name, f := range scrape(t, u+service.PathMetrics) {
			exported[name] = f.GetType()
		}
	}
	for _, file := range []string{dashboard, alerts} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		names := metricNameRE.FindAllString(string(b), -1)
		if len(names) == 0 {
			t.Fatalf("%s names no metric", file)
		}
		for _, n := range names {
			if !isExported(exported, n) {
				t.Errorf("%s names %s, which no service exports", file, n)
			}
		}
	}
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	onDashboard := metricNameRE.FindAllString(string(b), -1)
	for name := range exported {
		if strings.HasPrefix(name, "dialogtrust_") && !slices.ContainsFunc(onDashboard, func(n string) bool { return baseName(n) == name }) {
			t.Errorf("the services export %s, which the dashboard does not show", name)
		}
	}
	for _, want := range []string{"dialogtrust_signing_key_age_seconds", "dialogtrust_chaining_grants_refused_total",
		"dialogtrust_chaining_access_tokens_refused_total", "dialogtrust_wit_refused_total", "dialogtrust_proxy_requests_total"} {
		if _, ok := exported[want]; !ok {
			t.Errorf("%s was not exported: the run did not reach it", want)
		}
	}
}

// serviceURLs are the four services' URLs as dev printed them.
func serviceURLs(t *testing.T, text string) map[string]string {
	t.Helper()
	urls := map[string]string{}
	for key, re := range map[string]string{"wit": `(?m)^\s*WIT issuer\s+(http://\S+)`, "tts": `(?m)^\s*TTS\s+(http://\S+)`,
		"peer": `(?m)^\s*peer TTS\s+(http://\S+)`, "peerWIT": `(?m)^\s*peer WIT\s+(http://\S+)`} {
		m := regexp.MustCompile(re).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s URL in:\n%s", key, text)
		}
		urls[key] = m[1]
	}
	return urls
}

// scrape reads the metric families u serves in Prometheus's text format.
func scrape(t *testing.T, u string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d", u, res.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	return fams
}

// baseName is the family a histogram's series belongs to.
func baseName(n string) string {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(n, s); ok {
			return b
		}
	}
	return n
}

// isExported: n is an exported family, or a series of an exported histogram.
func isExported(exported map[string]dto.MetricType, n string) bool {
	if _, ok := exported[n]; ok {
		return true
	}
	t, ok := exported[baseName(n)]
	return ok && (t == dto.MetricType_HISTOGRAM || t == dto.MetricType_SUMMARY)
}
