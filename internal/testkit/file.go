package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteTemp writes content to a file named name in a new temporary directory of the
// test, readable by the owner alone (as secrets and configurations are), and returns
// its path; a failed write fails the test.
func WriteTemp(tb testing.TB, name, content string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}
