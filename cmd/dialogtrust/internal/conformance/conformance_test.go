package conformance

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// vectorDir is the wimsey vector set in this package's testdata, the same files that
// Vectors embeds.
func vectorDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join("testdata", "wimsey")
	if _, err := os.Stat(filepath.Join(d, "manifest.json")); err != nil {
		t.Fatalf("conformance vectors not found: %v", err)
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

// TestEmbeddedVectors: the embedded set is the testdata directory, file for file, with
// its SOURCE.md and LICENSE, and runs to the same results.
func TestEmbeddedVectors(t *testing.T) {
	dir := vectorDir(t)
	emb := Vectors()
	for _, name := range []string{"SOURCE.md", "LICENSE"} {
		if _, err := fs.Stat(emb, name); err != nil {
			t.Errorf("embedded set lacks %s: %v", name, err)
		}
	}
	n := 0
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		want, _ := os.ReadFile(filepath.Join(dir, p))
		got, err := fs.ReadFile(emb, p)
		if err != nil || string(got) != string(want) {
			t.Errorf("embedded %s differs from testdata (%v)", p, err)
		}
		n++
		return nil
	})
	if err != nil || n < 11 {
		t.Fatalf("walked %d files: %v", n, err)
	}
	fromDir, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	fromEmb, err := RunFS(emb)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromEmb) != len(fromDir) {
		t.Fatalf("embedded set ran %d cases, directory %d", len(fromEmb), len(fromDir))
	}
	for i := range fromDir {
		if fromEmb[i] != fromDir[i] {
			t.Errorf("case %d: embedded %v, directory %v", i, fromEmb[i], fromDir[i])
		}
	}
}
