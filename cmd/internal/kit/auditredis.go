package kit

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/store/redisstore"
)

// AuditSinkRedis is the sink of a Redis stream shared by a service's replicas.
const AuditSinkRedis = "redis"

// DefaultAuditStream is the stream's key (after the store section's prefix, when it has
// one).
const DefaultAuditStream = "dialogtrust:audit"

// redisStreamSink appends the lines of the trail to a Redis stream (XADD, field l) in
// the store section's Redis, shared by the replicas: each replica is a writer of its
// own chain in it. It is an audit.BatchSink: the Log commits records in groups, and
// one XADD carries a group's lines, in chain order, joined by '\n' in the entry's
// field l (a lone record, or a checkpoint, is an entry of one line), so that
// concurrent requests share one round trip and one entry is taken whole or not at
// all. `redis-cli --raw XRANGE` prints the lines one a line, as a file holds them. A
// batch the stream did not take is an error for each of its records, and the token
// endpoint refuses each of their issuances (no record lost). The stream is not
// trimmed; export and trim it as the operator guide says.
type redisStreamSink struct {
	client  redis.UniversalClient
	key     string
	timeout time.Duration
}

func newRedisStreamSink(st *Store, stream string) (*redisStreamSink, error) {
	if st == nil || st.client == nil {
		return nil, errors.New("audit.sink redis needs store.type redis: the stream lives in the store section's Redis")
	}
	if stream == "" {
		stream = DefaultAuditStream
		if p := st.sc.Redis.Prefix; p != "" {
			stream = p + "audit"
		}
	}
	timeout := st.sc.Redis.Timeout
	if timeout <= 0 {
		timeout = redisstore.DefaultTimeout
	}
	return &redisStreamSink{client: st.client, key: stream, timeout: timeout}, nil
}

// Write implements audit.Sink (a checkpoint line).
func (s *redisStreamSink) Write(line []byte) error { return s.WriteBatch([][]byte{line}) }

// WriteBatch implements audit.BatchSink: one XADD of lines joined (each ends in '\n';
// the last one's is dropped).
func (s *redisStreamSink) WriteBatch(lines [][]byte) error {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	v := lines[0]
	if len(lines) > 1 {
		v = make([]byte, 0, n)
		for _, l := range lines {
			v = append(v, l...)
		}
	}
	if n := len(v); n > 0 && v[n-1] == '\n' {
		v = v[:n-1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	return s.client.XAdd(ctx, &redis.XAddArgs{Stream: s.key, Values: []any{"l", v}}).Err()
}
