package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMTLSSuite runs the mtls suite on its own, so it can pass before every other suite
// is registered (TestConformanceVectors needs them all).
func TestMTLSSuite(t *testing.T) {
	d := vectorDir(t)
	for _, f := range []string{"mtls/wic-es256.json", "mtls/wic-eddsa.json"} {
		raw, err := os.ReadFile(filepath.Join(d, f))
		if err != nil {
			t.Fatal(err)
		}
		rs := runMTLS(f, raw)
		if len(rs) < 4 {
			t.Fatalf("%s: only %d cases ran", f, len(rs))
		}
		for _, r := range rs {
			if r.Passed {
				t.Log(r.String())
			} else {
				t.Error(r.String())
			}
		}
	}
}
