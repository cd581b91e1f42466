package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/revoke"
)

// DefaultRevocationsPrefix is the key prefix of NewRevocations.
const DefaultRevocationsPrefix = "dialogtrust:revocations:"

// Revocations is a revoke.Store shared by every TTS replica, receiver and ingress of a
// trust domain that uses the same Redis and prefix (issue 26); it survives their
// restarts. The revocations are one hash (prefix+"list", one field per kind and
// identifier, the value the revocation's JSON), so that a checker reads all of them in
// one HGETALL; every change is one script that also PUBLISHes on prefix+"changed",
// which Subscribe hears (revoke.Notifier), so that checkers refetch at once. A checker
// that misses a message (a reconnect) still refetches within its bound.
//
// Expired revocations are left out of List and removed by it, each with a
// compare-and-delete so that a revocation put again meanwhile stays.
type Revocations struct {
	client  redis.UniversalClient
	prefix  string
	timeout time.Duration
	now     func() time.Time
}

var (
	_ revoke.Store    = (*Revocations)(nil)
	_ revoke.Notifier = (*Revocations)(nil)
)

// NewRevocations returns a Revocations backed by client. It takes the options of
// NewReplay that apply (WithPrefix, WithTimeout, WithClock); the default prefix is
// DefaultRevocationsPrefix. The store does not close the client.
func NewRevocations(client redis.UniversalClient, opts ...Option) *Revocations {
	cfg := &Replay{prefix: DefaultRevocationsPrefix, timeout: DefaultTimeout, now: time.Now}
	for _, o := range opts {
		o(cfg)
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	return &Revocations{client: client, prefix: cfg.prefix, timeout: cfg.timeout, now: cfg.now}
}

// The hash and the channel share a hash tag so that a Cluster keeps the hash on one
// slot; PUBLISH reaches every node's subscribers.
func (s *Revocations) listKey() string { return s.prefix + "{rev}:list" }
func (s *Revocations) channel() string { return s.prefix + "{rev}:changed" }

// ARGV[1] field, ARGV[2] value, ARGV[3] limit. Returns 1 when stored, 0 when full.
var revocationPut = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PUBLISH', KEYS[2], '1')
return 1
`)

// ARGV[1] field, ARGV[2] the value to delete or "" for any. Returns the deleted value
// or false.
var revocationDelete = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return false end
if ARGV[2] ~= '' and v ~= ARGV[2] then return false end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('PUBLISH', KEYS[2], '1')
return v
`)

// Put implements revoke.Store.
func (s *Revocations) Put(ctx context.Context, r revoke.Revocation) error {
	if err := r.Validate(); err != nil {
		return err
	}
	v, err := json.Marshal(r)
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "revocation not encodable")
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	n, err := revocationPut.Run(ctx, s.client, []string{s.listKey(), s.channel()}, r.Key(), v, revoke.MaxRevocations).Int()
	if err != nil {
		return errcode.Unavailable(errcode.StoreUnavailable, err, "revocation not stored")
	}
	if n == 0 {
		return errcode.Unavailable(errcode.StoreUnavailable, nil, "the revocation store is full (%d revocations)", revoke.MaxRevocations)
	}
	return nil
}

// Delete implements revoke.Store.
func (s *Revocations) Delete(ctx context.Context, kind revoke.Kind, id string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := revocationDelete.Run(ctx, s.client, []string{s.listKey(), s.channel()}, revoke.Key(kind, id), "").Text()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, errcode.Unavailable(errcode.StoreUnavailable, err, "revocation not deleted")
	}
	var r revoke.Revocation
	return json.Unmarshal([]byte(v), &r) == nil && r.Live(s.now()), nil
}

// List implements revoke.Store.
func (s *Revocations) List(ctx context.Context) ([]revoke.Revocation, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	all, err := s.client.HGetAll(ctx, s.listKey()).Result()
	if err != nil {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "revocations not listed")
	}
	now := s.now()
	out := make([]revoke.Revocation, 0, len(all))
	for field, v := range all {
		var r revoke.Revocation
		if err := json.Unmarshal([]byte(v), &r); err != nil || r.Key() != field {
			// Not one this store wrote: fail closed rather than skip what may be a
			// revocation.
			return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "a revocation in Redis cannot be read")
		}
		if !r.Live(now) {
			_ = revocationDelete.Run(ctx, s.client, []string{s.listKey(), s.channel()}, field, v).Err()
			continue
		}
		out = append(out, r)
	}
	revoke.Sort(out)
	return out, nil
}

// Subscribe implements revoke.Notifier with Redis pub/sub on its own connection. The
// channel gets a value after every change and once after every (re)subscription, when
// messages may have been missed; it is closed when ctx ends.
func (s *Revocations) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	ps := s.client.Subscribe(ctx, s.channel())
	sctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if _, err := ps.Receive(sctx); err != nil {
		_ = ps.Close()
		return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "revocation notices not subscribed")
	}
	out := make(chan struct{}, 1)
	go func() {
		defer close(out)
		defer ps.Close()
		for {
			msg, err := ps.Receive(ctx)
			if ctx.Err() != nil {
				return
			}
			switch msg.(type) {
			case *redis.Message, *redis.Subscription:
			default:
				if err == nil {
					continue // a pong
				}
			}
			select {
			case out <- struct{}{}:
			default:
			}
			if err != nil {
				// go-redis reconnects and resubscribes on the next Receive; pace it.
				t := time.NewTimer(100 * time.Millisecond)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
	}()
	return out, nil
}
