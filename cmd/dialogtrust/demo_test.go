package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/cmd/dialogtrust/internal/demo"
)

// localEnv is the environment file `demo --local` reads for the domains a and b, as
// deploy/local/up.sh writes it.
func localEnv(a, b demo.Domain) string {
	var body strings.Builder
	for _, d := range []struct {
		p string
		d demo.Domain
	}{{"A", a}, {"B", b}} {
		fmt.Fprintf(&body, "DIALOGTRUST_LOCAL_%s_TRUST_DOMAIN=%s\nDIALOGTRUST_LOCAL_%s_WIT_ISSUER=%s\nDIALOGTRUST_LOCAL_%s_TTS=%s\n",
			d.p, d.d.Name, d.p, d.d.WITIssuer, d.p, d.d.TTS)
	}
	return body.String()
}

// TestDemoCommandLocal runs `dialogtrust demo --local ENVFILE` against domains started
// for the test (deploy/local_test.go runs it against deploy/local/up.sh's processes).
// The env file names no identity provider key: the ID-JAG path (step 8) is the third
// skip.
func TestDemoCommandLocal(t *testing.T) {
	a, b, stop, err := demo.StartDomains(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	env := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(env, []byte(localEnv(a, b)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := dt(t, "", "demo", "--local", env)
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), " passed, 0 failed, 3 skipped") ||
		!strings.Contains(out, "against deployed services") || !strings.Contains(out, b.TTS) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestDemoCommandUsage(t *testing.T) {
	dir := t.TempDir()
	partial := filepath.Join(dir, "env")
	if err := os.WriteFile(partial, []byte("DIALOGTRUST_LOCAL_A_TRUST_DOMAIN=a.example\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"demo", "--local", filepath.Join(dir, "missing")},
		{"demo", "--local", partial},
		{"demo", "--local", partial, "--local-env"},
		{"demo", "extra"},
		{"demo", "--report", filepath.Join(dir, "missing", "report.html")},
	} {
		if _, errOut, code := dt(t, "", args...); code != 2 || !strings.Contains(errOut, "usage: dialogtrust demo") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}
	t.Setenv("DIALOGTRUST_LOCAL_A_TRUST_DOMAIN", "a.example")
	if _, errOut, code := dt(t, "", "demo", "--local-env"); code != 2 || !strings.Contains(errOut, "DIALOGTRUST_LOCAL_A_WIT_ISSUER is not set") {
		t.Errorf("--local-env without the variables: exit %d, stderr %q", code, errOut)
	}
}

// TestIssue24Point9_DemoJSONAndReport: `demo --json --report FILE` prints one JSON
// document that decodes strictly and writes the HTML report of the same run (its
// dialogs' hops and checks); with a check that really fails (TTS B's log without B1's
// exchange), it exits 1, and the JSON and the report both say which check failed.
func TestIssue24Point9_DemoJSONAndReport(t *testing.T) {
	a, b, stop, err := demo.StartDomains(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := t.TempDir()
	emptyLog := filepath.Join(dir, "tts-b.err")
	if err := os.WriteFile(emptyLog, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := filepath.Join(dir, "env")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		failed string
	}{
		{"in process", nil, 0, ""},
		{"a failing check", []string{"--local", env}, 1, "TTS B's log records B1's exchange (D2, the access token's hash): it is the log of what reached TTS B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.args != nil {
				if err := os.WriteFile(env, []byte(localEnv(a, b)+"DIALOGTRUST_LOCAL_B_TTS_LOG="+emptyLog+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			page := filepath.Join(t.TempDir(), "report.html")
			out, errOut, code := dt(t, "", append([]string{"demo", "--json", "--report", page}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			var r demo.Report
			if err := dec.Decode(&r); err != nil || dec.More() {
				t.Fatalf("--json: %v\n%s", err, out)
			}
			html, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Hops) == 0 || len(r.Checks) != r.Passed+r.Failed+r.Skipped || r.Passed == 0 {
				t.Fatalf("report: %d hops, %s", len(r.Hops), r.Counts())
			}
			// The report is of the same run: it names this run's dialogs and URLs.
			for _, s := range append([]string{r.Domains[1].TTS}, r.Steps[4].Info...) {
				if !strings.Contains(string(html), template.HTMLEscapeString(s)) {
					t.Errorf("the HTML report lacks %q of the JSON's run", s)
				}
			}
			var failed []string
			for _, c := range r.Checks {
				if c.Result == demo.Failed {
					failed = append(failed, c.Name)
				}
				if !strings.Contains(string(html), `data-result="`+c.Result+`"><span class="mark">`) ||
					!strings.Contains(string(html), `<span class="name">`+template.HTMLEscapeString(c.Name)+`</span>`) {
					t.Errorf("the HTML report lacks check %q (%s)", c.Name, c.Result)
				}
			}
			if strings.Join(failed, "|") != tc.failed {
				t.Errorf("failed checks %q, want %q", failed, tc.failed)
			}
		})
	}
}
