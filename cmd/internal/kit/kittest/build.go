package kittest

import (
	gobuild "go/build"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
)

// Build builds the command at the import path pkg (github.com/dialogtrust/dialogtrust/
// cmd/wit-issuer) into a temporary directory and returns the binary's path, for the
// tests that run a real process rather than its run function.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(gobuild.Default.GOROOT, "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	if out, err := exec.Command(goBin, "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}
