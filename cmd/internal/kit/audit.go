package kit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
)

// Audit sinks (AuditConfig.Sink).
const (
	AuditSinkFile   = "file"
	AuditSinkStdout = "stdout"
)

// AuditConfig is the audit section (issue 26; docs/operator.md "The audit trail"):
// where a token endpoint writes one record per decision, and how often it checkpoints.
type AuditConfig struct {
	// Sink is file (append-only, rotated by size), stdout, or redis (a stream in the
	// store section's Redis, shared by the replicas).
	Sink string `yaml:"sink"`
	// Path is the file of the file sink.
	Path string `yaml:"path"`
	// RotateBytes rotates the file before a line takes it past this size (0: never).
	RotateBytes int64 `yaml:"rotate_bytes"`
	// CheckpointInterval is how long records go without a signed checkpoint (default
	// audit.DefaultCheckpointInterval).
	CheckpointInterval time.Duration `yaml:"checkpoint_interval"`
	// Stream is the Redis stream's key of the redis sink (default DefaultAuditStream,
	// or the store's prefix + "audit").
	Stream string `yaml:"stream"`
	// Writer names this process's chain (default: the host name and a random suffix).
	Writer string `yaml:"writer"`
}

// Check checks the section (named section in its errors).
func (c *AuditConfig) Check(section string) error {
	switch c.Sink {
	case AuditSinkFile:
		if c.Path == "" {
			return fmt.Errorf("%s.path is required with sink file", section)
		}
	case AuditSinkStdout, AuditSinkRedis:
		if c.Path != "" || c.RotateBytes != 0 {
			return fmt.Errorf("%s: path and rotate_bytes are for sink file", section)
		}
	default:
		return fmt.Errorf("%s.sink must be %s, %s or %s, not %q", section, AuditSinkFile, AuditSinkStdout, AuditSinkRedis, c.Sink)
	}
	if c.Stream != "" && c.Sink != AuditSinkRedis {
		return fmt.Errorf("%s.stream is for sink redis", section)
	}
	if c.RotateBytes < 0 || c.RotateBytes > 0 && c.RotateBytes < 2*audit.MaxLine {
		return fmt.Errorf("%s.rotate_bytes must be 0 or at least %d", section, 2*audit.MaxLine)
	}
	if c.CheckpointInterval < 0 || c.CheckpointInterval > 0 && c.CheckpointInterval < time.Second {
		return fmt.Errorf("%s.checkpoint_interval must be at least 1s", section)
	}
	if strings.ContainsAny(c.Writer, "+ \t\r\n") || len(c.Writer) > 100 {
		return fmt.Errorf("%s.writer must have no spaces or '+' and at most 100 characters", section)
	}
	return nil
}

// OpenAudit opens the audit trail of c on s (nil c: none): its sink (stdout is the
// process's standard output; redis a stream in st's Redis), its writer signing
// checkpoints with ks's active key, a checkpoint every interval while ctx lasts, and a
// last checkpoint when s closes.
func OpenAudit(ctx context.Context, s *Server, c *AuditConfig, st *Store, ks audit.KeySource, stdout io.Writer, logger *slog.Logger) (*audit.Log, error) {
	if c == nil {
		return nil, nil
	}
	var sink audit.Sink
	switch c.Sink {
	case AuditSinkFile:
		f, err := audit.OpenFile(c.Path, c.RotateBytes, nil)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		sink = f
	case AuditSinkStdout:
		if stdout == nil {
			stdout = os.Stdout
		}
		sink = audit.NewWriterSink(stdout)
	case AuditSinkRedis:
		r, err := newRedisStreamSink(st, c.Stream)
		if err != nil {
			return nil, err
		}
		sink = r
	default:
		return nil, fmt.Errorf("audit.sink %q", c.Sink)
	}
	writer := c.Writer
	if writer == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		writer = strings.Map(func(r rune) rune {
			if r == '+' || r <= ' ' {
				return '-'
			}
			return r
		}, host) + "-" + hex.EncodeToString(b[:])
	}
	interval := c.CheckpointInterval
	if interval == 0 {
		interval = audit.DefaultCheckpointInterval
	}
	l, err := audit.New(sink, ks, audit.WithWriter(writer), audit.WithCheckpointInterval(interval), audit.WithLogger(logger))
	if err != nil {
		if cl, ok := sink.(io.Closer); ok {
			_ = cl.Close()
		}
		return nil, err
	}
	loop, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-loop.Done():
				return
			case <-t.C:
				if err := l.Checkpoint(); err != nil {
					logger.Error("audit checkpoint not written", "error", err, "writer", l.Writer())
				}
			}
		}
	}()
	s.OnClose(func() {
		stop()
		<-done
		if err := l.Close(); err != nil {
			logger.Error("audit trail not closed cleanly", "error", err, "writer", l.Writer())
		}
	})
	logger.Info("audit trail", "sink", c.Sink, "path", c.Path, "writer", l.Writer(), "checkpoint_interval", interval)
	return l, nil
}
