package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// stopGrace is how long a process has to exit after SIGTERM before it is killed.
const stopGrace = 10 * time.Second

// Process is a started child process.
type Process struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start runs cmd with its output in logFile and registers its stop with t.Cleanup.
func Start(t testing.TB, name, logFile string, cmd *exec.Cmd) *Process {
	t.Helper()
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &Process{Name: name, Log: logFile, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop(t)
		if t.Failed() {
			t.Logf("%s (pid %d) log tail:\n%s", name, cmd.Process.Pid, Tail(logFile, 40))
		}
	})
	return p
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Err is the process's exit error once Exited is closed.
func (p *Process) Err() error { <-p.done; return p.err }

// Stop sends SIGTERM to the process's pid, waits up to stopGrace, then kills it.
// Stopping an exited process does nothing.
func (p *Process) Stop(t testing.TB) {
	if terminate(p.Pid(), p.done, stopGrace) {
		t.Logf("%s (pid %d) ignored SIGTERM for %s and was killed", p.Name, p.Pid(), stopGrace)
	}
}

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// WaitFor polls cond every 100 ms until it returns nil, or fails the test after
// timeout with cond's last error. If one of procs exits first, it fails at once.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error, procs ...*Process) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		for _, p := range procs {
			select {
			case <-p.done:
				t.Fatalf("waiting for %s: %s exited (%v):\n%s", what, p.Name, p.err, Tail(p.Log, 40))
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %s: %v", what, timeout, err)
		}
		<-tick.C
	}
}

// Run runs a short command and returns its standard output; a failure is an error
// carrying its standard error.
func Run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()+out.String()))
	}
	return out.String(), nil
}

// Binary returns the peer binary named by the environment variable env. Without it
// the test is skipped, except under CI=true, where it fails.
func Binary(t testing.TB, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		testkit.PeerMissing(t, "%s is not set (source .ci/peers to build the peers)", env)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return p
}

// ErrNotYet is a generic not-ready error for WaitFor conditions.
var ErrNotYet = errors.New("not yet")
