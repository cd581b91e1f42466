package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/storetest"
)

// testRedisEnv names the host:port of a real redis-server for these tests. .ci/run
// starts one and sets it.
const testRedisEnv = "DIALOGTRUST_TEST_REDIS"

// contractTimeout bounds each operation of the stores under the shared contracts
// (storetest). The contracts judge what the stores answer, not how fast: with the
// default 500 ms, forty concurrent first operations of a fresh cluster client (its
// slot map and connections) under -race on a busy machine timed out, a failure of the
// machine's speed. The bound itself is tested against dead and silent servers.
const contractTimeout = 10 * time.Second

// runPrefix keeps concurrent runs against one server apart; every key a test writes
// starts with it, and only those keys are deleted afterwards.
var (
	runPrefix   = "dialogtrust-test:" + rand.Text() + ":"
	prefixCount atomic.Int64
)

// testRedisAddr returns the server address, or skips; in CI (CI=true) a missing server
// is a failure, so that the Redis tests cannot silently stop running there.
func testRedisAddr(tb testing.TB) string {
	tb.Helper()
	addr := os.Getenv(testRedisEnv)
	if addr == "" {
		testkit.PeerMissing(tb, "%s is not set; skipping tests against a real redis-server (see README, Run the tests)", testRedisEnv)
	}
	return addr
}

// newTestRedis returns a client for the test server and a prefix of its own; the
// keys under the prefix are deleted when the test ends.
func newTestRedis(tb testing.TB, addr string) (redis.UniversalClient, string) {
	tb.Helper()
	client := NewClient([]string{addr}, false)
	prefix := fmt.Sprintf("%s%d:", runPrefix, prefixCount.Add(1))
	tb.Cleanup(func() {
		defer client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The prefix has no glob metacharacters (base32 and digits), so the pattern
		// matches exactly this test's keys.
		var keys []string
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("cleanup scan: %v", err)
			return
		}
		for len(keys) > 0 {
			n := min(len(keys), 500)
			if err := client.Unlink(ctx, keys[:n]...).Err(); err != nil {
				tb.Errorf("cleanup unlink: %v", err)
				return
			}
			keys = keys[n:]
		}
	})
	if err := client.Ping(context.Background()).Err(); err != nil {
		tb.Fatalf("redis at %s (%s) does not answer: %v", addr, testRedisEnv, err)
	}
	return client, prefix
}

func TestRedisContract(t *testing.T) {
	addr := testRedisAddr(t)
	storetest.RunReplay(t, func(t *testing.T) (store.Replay, func(time.Duration)) {
		client, prefix := newTestRedis(t, addr)
		return NewReplay(client, WithPrefix(prefix), WithTimeout(contractTimeout)), nil
	})
}

// TestRedisSetsExpiry stands in for the contract's expiry step: Redis keeps its own
// clock and the tests do not sleep, so check that each claim carries an expiry no
// longer than asked for (rounded up to the millisecond).
func TestRedisSetsExpiry(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	r := NewReplay(client, WithPrefix(prefix))
	ctx := context.Background()
	for _, ttl := range []time.Duration{time.Minute, 2*time.Second + 500*time.Microsecond, 10 * time.Hour} {
		key := fmt.Sprintf("jti-ttl-%v", ttl)
		storetest.MustClaim(t, r, key, ttl)
		pttl, err := client.PTTL(ctx, r.key(key)).Result()
		if err != nil {
			t.Fatalf("PTTL: %v", err)
		}
		if pttl <= 0 || pttl > redisTTL(ttl) {
			t.Errorf("ttl %v: PTTL = %v, want in (0, %v]", ttl, pttl, redisTTL(ttl))
		}
	}
}

