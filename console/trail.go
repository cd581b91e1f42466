package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dialogtrust/dialogtrust/audit"
)

// Trail gives the recent lines of an audit trail, oldest first, at most max of them.
// Implementations: FileTrail (the file sink's current file) and, in cmd/internal/kit,
// the Redis stream sink's stream.
type Trail interface {
	Recent(ctx context.Context, max int) ([][]byte, error)
}

// DefaultMaxRecords is how many of the trail's latest lines the page reads.
const DefaultMaxRecords = 5000

// MaxTailBytes bounds what FileTrail reads of the end of the file.
const MaxTailBytes = 16 << 20

// FileTrail reads the end of the file sink's current file (rotated files are not read:
// the page shows what is recent).
type FileTrail struct{ Path string }

// Recent implements Trail: the last lines of the file's last MaxTailBytes octets (a
// first line cut by that bound is dropped).
func (f FileTrail) Recent(_ context.Context, max int) ([][]byte, error) {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, fmt.Errorf("console: the audit file: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("console: the audit file: %w", err)
	}
	start := max64(0, st.Size()-MaxTailBytes)
	buf := make([]byte, st.Size()-start)
	if _, err := fh.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("console: the audit file: %w", err)
	}
	lines := bytes.Split(buf, []byte("\n"))
	if start > 0 && len(lines) > 0 {
		lines = lines[1:] // possibly cut
	}
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	if len(lines) > max {
		lines = lines[len(lines)-max:]
	}
	return lines, nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// records parses lines into records, skipping checkpoints and anything malformed.
func records(lines [][]byte) []audit.Entry {
	out := make([]audit.Entry, 0, len(lines))
	for _, l := range lines {
		if e, err := audit.ParseRecord(l); err == nil {
			out = append(out, e)
		}
	}
	return out
}
