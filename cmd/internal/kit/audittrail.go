package kit

import (
	"context"
	"fmt"

	"github.com/dialogtrust/dialogtrust/console"
)

// AuditTrail is how the operator's page reads back the audit section c's trail: the
// file sink's current file, or the Redis stream (XREVRANGE through the store section's
// one client). A nil Trail comes with the sentence the page shows instead: standard
// output is not readable here, and no section means no trail.
func AuditTrail(c *AuditConfig, st *Store) (console.Trail, string, error) {
	if c == nil {
		return nil, "This TTS keeps no audit trail (no audit section): there are no records to show. Revoking works all the same.", nil
	}
	switch c.Sink {
	case AuditSinkFile:
		return console.FileTrail{Path: c.Path}, "", nil
	case AuditSinkRedis:
		s, err := newRedisStreamSink(st, c.Stream)
		if err != nil {
			return nil, "", err
		}
		return redisTrail{s}, "", nil
	}
	return nil, fmt.Sprintf("This TTS writes its audit trail to %s, which it cannot read back: read it where your collector keeps it. Revoking works all the same.", c.Sink), nil
}

// redisTrail reads the stream's latest entries.
type redisTrail struct{ s *redisStreamSink }

// Recent implements console.Trail: XREVRANGE key + - COUNT max, oldest first.
func (t redisTrail) Recent(ctx context.Context, max int) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, t.s.timeout)
	defer cancel()
	msgs, err := t.s.client.XRevRangeN(ctx, t.s.key, "+", "-", int64(max)).Result()
	if err != nil {
		return nil, fmt.Errorf("audit stream: %w", err)
	}
	out := make([][]byte, 0, len(msgs))
	for i := len(msgs) - 1; i >= 0; i-- {
		if l, ok := msgs[i].Values["l"].(string); ok {
			out = append(out, []byte(l))
		}
	}
	return out, nil
}
