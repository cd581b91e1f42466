package audittest

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/dialogtrust/dialogtrust/audit"
)

// Sink is an audit.Sink that keeps an audit log's lines in memory; after Fail it
// refuses them, as a full disk would.
type Sink struct {
	mu    sync.Mutex
	lines [][]byte
	fail  bool
}

// Write keeps line (a copy), or refuses it after Fail.
func (s *Sink) Write(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("disk full")
	}
	s.lines = append(s.lines, bytes.Clone(line))
	return nil
}

// Fail makes every later Write fail.
func (s *Sink) Fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = true
}

// Lines are the lines written so far (records and checkpoints, each ending in '\n').
func (s *Sink) Lines() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.lines...)
}

// Records are the record lines written so far, parsed (checkpoints left out).
func (s *Sink) Records(t testing.TB) []audit.Entry {
	t.Helper()
	var out []audit.Entry
	for _, l := range s.Lines() {
		if e, err := audit.ParseRecord(bytes.TrimSuffix(l, []byte("\n"))); err == nil {
			out = append(out, e)
		}
	}
	return out
}
