package audit

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// WriterSink writes lines to an io.Writer (standard output): a collector downstream
// keeps them.
type WriterSink struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriterSink is a Sink over w.
func NewWriterSink(w io.Writer) *WriterSink { return &WriterSink{w: w} }

// Write implements Sink.
func (s *WriterSink) Write(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.w.Write(line)
	return err
}

// FileSink is an append-only file with size-based rotation. A full file is renamed to
// its path + "." + the UTC time of rotation (names that sort in order) and a new file is
// started; the writer's chain goes on across them (the first record of the new file
// names the last of the old one). The latest checkpoint line is also kept in
// path + ".checkpoint" (replaced atomically), so that a tail cut from the log after a
// checkpoint is found when that file is kept (best elsewhere: it is small).
type FileSink struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	size    int64
	maxSize int64
	now     func() time.Time
	anchor  string
}

// CheckpointSuffix names the file beside a log that keeps its latest checkpoint.
const CheckpointSuffix = ".checkpoint"

// OpenFile opens (or creates, mode 0600) the file at path for appending; maxSize > 0
// rotates it before a line would take it past maxSize octets. now names rotated files
// (nil: time.Now).
func OpenFile(path string, maxSize int64, now func() time.Time) (*FileSink, error) {
	if now == nil {
		now = time.Now
	}
	s := &FileSink{path: path, maxSize: maxSize, now: now}
	if err := s.open(); err != nil {
		return nil, err
	}
	anchor, err := lastRecordHash(s.f, s.size)
	if err != nil {
		_ = s.f.Close()
		return nil, err
	}
	s.anchor = anchor
	return s, nil
}

func (s *FileSink) open() error {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	s.f, s.size = f, st.Size()
	return nil
}

// lastRecordHash is the hex leaf hash (as prev names it) of the last record line of the file ("" when it
// holds none), read from its last MaxLine*2 octets.
func lastRecordHash(f *os.File, size int64) (string, error) {
	if size == 0 {
		return "", nil
	}
	r, err := os.Open(f.Name())
	if err != nil {
		return "", fmt.Errorf("audit: %w", err)
	}
	defer r.Close()
	start := max(0, size-2*MaxLine)
	buf := make([]byte, size-start)
	if _, err := r.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("audit: %w", err)
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if start > 0 && i == 0 {
			break // possibly a partial line
		}
		if l, err := parseLine(lines[i]); err == nil && l.rec {
			return hex.EncodeToString(hasher.HashLeaf(lines[i])), nil
		}
	}
	return "", nil
}

// Anchor is the hash of the last record the file held when opened.
func (s *FileSink) Anchor() string { return s.anchor }

// Write implements Sink: one write(2) of the whole line to a file opened O_APPEND.
func (s *FileSink) Write(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return errors.New("audit: file closed")
	}
	n, err := s.f.Write(line)
	s.size += int64(n)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Full reports whether a line of n octets would take the file past its size.
func (s *FileSink) Full(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxSize > 0 && s.size > 0 && s.size+int64(n) > s.maxSize
}

// Rotate syncs and renames the file, and starts a new one at the path.
func (s *FileSink) Rotate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	s.f = nil
	rotated := s.path + "." + s.now().UTC().Format("20060102T150405.000000000Z")
	if err := os.Rename(s.path, rotated); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return s.open()
}

// KeepCheckpoint syncs the log (the records a checkpoint covers are on disk before it
// is kept) and replaces path.checkpoint with line.
func (s *FileSink) KeepCheckpoint(line []byte) error {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	if f != nil {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("audit: %w", err)
		}
	}
	tmp := s.path + CheckpointSuffix + ".tmp"
	if err := os.WriteFile(tmp, line, 0o600); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if err := os.Rename(tmp, s.path+CheckpointSuffix); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Close closes the file.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
