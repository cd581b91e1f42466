package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHTTPSigVectors runs the httpsig suite on its own, so that it can be checked while
// other suites are still missing from the runner.
func TestHTTPSigVectors(t *testing.T) {
	d := vectorDir(t)
	n := 0
	for _, f := range []string{"httpsig/sign-es256.json", "httpsig/sign-eddsa.json"} {
		raw, err := os.ReadFile(filepath.Join(d, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runHTTPSig(f, raw) {
			n++
			if !r.Passed {
				t.Error(r.String())
			} else {
				t.Log(r.String())
			}
		}
	}
	if n == 0 {
		t.Fatal("no cases ran")
	}
}
