package testkit

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// GroupGone is false while a process of the group runs, and true once the group is
// killed: the docs walk and the README test decide "nothing left after Ctrl-C" by it.
func TestGroupGone(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }) // the group this test started
	if GroupGone(pgid, 100*time.Millisecond) {
		t.Fatal("a running group reported gone")
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	_ = cmd.Wait()
	if !GroupGone(pgid, 5*time.Second) {
		t.Fatal("a killed group reported running")
	}
}
