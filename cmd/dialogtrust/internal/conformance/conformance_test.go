package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// vectorDir is shared/conformance/wimsey beside the repository (as laid out for CI),
// five levels up from cmd/dialogtrust/internal/conformance.
func vectorDir(t *testing.T) string {
	d, _ := filepath.Abs("../../../../../shared/conformance/wimsey")
	if _, err := os.Stat(filepath.Join(d, "manifest.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("conformance vectors not found at %s", d)
		}
		t.Skipf("conformance vectors not found at %s", d)
	}
	return d
}

func TestConformanceVectors(t *testing.T) {
	rs, err := Run(vectorDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 {
		t.Fatal("no cases ran")
	}
	for _, r := range rs {
		if !r.Passed {
			t.Error(r.String())
		}
	}
	t.Logf("%d cases", len(rs))
}
