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

// redisStreamSink appends each line of the trail to a Redis stream (XADD, field l) in
// the store section's Redis, shared by the replicas: each replica is a writer of its
// own chain in it. One synchronous XADD per record: a record the stream did not take
// is an error, and the token endpoint refuses the issuance (no record lost). The
// stream is not trimmed; export and trim it as the operator guide says.
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

// Write implements audit.Sink.
func (s *redisStreamSink) Write(line []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	return s.client.XAdd(ctx, &redis.XAddArgs{Stream: s.key, Values: []any{"l", line}}).Err()
}
