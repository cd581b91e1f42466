package proc

import (
	"syscall"
	"time"
)

// Stop ends the process now (SIGTERM to its PID, SIGKILL after five seconds) and waits
// for it: a test that needs its peer gone (a decision point that went down) calls it;
// the cleanup StartProcess registered then has nothing left to do.
func (p *Program) Stop() {
	terminate(p.cmd.Process.Pid, p.exited, 5*time.Second)
}

// terminate sends SIGTERM to pid unless exited is already closed, waits up to grace
// for exited, then sends SIGKILL and waits for exited. It reports whether it had to
// kill. Stopping an exited process does nothing.
func terminate(pid int, exited <-chan struct{}, grace time.Duration) (killed bool) {
	select {
	case <-exited:
		return false
	default:
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-exited:
		return false
	case <-time.After(grace):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-exited
		return true
	}
}
