package kit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadSecret is the one reader of the secrets a configuration names: a file without its
// trailing line end, else an environment variable; nothing read is never a secret.
func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv("DIALOGTRUST_TEST_SECRET_SET", "from-env")
	for name, c := range map[string]struct {
		file, env, want, err string
	}{
		"file, line end dropped": {file: write("s", "s3cret\r\n"), want: "s3cret"},
		"file wins over env":     {file: write("s2", "file"), env: "DIALOGTRUST_TEST_SECRET_SET", want: "file"},
		"empty file":             {file: write("e", "\n"), err: "x.secret_file: " + filepath.Join(dir, "e") + " is empty"},
		"missing file":           {file: filepath.Join(dir, "none"), err: "x.secret_file: open "},
		"env":                    {env: "DIALOGTRUST_TEST_SECRET_SET", want: "from-env"},
		"unset env":              {env: "DIALOGTRUST_TEST_SECRET_UNSET", err: "x.secret_env: DIALOGTRUST_TEST_SECRET_UNSET is not set"},
	} {
		got, err := ReadSecret("x.secret", c.file, c.env)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%s: %q, %v; want error starting %q", name, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, c.want)
		}
	}
}
