package testkit

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Git runs git with args in dir and returns its standard output, trimmed; a failure
// fails the test with git's standard error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			t.Fatalf("git %v: %v\n%s", args, err, ee.Stderr)
		}
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// CloneHEAD clones the repository dir is in, at its HEAD, into parent/dialogtrust and
// returns the clone: what a newcomer checks out, nothing beside it. Uncommitted changes
// are not in it; they are logged.
func CloneHEAD(t testing.TB, dir, parent string) string {
	t.Helper()
	repo := Git(t, dir, "rev-parse", "--show-toplevel")
	head := Git(t, repo, "rev-parse", "HEAD")
	if st := Git(t, repo, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Logf("uncommitted changes are not in the clone (it is HEAD %s):\n%s", head, st)
	}
	clone := filepath.Join(parent, "dialogtrust")
	Git(t, parent, "clone", "--quiet", "--no-hardlinks", repo, clone)
	Git(t, clone, "checkout", "--quiet", "--detach", head)
	return clone
}

// GroupGone waits until no process of the process group pgid is left (the test started
// the group; Ctrl-C, SIGINT to it, should end all of it), polling every 50 ms, and
// reports false when one is still there after timeout.
func GroupGone(pgid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for syscall.Kill(-pgid, 0) != syscall.ESRCH {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for expiry
	}
	return true
}