// TestRedisStoresOnlyDigests checks the layout on the server: the prefix, then a
// digest; the caller's value appears nowhere.
func TestRedisStoresOnlyDigests(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	r := NewReplay(client, WithPrefix(prefix))
	const secretish = "{slot-steering}-nonce-value"
	storetest.MustClaim(t, r, secretish, time.Minute)
	keys, err := client.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var claims, epochs []string
	for _, k := range keys {
		if strings.HasSuffix(k, "}epoch") {
			epochs = append(epochs, k)
		} else {
			claims = append(claims, k)
		}
	}
	if len(claims) != 1 || len(epochs) != LossTags {
		t.Fatalf("%d claim keys %q and %d epoch keys under the prefix, want 1 and %d", len(claims), claims, len(epochs), LossTags)
	}
	// prefix, a hash tag of two hex digits taken from the digest, the digest.
	k := claims[0]
	rest := k[len(prefix):]
	if k != r.key(secretish) || strings.Contains(k, "nonce") || strings.Contains(k, "slot-steering") ||
		len(rest) != 4+43 || rest[0] != '{' || rest[3] != '}' || strings.ContainsAny(rest[4:], "{}") {
		t.Errorf("stored key %q does not look like prefix+{tag}+digest", k)
	}
}

// TestRedisRetriedClaimIsNotReplay covers the case where the client retried a SET NX
// whose first reply was lost: the key then holds this claim's own value.
func TestRedisRetriedClaimIsNotReplay(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	r := NewReplay(client, WithPrefix(prefix))
	r.newValue = func() string { return "this-claim" }
	ctx := context.Background()
	if err := client.Set(ctx, r.key("jti-retried"), "this-claim", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Claim(ctx, "jti-retried", time.Minute); err != nil {
		t.Fatalf("claim whose own earlier write is in place: %v", err)
	}
	if err := client.Set(ctx, r.key("jti-other"), "another-claim", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	storetest.WantReplayed(t, r.Claim(ctx, "jti-other", time.Minute), "claim held by another value")
}

func TestRedisPrefixesAreSeparate(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	a := NewReplay(client, WithPrefix(prefix+"a:"))
	b := NewReplay(client, WithPrefix(prefix+"b:"))
	storetest.MustClaim(t, a, "jti-shared", time.Minute)
	storetest.MustClaim(t, b, "jti-shared", time.Minute)
	storetest.WantReplayed(t, a.Claim(context.Background(), "jti-shared", time.Minute), "same prefix again")
}

// TestRedisClosedPortFailsClosed needs no server: nothing listens on the port.
func TestRedisClosedPortFailsClosed(t *testing.T) {
	client := closedPortClient(t)
	r := NewReplay(client)
	for i := range 3 { // the client's connection pool must not turn a failure into a success later
		err := r.Claim(context.Background(), "jti-no-server", time.Minute)
		// The cause is the refused dial or, once go-redis has spent the timeout on
		// redialling, the deadline; either way not a replay and not a success.
		storetest.WantUnavailable(t, err, fmt.Sprintf("claim %d against a closed port", i+1))
	}
}

// closedPortClient is a client of a loopback port that nothing listens on any more;
// it is closed when the test ends.
func closedPortClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	client := NewClient([]string{addr}, false)
	t.Cleanup(func() { client.Close() })
	return client
}

// silentServer listens on a loopback port, accepts every connection and never
// answers; it stops when the test ends. It returns its address.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	return ln.Addr().String()
}

// TestRedisTimeoutFailsClosed points the store at a server that accepts connections
// and never answers. The claim must fail closed within the store's timeout, not the
// client's 3s ReadTimeout: this is what ContextTimeoutEnabled in NewClient buys.
func TestRedisTimeoutFailsClosed(t *testing.T) {
	client := NewClient([]string{silentServer(t)}, false)
	defer client.Close()
	r := NewReplay(client, WithTimeout(100*time.Millisecond))
	start := time.Now()
	err := r.Claim(context.Background(), "jti-silent-server", time.Minute)
	elapsed := time.Since(start)
	storetest.WantUnavailable(t, err, "claim against a silent server")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Logf("cause: %v", err)
	}
	if elapsed > 2*time.Second {
		t.Fatalf("claim took %v with a 100ms timeout; the context deadline is not applied to the socket", elapsed)
	}
}

