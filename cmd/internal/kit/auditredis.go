package kit

import (
	"context"
	"errors"
	"sync"
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

	// single is the client of a single node or of Sentinel's primary: the writes go
	// on a connection the sink holds (as the replay store's claims do,
	// store/redisstore/heldconn.go), which skips go-redis's pool check (one
	// recvfrom system call per command). A Cluster client keeps its pool.
	single *redis.Client
	mu     sync.Mutex  // the Log writes one batch at a time; this keeps conn safe anyway
	conn   *redis.Conn // nil: take a fresh one at the next write
	used   time.Time   // conn's last write
	now    func() time.Time
}

// heldIdle is how long the held connection may sit unused before it goes back to the
// pool: under load it carries every write without the pool's check; after a pause
// the next write takes a checked one.
const heldIdle = time.Second

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
	single, _ := st.client.(*redis.Client)
	return &redisStreamSink{client: st.client, key: stream, timeout: timeout, single: single, now: time.Now}, nil
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
	cmd := redis.NewStringCmd(ctx, "xadd", s.key, "*", "l", v)
	if s.single == nil {
		_ = s.client.Process(ctx, noRetry{cmd})
		return cmd.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.conn != nil && now.Sub(s.used) > heldIdle {
		// Idle a while: Redis may have closed it (a restart, a failover, its idle
		// timeout). Back to the pool, whose check finds that before the write.
		_ = s.conn.Close()
		s.conn = nil
	}
	if s.conn == nil {
		s.conn = s.single.Conn()
	}
	s.used = now
	_ = s.conn.Process(ctx, noRetry{cmd})
	if err := cmd.Err(); err != nil {
		// Whatever failed, the connection is not used again. No retry: a batch whose
		// reply was lost may have been added, and a second XADD would add it twice.
		_ = s.conn.Close()
		s.conn = nil
		return err
	}
	return nil
}

// noRetry is a command go-redis runs once: a retry after a reply lost would add the
// entry twice (and, on the held connection, go to the connection that failed).
type noRetry struct{ *redis.StringCmd }

func (noRetry) NoRetry() bool { return true }

// Close releases the held connection (the Log closes its sink; the client is the
// store's).
func (s *redisStreamSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}
