package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/cmd/dialogtrust/internal/demo"
)

// TestDemoCommandLocal runs `dialogtrust demo --local ENVFILE` against domains started
// for the test (deploy/local_test.go runs it against deploy/local/up.sh's processes).
func TestDemoCommandLocal(t *testing.T) {
	a, b, stop, err := demo.StartDomains(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	env := filepath.Join(t.TempDir(), "env")
	var body strings.Builder
	for _, d := range []struct {
		p string
		d demo.Domain
	}{{"A", a}, {"B", b}} {
		fmt.Fprintf(&body, "DIALOGTRUST_LOCAL_%s_TRUST_DOMAIN=%s\nDIALOGTRUST_LOCAL_%s_WIT_ISSUER=%s\nDIALOGTRUST_LOCAL_%s_TTS=%s\n",
			d.p, d.d.Name, d.p, d.d.WITIssuer, d.p, d.d.TTS)
	}
	if err := os.WriteFile(env, []byte(body.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := dt(t, "", "demo", "--local", env)
	if code != 0 || !strings.HasSuffix(strings.TrimSpace(out), " passed, 0 failed, 2 skipped") ||
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
