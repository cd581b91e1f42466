package proc

import (
	"syscall"
	"time"
)

// Stop ends the process now (SIGTERM to its PID, SIGKILL after five seconds) and waits
// for it: a test that needs its peer gone (a decision point that went down) calls it;
// the cleanup StartProcess registered then has nothing left to do.
func (p *Program) Stop() {
	pid := p.cmd.Process.Pid
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-p.exited
	}
}
