package redisstore

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Held connections: the one place this package works around go-redis's pool.
//
// go-redis checks every connection its pool hands out (pool.go, isHealthyConn): a
// recvfrom system call with MSG_PEEK, to see whether the server closed it or sent
// something unasked. That check cannot be turned off, and at the TTS's load, where
// most claims travel alone, it is one more system call on every claim beside the
// write and the read of its round trip (docs/performance.md, "The Redis path and the
// server around the handler"). So the claim pipelines of a single node (or of the
// primary Sentinel names) run on connections the store holds (go-redis Client.Conn,
// a connection taken from the pool once and kept), which skip the check; with the
// clients of NewClient and NewFailoverClient, which speak RESP2 (conn.go, protocol),
// they skip go-redis's socket peek for push messages as well. What the check was for
// is done here instead, after the fact:
//
//   - A held connection that failed in any way (an error of the command or of the
//     connection, a timeout) is closed, never used again: go-redis drops it from its
//     pool if it is broken, and the next pipeline takes a fresh one from the pool,
//     checked as before.
//   - A pipeline that failed on a connection that had been held (one the server may
//     have closed meanwhile: a restart, a failover, an idle timeout) runs once more
//     on a fresh connection, within the same deadline. That is the retry go-redis
//     itself makes on a pooled connection that turns out dead, and it is as safe:
//     a claim whose first run was written finds its own random value (see Replay).
//     go-redis's own retries are off for the commands on held connections
//     (noRetryCmd): they would all go to the connection it has just marked bad,
//     after its back-off sleeps (a measured 100 ms after a restart).
//
// A Cluster client keeps the pool (its commands follow MOVED to the slot's node, which
// a held connection to one node would not), and so do claims with WithReplicaAcks: a
// run once more on another connection can find its claim made by the first run and
// then writes nothing, and WAIT on that connection would then vouch for a write it
// never covered.
type heldConns struct {
	client *redis.Client

	mu   sync.Mutex
	idle []*redis.Conn // at most maxInFlight: no more pipelines run at once
}

// claimConn is what a claim needs of a connection or a client: its scripts, and
// pipelines.
type claimConn interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
	Process(ctx context.Context, cmd redis.Cmder) error
}

var (
	_ claimConn = (*redis.Conn)(nil)
	_ claimConn = (redis.UniversalClient)(nil)
)

// get returns an idle held connection (reused true), or a new one when none is idle
// (the pool's, which go-redis checks when it is first used).
func (h *heldConns) get() (conn *redis.Conn, reused bool) {
	h.mu.Lock()
	if n := len(h.idle); n > 0 {
		conn = h.idle[n-1]
		h.idle[n-1] = nil
		h.idle = h.idle[:n-1]
		h.mu.Unlock()
		return conn, true
	}
	h.mu.Unlock()
	return h.client.Conn(), false
}

// put keeps conn for the next pipeline when it served this one without error (err
// nil); otherwise it closes it, which returns a healthy connection to go-redis's pool
// and drops a broken one.
func (h *heldConns) put(conn *redis.Conn, err error) {
	if err == nil {
		h.mu.Lock()
		if len(h.idle) < maxInFlight {
			h.idle = append(h.idle, conn)
			conn = nil
		}
		h.mu.Unlock()
	}
	if conn != nil {
		_ = conn.Close()
	}
}

// onConn runs fn on a held connection of r (held true), or on r's client when the
// store holds none (a Cluster, WithReplicaAcks); fn returns the error of its run (nil
// when every command was answered without an error). When a held connection that had
// served before fails, fn runs once more on a fresh one, unless ctx has ended.
func (r *Replay) onConn(ctx context.Context, fn func(conn claimConn, held bool) error) {
	if r.held == nil {
		_ = fn(r.client, false)
		return
	}
	conn, reused := r.held.get()
	err := fn(conn, true)
	r.held.put(conn, err)
	if err == nil || !reused || ctx.Err() != nil {
		return
	}
	conn = r.held.client.Conn()
	r.held.put(conn, fn(conn, true))
}

// noRetryCmd is a command go-redis runs once, without retries of its own (see
// heldConns).
type noRetryCmd struct{ *redis.Cmd }

func (noRetryCmd) NoRetry() bool { return true }

// heldEvalSha is claimScript.EvalSha for a held connection: queued on pipe (a
// pipeline, or the connection itself) as a noRetryCmd.
func heldEvalSha(ctx context.Context, pipe interface {
	Process(context.Context, redis.Cmder) error
}, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, "evalsha", claimScript.Hash(), len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmd := redis.NewCmd(ctx, append(cmdArgs, args...)...)
	_ = pipe.Process(ctx, noRetryCmd{cmd}) // the error is cmd's
	return cmd
}
