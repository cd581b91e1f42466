package testbed

import (
	"fmt"
	"io"
	"sync"
)

// Steps writes an example's numbered steps and its checks, concisely, one line each:
//
//	[1] a step
//	    ok  a check that passed
//	        information
//
// It is safe for concurrent use: a server's handler reports its checks from its own
// goroutine.
type Steps struct {
	mu   sync.Mutex
	w    io.Writer
	step int
}

// NewSteps writes to w.
func NewSteps(w io.Writer) *Steps { return &Steps{w: w} }

// Step writes the next numbered step.
func (s *Steps) Step(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.step++
	fmt.Fprintf(s.w, "[%d] %s\n", s.step, fmt.Sprintf(format, args...))
}

// OK writes a check that passed.
func (s *Steps) OK(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "    ok  %s\n", fmt.Sprintf(format, args...))
}

// Info writes a line of information.
func (s *Steps) Info(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "        %s\n", fmt.Sprintf(format, args...))
}
