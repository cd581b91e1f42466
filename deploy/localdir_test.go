package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLocalDirMustBeOwn: deploy/local keeps signing keys and the binaries it runs in its
// directory, by default in $XDG_RUNTIME_DIR (else $TMPDIR or /tmp). up.sh and down.sh
// refuse a directory that is a symbolic link or belongs to another user, before they
// build, start, kill or remove anything.
func TestLocalDirMustBeOwn(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed for deploy/local/up.sh")
	}
	// A PATH without go and redis-server: should a script get past its check, it stops
	// there instead of building and starting a deployment.
	path := t.TempDir()
	for _, tool := range []string{"id", "dirname", "grep"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(path, tool)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(env map[string]string, script string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bash, append([]string{filepath.Join("local", script)}, args...)...)
		env["PATH"] = path
		cmd.Env = cleanEnv(env)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}
	uid := strconv.Itoa(os.Getuid())

	// The default is per user, under XDG_RUNTIME_DIR: a symbolic link planted there is
	// refused, and the directory it points to stays empty.
	runtimeDir := t.TempDir()
	target := t.TempDir()
	planted := filepath.Join(runtimeDir, "dialogtrust-local-"+uid)
	if err := os.Symlink(target, planted); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_RUNTIME_DIR": runtimeDir}
	for _, script := range []string{"up.sh", "down.sh"} {
		out, code := run(env, script)
		if code != 1 || !strings.Contains(out, planted+" is a symbolic link") {
			t.Errorf("%s with a symbolic link: exit %d\n%s", script, code, out)
		}
	}
	if left, _ := os.ReadDir(target); len(left) != 0 {
		t.Errorf("the link's target holds %v", left)
	}

	// Another user's directory, even one that looks like up.sh's (only root can make
	// one here).
	if os.Geteuid() != 0 {
		t.Log("not root: cannot make another user's directory; that case is not run")
		return
	}
	foreign := filepath.Join(t.TempDir(), "foreign")
	if err := os.Mkdir(foreign, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, ".dialogtrust-local"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env = map[string]string{"DIALOGTRUST_LOCAL_DIR": foreign}
	for _, script := range []string{"up.sh", "down.sh"} {
		out, code := run(env, script)
		if code != 1 || !strings.Contains(out, foreign) || !strings.Contains(out, "another user") {
			t.Errorf("%s with another user's directory: exit %d\n%s", script, code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(foreign, ".dialogtrust-local")); err != nil {
		t.Errorf("down.sh touched another user's directory: %v", err)
	}
}
