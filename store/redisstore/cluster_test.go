package redisstore

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/storetest"
)

// testRedisClusterEnv names the seed addresses (host:port,host:port,...) of a real Redis
// Cluster for these tests. .ci/run starts a three-node one and sets it.
const testRedisClusterEnv = "DIALOGTRUST_TEST_REDIS_CLUSTER"

// testRedisClusterAddrs returns the seed addresses, or skips; in CI (CI=true) a missing
// cluster is a failure, so that the cluster runs cannot silently stop there.
func testRedisClusterAddrs(tb testing.TB) []string {
	tb.Helper()
	s := os.Getenv(testRedisClusterEnv)
	if s == "" {
		testkit.PeerMissing(tb, "%s is not set; skipping tests against a real Redis Cluster (see README, Run the tests)", testRedisClusterEnv)
	}
	addrs := ParseAddrs(s)
	if len(addrs) == 0 {
		tb.Fatalf("%s=%q names no address", testRedisClusterEnv, s)
	}
	return addrs
}

// newTestRedisCluster returns a cluster-mode client from NewClient, as a broker
// configured with cluster: true gets, and a prefix of its own. The keys under the
// prefix are deleted from every master when the test ends.
func newTestRedisCluster(tb testing.TB, addrs []string) (*redis.ClusterClient, string) {
	tb.Helper()
	client := NewClient(addrs, true)
	cc, ok := client.(*redis.ClusterClient)
	if !ok {
		client.Close()
		tb.Fatalf("NewClient(%q, true) returned %T, want a *redis.ClusterClient", addrs, client)
	}
	prefix := fmt.Sprintf("%scluster:%d:", runPrefix, prefixCount.Add(1))
	tb.Cleanup(func() {
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			var keys []string
			iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				keys = append(keys, iter.Val())
			}
			if err := iter.Err(); err != nil {
				return err
			}
			// One UNLINK per key: keys of one node lie in different slots, and a
			// multi-key command across slots is refused (CROSSSLOT).
			_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range keys {
					p.Unlink(ctx, k)
				}
				return nil
			})
			return err
		})
		if err != nil {
			tb.Errorf("cleanup: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cc.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		return node.Ping(ctx).Err()
	}); err != nil {
		tb.Fatalf("redis cluster at %s (%s) does not answer: %v", addrs, testRedisClusterEnv, err)
	}
	return cc, prefix
}

// The Replay contract, against a Redis Cluster.
func TestRedisClusterContract(t *testing.T) {
	addrs := testRedisClusterAddrs(t)
	storetest.RunReplay(t, func(t *testing.T) (store.Replay, func(time.Duration)) {
		client, prefix := newTestRedisCluster(t, addrs)
		return NewReplay(client, WithPrefix(prefix), WithTimeout(contractTimeout)), nil
	})
}

// The Records contract, against a Redis Cluster: each of its Lua scripts touches one
// key, so none is refused with CROSSSLOT.
func TestRedisClusterRecordsContract(t *testing.T) {
	addrs := testRedisClusterAddrs(t)
	storetest.RunRecords(t, func(t *testing.T) (store.Records, func(time.Duration)) {
		client, prefix := newTestRedisCluster(t, addrs)
		return NewRecords(client, WithPrefix(prefix), WithTimeout(contractTimeout)), nil
	})
}

// The contract passes on one node too; this is what only a cluster shows: claims and
// records land on several masters (the key's hash tag comes from the digest, so no
// one slot holds them all), every operation reaches the slot's owner (no MOVED surfaces), and a
// claim carries its expiry there.
func TestRedisClusterSpreadsKeysOverMasters(t *testing.T) {
	client, prefix := newTestRedisCluster(t, testRedisClusterAddrs(t))
	ctx := context.Background()
	replay := NewReplay(client, WithPrefix(prefix+"replay:"))
	records := NewRecords(client, WithPrefix(prefix+"records:"))
	const n = 64
	for i := range n {
		key := fmt.Sprintf("jti-%d", i)
		storetest.MustClaim(t, replay, key, time.Minute)
		storetest.WantReplayed(t, replay.Claim(ctx, key, time.Minute), key+" again")
		storetest.MustCreate(t, records, key, []byte("v1"), time.Minute)
		if ok, err := records.Swap(ctx, key, []byte("v1"), []byte("v2"), time.Minute); !ok || err != nil {
			t.Fatalf("Swap %s: %v, %v", key, ok, err)
		}
		if got := storetest.MustGet(t, records, key); string(got) != "v2" {
			t.Fatalf("Get %s = %q", key, got)
		}
	}
	if pttl, err := client.PTTL(ctx, replay.key("jti-0")).Result(); err != nil || pttl <= 0 || pttl > time.Minute {
		t.Errorf("PTTL of a claim = %v, %v; want in (0, 1m]", pttl, err)
	}

	var mu sync.Mutex
	perMaster := map[string]int{}
	err := client.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		count := 0
		for iter.Next(ctx) {
			if !strings.HasSuffix(iter.Val(), "}epoch") { // the loss-detection epochs
				count++
			}
		}
		mu.Lock()
		perMaster[node.Options().Addr] = count
		mu.Unlock()
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	total, used := 0, 0
	for _, c := range perMaster {
		total += c
		if c > 0 {
			used++
		}
	}
	if total != 2*n {
		t.Errorf("%d keys under the prefix across the masters, want %d (%v)", total, 2*n, perMaster)
	}
	if len(perMaster) < 2 || used < 2 {
		t.Errorf("keys per master %v: want a cluster of several masters, each holding some", perMaster)
	}
}

// One seed address is enough in cluster mode: the client learns the other nodes.
func TestRedisClusterOneSeedAddress(t *testing.T) {
	addrs := testRedisClusterAddrs(t)
	_, prefix := newTestRedisCluster(t, addrs) // for the clean-up of the keys below
	client := NewClient(addrs[:1], true)
	defer client.Close()
	r := NewReplay(client, WithPrefix(prefix))
	for i := range 32 {
		key := fmt.Sprintf("jti-seed-%d", i)
		storetest.MustClaim(t, r, key, time.Minute)
		storetest.WantReplayed(t, r.Claim(context.Background(), key, time.Minute), key+" again")
	}
}

// A broker configured without cluster: true against a cluster node fails closed: a key
// whose slot lives elsewhere gets MOVED, which is "could not be completed", never a
// success and never a false "replayed". (go-redis's own guess would be no better: one
// address makes a plain client, so the mode is configuration, not inferred.)
func TestRedisClusterWithoutClusterModeFailsClosed(t *testing.T) {
	addrs := testRedisClusterAddrs(t)
	_, prefix := newTestRedisCluster(t, addrs)
	client := NewClient(addrs[:1], false)
	defer client.Close()
	r := NewReplay(client, WithPrefix(prefix+"replay:"))
	rec := NewRecords(client, WithPrefix(prefix+"records:"))
	ctx := context.Background()
	moved := 0
	for i := range 32 {
		key := fmt.Sprintf("jti-plain-%d", i)
		err := r.Claim(ctx, key, time.Minute)
		if err != nil {
			storetest.WantUnavailable(t, err, "claim through a plain client")
			if strings.Contains(err.Error(), "MOVED") {
				moved++
			}
		}
		if _, err := rec.Create(ctx, key, []byte("v"), time.Minute); err != nil {
			storetest.WantUnavailable(t, err, "record through a plain client")
		}
	}
	if moved == 0 {
		t.Fatal("no claim was refused with MOVED; is the server a cluster of several masters?")
	}
}
