// Package proc runs the real processes of the interoperability tests: it builds the
// dialogtrust binaries from the core module, starts a peer or a service with the
// environment it is given (never the caller's), waits for it with a deadline, and
// stops it by its PID when the test ends.
package proc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Program is a started program. Its output is kept for the failure log.
type Program struct {
	Name string
	cmd  *exec.Cmd

	mu     sync.Mutex
	out    bytes.Buffer // stdout and stderr, interleaved
	lines  []string     // stdout lines, for WaitLine
	signal chan struct{}
	exited chan struct{}
	err    error
}

// BaseEnv is the environment every process gets: enough to run, nothing of the
// caller's configuration (no DIALOGTRUST_*, no variable a peer reads as configuration,
// such as Hydra's DSN or LOG_LEVEL).
func BaseEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, k := range []string{"HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// StartProcess starts bin with args and env (BaseEnv plus extra) in dir ("" for the
// current directory). The process is stopped when the test ends: SIGTERM to its PID,
// then SIGKILL after five seconds; when the test failed, its output is logged.
func StartProcess(t testing.TB, name, bin, dir string, args, extra []string) *Program {
	t.Helper()
	p := &Program{Name: name, signal: make(chan struct{}, 1), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(BaseEnv(), extra...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		n, err := p.out.Write(b)
		p.mu.Unlock()
		p.notify()
		return n, err
	})
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	pid := p.cmd.Process.Pid
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			p.notify()
		}
		_, _ = io.Copy(io.Discard, stdout)
		err := p.cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s (pid %d) output:\n%s", name, pid, p.Output())
		}
	})
	return p
}

// notify wakes a waiter (WaitLine, WaitOutput) after new output.
func (p *Program) notify() {
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// Output is everything the process wrote so far.
func (p *Program) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Exited reports whether the process has ended, and how.
func (p *Program) Exited() (bool, error) {
	select {
	case <-p.exited:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// WaitLine waits until the process prints a stdout line starting with prefix and
// returns the rest of it; the test fails when the process ends first or the deadline
// passes.
func (p *Program) WaitLine(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				p.mu.Unlock()
				return rest
			}
		}
		p.mu.Unlock()
		select {
		case <-p.signal:
		case <-p.exited:
			t.Fatalf("%s exited before printing %q: %v\n%s", p.Name, prefix, p.err, p.Output())
		case <-deadline.C:
			t.Fatalf("%s did not print %q within %s\n%s", p.Name, prefix, timeout, p.Output())
		}
	}
}

// WaitOutput reports whether the process's output (stdout or stderr) contains s
// within timeout. A peer may write its log line after it has answered the request
// that caused it, so a test that reads a peer's log waits for the line instead of
// reading the output once.
func (p *Program) WaitOutput(s string, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if strings.Contains(p.Output(), s) {
			return true
		}
		select {
		case <-p.signal:
		case <-p.exited:
			return strings.Contains(p.Output(), s)
		case <-deadline.C:
			return strings.Contains(p.Output(), s)
		}
	}
}

// WaitHTTP polls url with GET until it answers 200, every 100 ms; the test fails when
// the process ends first or the deadline passes.
func (p *Program) WaitHTTP(t testing.TB, url string, timeout time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second} // Hydra answers its first JWKS request after generating the keys
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for {
		if done, err := p.Exited(); done {
			t.Fatalf("%s exited while waiting for %s: %v\n%s", p.Name, url, err, p.Output())
		}
		if res, err := hc.Get(url); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
			last = res.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s not ready within %s (%s)\n%s", p.Name, url, timeout, last, p.Output())
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for expiry
	}
}

// BuildBinaries runs `go build -o dir/ pkgs...` in the current directory (the interop
// module, whose replace points at the core module) and returns dir.
func BuildBinaries(t testing.TB, pkgs ...string) string {
	t.Helper()
	// go test puts its own GOROOT/bin first on the PATH of the tests it runs.
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	return dir
}

// WriteFile writes content to name in dir and returns its path.
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(fmt.Errorf("writing %s: %w", name, err))
	}
	return path
}
