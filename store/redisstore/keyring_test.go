package redisstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/keys/ringtest"
	"github.com/redis/go-redis/v9"
)

var testKeyRingSecret = []byte("0123456789abcdef0123456789abcdef")

// newTestRing is the "tts" ring of the tests under prefix in client.
func newTestRing(t *testing.T, client redis.UniversalClient, prefix string) *KeyRing {
	t.Helper()
	ring, err := NewKeyRing(client, "tts", testKeyRingSecret, WithPrefix(prefix), WithTimeout(contractTimeout))
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// rotateOnce rotates ring once through a shared rotator, as a service's first start
// does, so that the ring holds a key; it returns the rotator.
func rotateOnce(ctx context.Context, t *testing.T, ring *KeyRing) *keys.Rotator {
	t.Helper()
	r, err := keys.NewSharedRotator(ctx, ring, keys.RotationConfig{Retain: ringtest.Retain})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rotate(); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRedisKeyRingContract(t *testing.T) {
	addr := testRedisAddr(t)
	ringtest.RunShared(t, func(t *testing.T) keys.RingBackend {
		client, prefix := newTestRedis(t, addr)
		return newTestRing(t, client, prefix)
	})
}

// The shared key ring contract against a Redis Cluster: the ring is one hash key and
// its compare-and-set one script on that key, so every operation goes to the master of
// its slot and none is refused with CROSSSLOT; the replicas of the contract (each with
// its own Rotator) rotate through it without ever losing a change.
func TestRedisClusterKeyRingContract(t *testing.T) {
	addrs := testRedisClusterAddrs(t)
	ringtest.RunShared(t, func(t *testing.T) keys.RingBackend {
		client, prefix := newTestRedisCluster(t, addrs)
		return newTestRing(t, client, prefix)
	})
}

// Two services' rings in one Redis Cluster are two keys (they may lie on different
// masters), each read back through a second cluster client, as another replica reads
// it.
func TestRedisClusterKeyRingsOfTwoServices(t *testing.T) {
	addrs := testRedisClusterAddrs(t)
	client, prefix := newTestRedisCluster(t, addrs)
	other := NewClient(addrs, true)
	defer other.Close()
	ctx := context.Background()
	for _, name := range []string{"tts", "wit-issuer"} {
		ring, err := NewKeyRing(client, name, testKeyRingSecret, WithPrefix(prefix), WithTimeout(contractTimeout))
		if err != nil {
			t.Fatal(err)
		}
		r := rotateOnce(ctx, t, ring)
		again, err := NewKeyRing(other, name, testKeyRingSecret, WithPrefix(prefix), WithTimeout(contractTimeout))
		if err != nil {
			t.Fatal(err)
		}
		r2, err := keys.NewSharedRotator(ctx, again, keys.RotationConfig{Retain: ringtest.Retain})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := r.State().Keys, r2.State().Keys; len(a) != 2 || len(b) != 2 || a[0].Key.KID() != b[0].Key.KID() || a[1].Key.KID() != b[1].Key.KID() || b[1].State != keys.KeyNext {
			t.Fatalf("%s: the second client reads %d keys, the first stored %d", name, len(b), len(a))
		}
		if n, err := client.Exists(ctx, ring.key).Result(); err != nil || n != 1 {
			t.Fatalf("%s: EXISTS %s = %d, %v", name, ring.key, n, err)
		}
	}
}

func TestKeyRingRefusesShortSecret(t *testing.T) {
	if _, err := NewKeyRing(nil, "tts", testKeyRingSecret[:MinKeyRingSecret-1]); err == nil {
		t.Fatal("a 31-byte secret was accepted")
	}
}

// The value in Redis holds no key material, and a replica with another secret is
// refused with ErrKeyRingSecret instead of starting a ring of its own.
func TestRedisKeyRingEncryptedAtRest(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	ctx := context.Background()
	ring, err := NewKeyRing(client, "wit-issuer", testKeyRingSecret, WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	r := rotateOnce(ctx, t, ring)
	raw, err := client.HGetAll(ctx, ring.key).Result()
	if err != nil {
		t.Fatal(err)
	}
	stored := []byte(raw["s"])
	if raw["v"] != "2" || len(stored) == 0 {
		t.Fatalf("stored hash = %q", raw)
	}
	for _, rec := range r.State().Keys {
		priv, err := json.Marshal(rec.Key)
		if err != nil {
			t.Fatal(err)
		}
		var jwk map[string]string
		if err := json.Unmarshal(priv, &jwk); err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{"d", "x", "kid"} {
			if jwk[field] == "" || bytes.Contains(stored, []byte(jwk[field])) {
				t.Fatalf("the stored value contains the key's %q (%q)", field, jwk[field])
			}
		}
	}
	for _, clear := range []string{`"jwk"`, `"state"`, "active", "next"} {
		if bytes.Contains(stored, []byte(clear)) {
			t.Fatalf("the stored value contains %q in the clear", clear)
		}
	}
	other, err := NewKeyRing(client, "wit-issuer", bytes.Repeat([]byte("x"), 32), WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	_, err = keys.NewSharedRotator(ctx, other, keys.RotationConfig{Retain: ringtest.Retain})
	if !errors.Is(err, ErrKeyRingSecret) || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("wrong secret: %v, want ErrKeyRingSecret", err)
	}
	// The same secret under another ring name derives another key: a value moved from
	// one ring to another does not decrypt.
	moved := newTestRing(t, client, prefix)
	if err := client.HSet(ctx, moved.key, "v", raw["v"], "s", raw["s"]).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := moved.Load(ctx); !errors.Is(err, ErrKeyRingSecret) {
		t.Fatalf("moved value: %v, want ErrKeyRingSecret", err)
	}
	// And a value put back under another version does not decrypt either.
	if err := client.HSet(ctx, ring.key, "v", "3").Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := ring.Load(ctx); !errors.Is(err, ErrKeyRingSecret) {
		t.Fatalf("value under another version: %v, want ErrKeyRingSecret", err)
	}
}
