package deploy

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	goyaml "github.com/goccy/go-yaml"
)

// promtool is Prometheus's promtool, pinned as a Go tool in interop/tools/promtool and
// built by .ci/peers, which exports its path. Under CI=true a missing promtool fails.
func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("DIALOGTRUST_PROMTOOL")
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DIALOGTRUST_PROMTOOL is not set (CI=true: source .ci/peers, which builds promtool)")
		}
		t.Skip("DIALOGTRUST_PROMTOOL is not set: source .ci/peers to build promtool")
	}
	return p
}

func runPromtool(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// The alerting rules are valid (promtool check rules) and their unit tests pass
// (promtool test rules): each alert fires on its case and not on its look-alike.
func TestAlertRules(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "deploy", "prometheus")
	if out, err := runPromtool(t, dir, "check", "rules", "alerts.yaml"); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := runPromtool(t, dir, "test", "rules", "alerts_test.yaml"); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// Every alert of alerts.yaml is unit-tested: alerts_test.yaml names it in an
// alert_rule_test that expects it to fire.
func TestAlertRulesAllTested(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "deploy", "prometheus")
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Record, Expr string }
		}
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		}
	}
	readYAML(t, filepath.Join(dir, "alerts.yaml"), &rules)
	readYAML(t, filepath.Join(dir, "alerts_test.yaml"), &tests)
	fires := map[string]bool{}
	for _, c := range tests.Tests {
		for _, a := range c.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if !fires[r.Alert] {
				t.Errorf("alert %s has no unit test in which it fires", r.Alert)
			}
		}
	}
	if n < 6 {
		t.Fatalf("only %d alerts read", n)
	}
}

func readYAML(t *testing.T, file string, into any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := goyaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// dashboard is the part of a Grafana dashboard's JSON the tests read.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			RefID      string `json:"refId"`
			Expr       string `json:"expr"`
			Datasource struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

// The dashboard's queries are PromQL that Prometheus accepts: each is checked by
// promtool as a recording rule, with Grafana's variables given values.
func TestDashboardQueries(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "dialogtrust.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*")
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	ids := map[int]bool{}
	n := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if q.Datasource.Type != "prometheus" || q.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: query %s does not use the dashboard's Prometheus data source", p.Title, q.RefID)
			}
			n++
			rules.WriteString("      - record: dashboard:q" + strconv.Itoa(n) + "\n        expr: " + strconv.Quote(vars.Replace(q.Expr)) + "\n")
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runPromtool(t, filepath.Dir(file), "check", "rules", file); err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
}
