package redisstore

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store/storetest"
)

// startReplica starts a redis-server replicating primary and waits until the primary
// reports it connected.
func startReplica(t *testing.T, primary *ownRedis) *ownRedis {
	t.Helper()
	rep := startOwnRedisArgs(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
	client := NewClient([]string{primary.addr()}, false)
	defer client.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, _ := client.Info(context.Background(), "replication").Result()
		if strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online") {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not come online:\n%s", info)
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process, not for expiry
	}
}

// With WithReplicaAcks a claim counts only once the replicas have it: with the replica
// connected claims succeed; with the replica stopped they fail closed (could not be
// completed) within the acknowledgement timeout, and nothing is accepted on a claim
// that is not durable; when it resumes, claims succeed again.
func TestRedisReplicaAcks(t *testing.T) {
	primary := startOwnRedis(t)
	replica := startReplica(t, primary)
	client := NewClient([]string{primary.addr()}, false)
	defer client.Close()
	r := NewReplay(client, WithReplicaAcks(1, 200*time.Millisecond))
	ctx := context.Background()
	storetest.MustClaim(t, r, "acked-1", time.Minute)
	storetest.WantReplayed(t, r.Claim(ctx, "acked-1", time.Minute), "again")
	// The claim is on the replica.
	rc := NewClient([]string{replica.addr()}, false)
	defer rc.Close()
	if n, err := rc.Exists(ctx, r.key("acked-1")).Result(); err != nil || n != 1 {
		t.Fatalf("the acknowledged claim is not on the replica: %d %v", n, err)
	}

	if err := replica.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	err := r.Claim(ctx, "unacked", time.Minute)
	if errcode.CodeOf(err) != errcode.StoreUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("claim without the replica's acknowledgement: %v", err)
	}
	// Refused by WAIT's answer (too few acknowledgements), not by a timeout of the
	// store's own: the claim reached Redis and its answer was read. (A latency bound
	// here flaked on a loaded machine: correctness, not speed, is asserted.)
	if !strings.Contains(err.Error(), "acknowledged by 0 of the 1 replicas") {
		t.Fatalf("refused for another reason than the missing acknowledgement: %v", err)
	}
	if err := replica.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	storetest.MustClaim(t, r, "acked-2", time.Minute)
	// The value refused for want of an acknowledgement stays spent (fail closed).
	storetest.WantReplayed(t, r.Claim(ctx, "unacked", time.Minute), "the unacknowledged value again")
}

// A Cluster client cannot WAIT on the claim's connection: the option makes every claim
// fail with a configuration error rather than claim without the guarantee.
func TestRedisReplicaAcksRefusedOnCluster(t *testing.T) {
	client, prefix := newTestRedisCluster(t, testRedisClusterAddrs(t))
	r := NewReplay(client, WithPrefix(prefix), WithReplicaAcks(1, 100*time.Millisecond))
	if err := r.Claim(context.Background(), "k", time.Minute); errcode.CodeOf(err) != errcode.StoreUnavailable || !strings.Contains(err.Error(), "Cluster") {
		t.Fatalf("%v", err)
	}
}
