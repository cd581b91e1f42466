package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Defaults of NewRedis.
const (
	DefaultRedisPrefix  = "dialogtrust:replay:"
	DefaultRedisTimeout = 500 * time.Millisecond
)

// RedisOption configures NewRedis.
type RedisOption func(*Redis)

// WithPrefix sets the prefix of every key the store writes. Brokers that must see each
// other's claims use the same prefix; unrelated deployments sharing one Redis use
// different ones. A prefix containing a Redis Cluster hash tag ("{...}") puts every
// claim into one slot, so one node carries all of the load.
func WithPrefix(prefix string) RedisOption {
	return func(r *Redis) { r.prefix = prefix }
}

// WithTimeout bounds each Claim, including any retries the client makes. A value of
// zero or less keeps DefaultRedisTimeout. go-redis applies a context deadline to its
// socket reads only when the client has ContextTimeoutEnabled (NewRedisClient sets
// it); otherwise a hung server holds a claim for the client's ReadTimeout instead.
func WithTimeout(d time.Duration) RedisOption {
	return func(r *Redis) {
		if d > 0 {
			r.timeout = d
		}
	}
}

// Redis is a Replay shared by every broker that uses the same Redis (a single node or a
// Cluster) and the same prefix. It is safe for concurrent use.
//
// A claim is one SET key value PX ttl NX. The value is random per claim, so that when
// the client retries a SET whose first reply was lost (go-redis retries after, for
// example, an EOF on a pooled connection, and a Cluster client retries on another
// node), a "not set" that is really this claim's own earlier write is recognised
// instead of being reported as a replay.
type Redis struct {
	client   redis.UniversalClient
	prefix   string
	timeout  time.Duration
	newValue func() string // a test hook; crypto/rand otherwise
}

var _ Replay = (*Redis)(nil)

// NewRedis returns a Replay backed by client. The store does not close the client.
func NewRedis(client redis.UniversalClient, opts ...RedisOption) *Redis {
	r := &Redis{client: client, prefix: DefaultRedisPrefix, timeout: DefaultRedisTimeout, newValue: rand.Text}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Claim implements Replay.
func (r *Redis) Claim(ctx context.Context, key string, ttl time.Duration) error {
	if err := validateClaim(key, ttl); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()

	k := r.key(key)
	v := r.newValue()
	ok, err := r.client.SetNX(ctx, k, v, redisTTL(ttl)).Result()
	if err != nil {
		return unavailable(err)
	}
	if ok {
		return nil
	}
	// Not set: someone holds the key. Only a replay if that someone is not this claim.
	got, err := r.client.Get(ctx, k).Result()
	switch {
	case errors.Is(err, redis.Nil):
		// It expired between the two commands; whose it was is unknown.
		return errcode.Unavailable(errcode.StoreUnavailable, nil, "replay claim outcome unknown")
	case err != nil:
		return unavailable(err)
	case got == v:
		return nil
	default:
		return replayed()
	}
}

// key maps a caller's key to the Redis key. The digest keeps keys short, keeps the
// senders' values out of Redis, and contains no "{" or "}", so a sender cannot choose
// the Cluster slot of its claims.
func (r *Redis) key(key string) string {
	sum := sha256.Sum256([]byte(key))
	return r.prefix + base64.RawURLEncoding.EncodeToString(sum[:])
}

// redisTTL rounds ttl up to whole milliseconds, the unit of PX: rounding down could
// end a claim before the value it protects has expired, and go-redis would turn a
// sub-millisecond ttl into 1ms itself but log about it.
func redisTTL(ttl time.Duration) time.Duration {
	ms := ttl / time.Millisecond
	if ttl%time.Millisecond != 0 {
		ms++
	}
	if ms > math.MaxInt64/time.Millisecond {
		ms = math.MaxInt64 / time.Millisecond
	}
	return ms * time.Millisecond
}

func unavailable(err error) error {
	return errcode.Unavailable(errcode.StoreUnavailable, err, "redis replay claim failed")
}

// ParseRedisAddrs splits a comma-separated list of host:port addresses, dropping
// blanks around and between them.
func ParseRedisAddrs(s string) []string {
	var addrs []string
	for a := range strings.SplitSeq(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// NewRedisClient returns a client for a single Redis node (cluster false, exactly one
// address) or a Redis Cluster (cluster true, one or more seed addresses).
// Connections are plain TCP without authentication; a deployment that needs TLS or
// credentials builds its own client (with ContextTimeoutEnabled) and passes it to
// NewRedis.
//
// The mode is never inferred from the number of addresses: go-redis would make one
// address a plain client even for a Cluster (writes then fail with MOVED), and several
// addresses a Cluster client. No address, or several without cluster, is a
// configuration error; the returned client then fails every command with it, so a
// broker so configured rejects every claim (fails closed) and says why, instead of
// quietly talking to localhost:6379 or to the wrong kind of server.
//
// The client honours context deadlines on its sockets, so the store's per-call timeout
// holds even when a server stops answering.
func NewRedisClient(addrs []string, cluster bool) redis.UniversalClient {
	switch {
	case len(addrs) == 0:
		return refusingClient("store: no Redis address given")
	case !cluster && len(addrs) > 1:
		return refusingClient("store: several Redis addresses given without cluster mode")
	}
	return redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 addrs,
		IsClusterMode:         cluster,
		ContextTimeoutEnabled: true,
	})
}

func refusingClient(reason string) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{})
	c.AddHook(refuseHook{errors.New(reason)})
	return c
}

// refuseHook fails every command and dial of a client that must not be used.
type refuseHook struct{ err error }

func (h refuseHook) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) { return nil, h.err }
}

func (h refuseHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		cmd.SetErr(h.err)
		return h.err
	}
}

func (h refuseHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(_ context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			cmd.SetErr(h.err)
		}
		return h.err
	}
}