func TestRedisTTLRounding(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{time.Nanosecond, time.Millisecond},
		{999 * time.Microsecond, time.Millisecond},
		{time.Millisecond, time.Millisecond},
		{time.Millisecond + time.Nanosecond, 2 * time.Millisecond},
		{1500 * time.Millisecond, 1500 * time.Millisecond},
		{time.Minute, time.Minute},
		{time.Duration(1<<63 - 1), (time.Duration(1<<63-1) / time.Millisecond) * time.Millisecond},
	} {
		if got := redisTTL(tc.in); got != tc.want {
			t.Errorf("redisTTL(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestRedisOptionDefaults(t *testing.T) {
	r := NewReplay(nil, WithTimeout(0), WithTimeout(-time.Second))
	if r.timeout != DefaultTimeout || r.prefix != DefaultPrefix {
		t.Errorf("timeout %v prefix %q, want defaults", r.timeout, r.prefix)
	}
	// Invalid input is rejected before the client is touched (here it is nil).
	err := r.Claim(context.Background(), "", time.Minute)
	if !errcode.Is(err, errcode.InvalidRequest) {
		t.Errorf("empty key: %v", err)
	}
}

func TestParseAddrs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"127.0.0.1:6379", []string{"127.0.0.1:6379"}},
		{"a:1,b:2", []string{"a:1", "b:2"}},
		{" a:1 ,, b:2 ,", []string{"a:1", "b:2"}},
		{"[::1]:7000,redis-0.redis:6379", []string{"[::1]:7000", "redis-0.redis:6379"}},
	} {
		got := ParseAddrs(tc.in)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(got) != len(tc.want) {
			t.Errorf("ParseAddrs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNewClientMode(t *testing.T) {
	// One address in cluster mode must still be a Cluster client (the go-redis pitfall).
	c := NewClient([]string{"127.0.0.1:1"}, true)
	if _, ok := c.(*redis.ClusterClient); !ok {
		t.Errorf("cluster with one address: got %T, want *redis.ClusterClient", c)
	}
	c.Close()
	c = NewClient([]string{"127.0.0.1:1", "127.0.0.1:2"}, true)
	if _, ok := c.(*redis.ClusterClient); !ok {
		t.Errorf("cluster with two addresses: got %T, want *redis.ClusterClient", c)
	}
	c.Close()
	c = NewClient([]string{"127.0.0.1:1"}, false)
	if cl, ok := c.(*redis.Client); !ok {
		t.Errorf("single node: got %T, want *redis.Client", c)
	} else if !cl.Options().ContextTimeoutEnabled {
		t.Error("single node client does not honour context deadlines")
	}
	c.Close()

	// Misconfigurations give a client that refuses, so the store fails closed.
	for _, addrs := range [][]string{nil, {"127.0.0.1:1", "127.0.0.1:2"}} {
		c := NewClient(addrs, false)
		err := NewReplay(c).Claim(context.Background(), "jti", time.Minute)
		storetest.WantUnavailable(t, err, fmt.Sprintf("claim through a client for %q without cluster", addrs))
		if !strings.Contains(err.Error(), "address") {
			t.Errorf("error %q does not name the configuration problem", err)
		}
		c.Close()
	}
	c = NewClient(nil, true)
	storetest.WantUnavailable(t, NewReplay(c).Claim(context.Background(), "jti", time.Minute), "cluster client without addresses")
	c.Close()
}

func BenchmarkRedisClaim(b *testing.B) {
	addr := os.Getenv(testRedisEnv)
	if addr == "" {
		b.Skipf("%s is not set", testRedisEnv)
	}
	client, prefix := newTestRedis(b, addr)
	r := NewReplay(client, WithPrefix(prefix))
	var id atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// A short ttl so that a long benchmark does not fill the server.
			if err := r.Claim(context.Background(), fmt.Sprintf("bench-jti-%d", id.Add(1)), 2*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
}
