package kittest

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// Run is a command's run function: it serves until ctx ends, calling ready with the
// base URL once it listens.
type Run func(ctx context.Context, args, env []string, stdout, stderr io.Writer, ready func(url string)) error

// Process is a command started by Start.
type Process struct {
	URL            string
	Stdout, Stderr *testkit.SyncBuffer
	stop           func() error
}

// stopWithin bounds how long a stopping command may take to return.
const stopWithin = 30 * time.Second

// Start runs the command named name with args and env and returns once it listens; the
// test fails if it returns first or does not listen within startWithin. The command is
// stopped when the test ends.
func Start(t testing.TB, name string, startWithin time.Duration, run Run, args, env []string) *Process {
	t.Helper()
	p := &Process{Stdout: &testkit.SyncBuffer{}, Stderr: &testkit.SyncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, env, p.Stdout, p.Stderr, func(u string) { urls <- u }) }()
	select {
	case p.URL = <-urls:
	case err := <-done:
		cancel()
		t.Fatalf("%s did not start: %v\n%s", name, err, p.Stderr.String())
	case <-time.After(startWithin):
		cancel()
		t.Fatalf("%s did not start within %s", name, startWithin)
	}
	var once sync.Once
	var stopErr error
	p.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(stopWithin):
				t.Errorf("%s did not stop within %s", name, stopWithin)
			}
		})
		return stopErr
	}
	t.Cleanup(func() { _ = p.stop() })
	return p
}

// Stop cancels the command's context and returns what run returned. Only the first
// call stops it; later ones return the same error.
func (p *Process) Stop() error { return p.stop() }
