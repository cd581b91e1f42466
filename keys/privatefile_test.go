package keys_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dialogtrust/dialogtrust/keys"
)

// WritePrivateFile over a file others may read leaves it mode 0600 with the new content
// and no temporary file beside it.
func TestWritePrivateFileOverWiderMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key.jwk")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := keys.WritePrivateFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Fatalf("content %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files in the directory, want the key alone", len(ents))
	}
}
