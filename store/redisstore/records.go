package redisstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store"
)

// DefaultRecordsPrefix is the key prefix of NewRecords.
const DefaultRecordsPrefix = "dialogtrust:records:"

// recordTokenSize is the length of the random token stored in front of every value.
const recordTokenSize = 16

// Records is a store.Records shared by every process that uses the same Redis (single
// node or Cluster) and prefix; its records survive a restart of those processes.
//
// Every operation is one Lua script on one key, so it is atomic and Cluster-safe. The
// stored value is a random per-write token followed by the caller's value: when go-redis
// retries a script whose first reply was lost, the retry finds the token of its own
// earlier write and reports the write as done, instead of mistaking it for someone
// else's record (Create) or for a lost race (Swap).
type Records struct {
	client   redis.UniversalClient
	prefix   string
	timeout  time.Duration
	newToken func() []byte
}

var _ store.Records = (*Records)(nil)

// NewRecords returns a Records backed by client. It takes the options of NewReplay
// (WithPrefix, WithTimeout); the default prefix is DefaultRecordsPrefix. The store does
// not close the client.
func NewRecords(client redis.UniversalClient, opts ...Option) *Records {
	cfg := &Replay{prefix: DefaultRecordsPrefix, timeout: DefaultTimeout}
	for _, o := range opts {
		o(cfg)
	}
	return &Records{client: client, prefix: cfg.prefix, timeout: cfg.timeout, newToken: randomToken}
}

func randomToken() []byte {
	b := make([]byte, recordTokenSize)
	_, _ = rand.Read(b)
	return b
}

// ARGV[1] = token..value, ARGV[2] = ttl in ms or "0" for no expiry.
// Returns the stored value when a record is there, nil after storing.
var recordCreate = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
if ARGV[2] == '0' then
  redis.call('SET', KEYS[1], ARGV[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return false
`)

// ARGV[1] = old value (no token), ARGV[2] = token..new value, ARGV[3] = ttl ms or "0".
// Returns 1 when swapped (or when this very swap was applied before), 0 otherwise.
var recordSwap = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if v == ARGV[2] then return 1 end
if string.sub(v, 17) ~= ARGV[1] then return 0 end
if ARGV[3] == '0' then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 1
`)

// ARGV[1] = old value (no token). Returns 1 when deleted.
var recordDelete = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if string.sub(v, 17) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

// Create implements store.Records.
func (r *Records) Create(ctx context.Context, key string, value []byte, ttl time.Duration) ([]byte, error) {
	if err := store.ValidateRecord(key, value, ttl); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	stored := append(r.newToken(), value...)
	got, err := recordCreate.Run(ctx, r.client, []string{r.key(key)}, stored, recordTTL(ttl)).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, recordsUnavailable(err)
	case got == string(stored):
		return nil, nil // a retried create that had stored this very value
	case len(got) <= recordTokenSize:
		return nil, errcode.Unavailable(errcode.StoreUnavailable, nil, "record under key is not one this store wrote")
	}
	return []byte(got[recordTokenSize:]), nil
}

// Get implements store.Records.
func (r *Records) Get(ctx context.Context, key string) ([]byte, error) {
	if err := store.ValidateRecordKey(key); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	got, err := r.client.Get(ctx, r.key(key)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, nil
	case err != nil:
		return nil, recordsUnavailable(err)
	case len(got) <= recordTokenSize:
		return nil, errcode.Unavailable(errcode.StoreUnavailable, nil, "record under key is not one this store wrote")
	}
	return got[recordTokenSize:], nil
}

// Swap implements store.Records.
func (r *Records) Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) (bool, error) {
	if err := store.ValidateRecord(key, value, ttl); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	stored := append(r.newToken(), value...)
	n, err := recordSwap.Run(ctx, r.client, []string{r.key(key)}, old, stored, recordTTL(ttl)).Int()
	if err != nil {
		return false, recordsUnavailable(err)
	}
	return n == 1, nil
}

// Delete implements store.Records.
func (r *Records) Delete(ctx context.Context, key string, old []byte) (bool, error) {
	if err := store.ValidateRecordKey(key); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	n, err := recordDelete.Run(ctx, r.client, []string{r.key(key)}, old).Int()
	if err != nil {
		return false, recordsUnavailable(err)
	}
	return n == 1, nil
}

// key maps a caller's key to the Redis key: prefix and a digest, as for Replay, so the
// senders' values (an iss, a hop) stay out of Redis and cannot choose a Cluster slot.
func (r *Records) key(key string) string {
	sum := sha256.Sum256([]byte(key))
	return r.prefix + base64.RawURLEncoding.EncodeToString(sum[:])
}

func recordTTL(ttl time.Duration) string {
	if ttl == store.NoExpiry {
		return "0"
	}
	return strconv.FormatInt(int64(redisTTL(ttl)/time.Millisecond), 10)
}

func recordsUnavailable(err error) error {
	return errcode.Unavailable(errcode.StoreUnavailable, err, "redis record operation failed")
}
