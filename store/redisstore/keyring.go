package redisstore

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// DefaultKeyRingPrefix is the key prefix of NewKeyRing.
const DefaultKeyRingPrefix = "dialogtrust:keyring:"

// MinKeyRingSecret is the shortest secret NewKeyRing accepts, in bytes: the AES-256 key
// is derived from it, so it must carry at least 256 bits.
const MinKeyRingSecret = 32

// keyRingInfo is the HKDF info of the encryption key, followed by the Redis key name,
// so that one secret gives every ring its own key.
const keyRingInfo = "dialogtrust shared key ring v1 AES-256-GCM "

// ErrKeyRingSecret is returned (wrapped) when the stored ring does not decrypt: the
// secret differs from the one it was written with, or the value was altered.
var ErrKeyRingSecret = errors.New("the shared key ring does not decrypt with this secret (a different secret, or an altered value)")

// KeyRing is a keys.RingBackend in Redis (a single node or a Cluster): the replicas of
// one service that share it sign with one key ring (keys.NewSharedRotator).
//
// The ring is one hash key, prefix + name, with a version "v" and the state "s": the
// RingState, private keys included, as JSON sealed with AES-256-GCM (a random 96-bit
// nonce in front) under a key derived by HKDF-SHA256 from the configured secret and the
// key name; the additional data is the key name and the version, so a value cannot be
// moved to another ring or another version. Redis never sees key material in the
// clear. A store is one Lua script that writes only if the stored version is still the
// one the caller read (compare-and-set), so concurrent replicas never lose each other's
// change; a retried script that finds its own write reports success.
type KeyRing struct {
	client  redis.UniversalClient
	key     string
	aead    cipher.AEAD
	timeout time.Duration
}

var _ keys.RingBackend = (*KeyRing)(nil)

// NewKeyRing returns the ring name (e.g. "tts", "wit-issuer") encrypted under secret,
// which must be at least MinKeyRingSecret bytes. It takes the options of NewReplay
// (WithPrefix, WithTimeout); the default prefix is DefaultKeyRingPrefix. The store does
// not close the client.
func NewKeyRing(client redis.UniversalClient, name string, secret []byte, opts ...Option) (*KeyRing, error) {
	if len(secret) < MinKeyRingSecret {
		return nil, fmt.Errorf("keys.shared: the secret is %d bytes; at least %d are needed", len(secret), MinKeyRingSecret)
	}
	if name == "" {
		return nil, fmt.Errorf("keys.shared: the key ring needs a name")
	}
	cfg := &Replay{prefix: DefaultKeyRingPrefix, timeout: DefaultTimeout}
	for _, o := range opts {
		o(cfg)
	}
	key := cfg.prefix + name
	k, err := hkdf.Key(sha256.New, secret, nil, keyRingInfo+key, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &KeyRing{client: client, key: key, aead: aead, timeout: cfg.timeout}, nil
}

// ARGV[1] = version read, ARGV[2] = new version, ARGV[3] = sealed state.
// Returns 1 when stored (or when this very store was applied before), 0 otherwise.
var keyRingStore = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'v') or '0'
if v ~= ARGV[1] then
  if v == ARGV[2] and redis.call('HGET', KEYS[1], 's') == ARGV[3] then return 1 end
  return 0
end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3])
return 1
`)

func (k *KeyRing) additionalData(version uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(k.key+"\x00"), version)
}

// Load implements keys.RingBackend.
func (k *KeyRing) Load(ctx context.Context) (keys.RingState, uint64, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	vals, err := k.client.HMGet(ctx, k.key, "v", "s").Result()
	if err != nil {
		return keys.RingState{}, 0, false, keyRingUnavailable(err)
	}
	if vals[0] == nil && vals[1] == nil {
		return keys.RingState{}, 0, false, nil
	}
	vs, ok1 := vals[0].(string)
	sealed, ok2 := vals[1].(string)
	if !ok1 || !ok2 {
		return keys.RingState{}, 0, false, fmt.Errorf("keys.shared: %s is not a key ring this store wrote", k.key)
	}
	version, err := strconv.ParseUint(vs, 10, 64)
	if err != nil || version == 0 {
		return keys.RingState{}, 0, false, fmt.Errorf("keys.shared: %s has a bad version %q", k.key, vs)
	}
	n := k.aead.NonceSize()
	if len(sealed) < n {
		return keys.RingState{}, 0, false, fmt.Errorf("keys.shared: %s: %w", k.key, ErrKeyRingSecret)
	}
	plain, err := k.aead.Open(nil, []byte(sealed[:n]), []byte(sealed[n:]), k.additionalData(version))
	if err != nil {
		return keys.RingState{}, 0, false, fmt.Errorf("keys.shared: %s: %w", k.key, ErrKeyRingSecret)
	}
	var state keys.RingState
	if err := json.Unmarshal(plain, &state); err != nil {
		return keys.RingState{}, 0, false, fmt.Errorf("keys.shared: %s: %w", k.key, err)
	}
	return state, version, true, nil
}

// Store implements keys.RingBackend.
func (k *KeyRing) Store(ctx context.Context, state keys.RingState, version uint64) (uint64, error) {
	plain, err := json.Marshal(state)
	if err != nil {
		return 0, err
	}
	next := version + 1
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return 0, err
	}
	sealed := k.aead.Seal(nonce, nonce, plain, k.additionalData(next))
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	ok, err := keyRingStore.Run(ctx, k.client, []string{k.key},
		strconv.FormatUint(version, 10), strconv.FormatUint(next, 10), sealed).Int()
	if err != nil {
		return 0, keyRingUnavailable(err)
	}
	if ok != 1 {
		return 0, keys.ErrRingConflict
	}
	return next, nil
}

func keyRingUnavailable(err error) error {
	return errcode.Unavailable(errcode.StoreUnavailable, err, "redis key ring operation failed")
}
