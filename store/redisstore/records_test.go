package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/storetest"
)

func TestRedisRecordsContract(t *testing.T) {
	addr := testRedisAddr(t)
	storetest.RunRecords(t, func(t *testing.T) (store.Records, func(time.Duration)) {
		client, prefix := newTestRedis(t, addr)
		return NewRecords(client, WithPrefix(prefix), WithTimeout(contractTimeout)), nil
	})
}

// Stands in for the contract's expiry step: each record carries the ttl asked for
// (rounded up to the millisecond), store.NoExpiry carries none, and a swap replaces the ttl.
func TestRedisRecordsSetExpiry(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	r := NewRecords(client, WithPrefix(prefix))
	ctx := context.Background()
	pttl := func(key string) time.Duration {
		t.Helper()
		d, err := client.PTTL(ctx, r.key(key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	storetest.MustCreate(t, r, "short", []byte("v"), 2*time.Second+time.Microsecond)
	if d := pttl("short"); d <= 0 || d > 2*time.Second+time.Millisecond {
		t.Errorf("PTTL = %v, want in (0, 2.001s]", d)
	}
	storetest.MustCreate(t, r, "forever", []byte("v"), store.NoExpiry)
	if d := pttl("forever"); d != -1 {
		t.Errorf("PTTL of a store.NoExpiry record = %v, want -1 (no expiry)", d)
	}
	if ok, err := r.Swap(ctx, "short", []byte("v"), []byte("w"), store.NoExpiry); !ok || err != nil {
		t.Fatalf("swap: %v %v", ok, err)
	}
	if d := pttl("short"); d != -1 {
		t.Errorf("PTTL after a swap to store.NoExpiry = %v, want -1", d)
	}
	if ok, err := r.Swap(ctx, "forever", []byte("v"), []byte("w"), time.Hour); !ok || err != nil {
		t.Fatalf("swap: %v %v", ok, err)
	}
	if d := pttl("forever"); d <= 59*time.Minute || d > time.Hour {
		t.Errorf("PTTL after a swap to 1h = %v", d)
	}
}

// Keys are stored as prefix+digest; neither the caller's key nor a hash tag in it
// reaches Redis.
func TestRedisRecordsStoreOnlyDigestsOfKeys(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	r := NewRecords(client, WithPrefix(prefix))
	const key = "spiffe://a.example/agent/{planner}\x00q3Zl0v8bVfQmJm2c4bq1Ww"
	storetest.MustCreate(t, r, key, []byte("v"), time.Minute)
	keys, err := client.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != r.key(key) || strings.ContainsAny(keys[0][len(prefix):], "{}") ||
		strings.Contains(keys[0], "planner") {
		t.Fatalf("stored keys %q", keys)
	}
}

// A create or swap that go-redis retried after a lost reply finds its own write.
func TestRedisRecordsRetriedWritesAreTheirOwn(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	r := NewRecords(client, WithPrefix(prefix))
	token := []byte("0123456789abcdef")
	r.newToken = func() []byte { return append([]byte(nil), token...) }
	ctx := context.Background()
	// The first attempt's write is in place; the retry must report "created".
	if err := client.Set(ctx, r.key("k"), string(token)+"v1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	storetest.MustCreate(t, r, "k", []byte("v1"), time.Minute)
	// The same for a swap whose first attempt already applied.
	if err := client.Set(ctx, r.key("k"), string(token)+"v2", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.Swap(ctx, "k", []byte("v1"), []byte("v2"), time.Minute); !ok || err != nil {
		t.Fatalf("retried swap = %v, %v; want true", ok, err)
	}
	// Another writer's record is existing, not ours.
	r.newToken = randomToken
	existing, err := r.Create(ctx, "k", []byte("v1"), time.Minute)
	if err != nil || string(existing) != "v2" {
		t.Fatalf("Create over another record = %q, %v", existing, err)
	}
}

func TestRedisRecordsClosedPortFailsClosed(t *testing.T) {
	client := closedPortClient(t)
	r := NewRecords(client, WithTimeout(200*time.Millisecond))
	ctx := context.Background()
	_, err := r.Create(ctx, "k", []byte("v"), time.Minute)
	storetest.WantUnavailable(t, err, "Create against a closed port")
	got, err := r.Get(ctx, "k")
	storetest.WantUnavailable(t, err, "Get against a closed port")
	if got != nil {
		t.Fatal("a failed Get returned a record")
	}
	_, err = r.Swap(ctx, "k", []byte("v"), []byte("w"), time.Minute)
	storetest.WantUnavailable(t, err, "Swap against a closed port")
	_, err = r.Delete(ctx, "k", []byte("v"))
	storetest.WantUnavailable(t, err, "Delete against a closed port")
}

func TestRedisRecordsDefaults(t *testing.T) {
	r := NewRecords(nil)
	if r.prefix != DefaultRecordsPrefix || r.timeout != DefaultTimeout {
		t.Fatalf("prefix %q timeout %v", r.prefix, r.timeout)
	}
	if recordTTL(store.NoExpiry) != "0" || recordTTL(time.Nanosecond) != "1" || recordTTL(1500*time.Millisecond) != "1500" {
		t.Fatal("recordTTL")
	}
}
