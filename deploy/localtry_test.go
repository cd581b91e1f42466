package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// checkUpBuildReport (issue 24 point 8): up.sh is not silent while it builds. It says
// what it builds, how many packages at most and how long that takes the first time and
// later, then every DIALOGTRUST_LOCAL_PROGRESS_SECONDS (1 here) how long it has run and
// how many packages it has compiled, and at the end how long it took.
func checkUpBuildReport(t *testing.T, out, dir string) {
	t.Helper()
	head := regexp.MustCompile(`(?m)^up\.sh: building wit-issuer, tts and dialogtrust into ` + regexp.QuoteMeta(filepath.Join(dir, "bin")) +
		`: up to (\d+) packages, the first time about 1 to 2 minutes on 2 idle cores \(longer on a busy machine\), then about 10 s once Go's build cache holds an earlier up\.sh build$`).FindStringSubmatch(out)
	if head == nil {
		t.Errorf("up.sh did not say what it builds and how long it takes:\n%s", out)
		return
	}
	total, _ := strconv.Atoi(head[1])
	if total < 100 {
		t.Errorf("up.sh counts %d packages to build; the three commands need hundreds", total)
	}
	done := regexp.MustCompile(`(?m)^up\.sh: built in (\d+) s \((\d+) of ` + head[1] + ` packages compiled, the others from the build cache\)$`).FindStringSubmatch(out)
	if done == nil {
		t.Errorf("up.sh did not say how long the build took:\n%s", out)
		return
	}
	took, _ := strconv.Atoi(done[1])
	progress := regexp.MustCompile(`(?m)^up\.sh: building: \d+ s, \d+ of `+head[1]+` packages compiled$`).FindAllString(out, -1)
	t.Logf("up.sh built in %d s, %s of %d packages compiled, %d progress lines", took, done[2], total, len(progress))
	// A build of 3 s or more (by bash's whole seconds) ran for more than 2 s, so it was
	// still running at the first check, after 1 s.
	if took >= 3 && len(progress) == 0 {
		t.Errorf("the build took %d s and up.sh said nothing while it ran:\n%s", took, out)
	}
}

// runTryIt (issue 24 point 8) runs the "Try it" commands up.sh printed, as printed, in a
// working directory of their own: they get a WIT and a Txn-Token from a.example's
// services and write the private key and the WIT into the deployment's directory
// (DIR/try, mode 0700 as DIR is), never into the current directory (a repository root).
func runTryIt(ctx context.Context, t *testing.T, out, dir string) {
	t.Helper()
	m := regexp.MustCompile(`(?s)\nTry it \([^\n]*\n[^\n]*:\n((?:  [^\n]*\n)+)\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("up.sh printed no Try it block:\n%s", out)
	}
	block := m[1]
	if !strings.Contains(block, "--key-out") {
		t.Fatalf("the Try it block writes no key:\n%s", block)
	}
	cwd := t.TempDir()
	cmd := exec.CommandContext(ctx, "bash", "-euc", block)
	cmd.Dir = cwd
	cmd.Env = cleanEnv(nil)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the Try it block: %v\n%s\nstderr:\n%s", err, block, stderr.String())
	}
	if tok := strings.TrimSpace(stdout.String()); strings.Count(tok, ".") != 2 {
		t.Errorf("the Try it block printed %q, not a Txn-Token", tok)
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
		t.Errorf("the Try it block wrote into the current directory: %v", ents)
	}
	try := filepath.Join(dir, "try")
	if st, err := os.Stat(try); err != nil || st.Mode().Perm()&0o077 != 0 {
		t.Errorf("%s: %v %v; want a directory of its owner only", try, st, err)
	}
	if st, err := os.Stat(filepath.Join(try, "a1.jwk")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the private key: %v %v; want %s/a1.jwk, mode 0600", st, err, try)
	}
	if b, err := os.ReadFile(filepath.Join(try, "a1.wit")); err != nil || strings.Count(strings.TrimSpace(string(b)), ".") != 2 {
		t.Errorf("the WIT in %s: %q %v", try, b, err)
	}
}
