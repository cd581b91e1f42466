package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/store/storetest"
)

// A held connection that the server closed (a restart) is replaced at once: the first
// claim after the restart reaches the new server through the store's one retry on a
// fresh connection, not through go-redis's own retries, which would sleep their
// back-off and then go to the same dead connection. The client's back-off here is
// far longer than the store's timeout, so only the store's retry can reach the
// server in time; that the claim reached it shows in the loss it reports.
func TestRedisHeldConnectionReplacedAfterRestart(t *testing.T) {
	srv := startOwnRedis(t)
	client := redis.NewClient(&redis.Options{Addr: srv.addr(), Protocol: protocol, ContextTimeoutEnabled: true,
		MinRetryBackoff: time.Minute, MaxRetryBackoff: time.Minute})
	defer client.Close()
	var losses atomic.Int64
	r := NewReplay(client, WithTimeout(5*time.Second), WithLossHook(func(LossEvent) { losses.Add(1) }))
	if r.held == nil {
		t.Fatal("the store holds no connections for a single node")
	}
	for i := range 4 {
		storetest.MustClaim(t, r, fmt.Sprint("before-", i), time.Minute)
	}
	srv.kill()
	srv.start()
	err := r.Claim(context.Background(), "before-0", time.Minute)
	wantLost(t, err, "the first claim after the restart")
	if losses.Load() == 0 || !strings.Contains(err.Error(), "lost its data") {
		t.Fatalf("the first claim after the restart did not reach the server: %v", err)
	}
	// The connection held now is the new server's.
	if err := r.Claim(context.Background(), "after", time.Minute); err == nil || !strings.Contains(err.Error(), "lost its data") {
		t.Fatalf("a claim after the restart: %v; want refused, the data lost", err)
	}
}

// Claims whose store holds no connections run on the client as before: a Cluster
// client, and WithReplicaAcks (whose WAIT must run on the connection of the claims'
// first run).
func TestHeldConnectionsOnlyForASingleNodeWithoutAcks(t *testing.T) {
	single := NewClient([]string{"127.0.0.1:1"}, false)
	defer single.Close()
	cluster := NewClient([]string{"127.0.0.1:1"}, true)
	defer cluster.Close()
	if NewReplay(single).held == nil {
		t.Error("a single node: no held connections")
	}
	if NewReplay(single, WithReplicaAcks(1, time.Second)).held != nil {
		t.Error("WithReplicaAcks: held connections")
	}
	if NewReplay(cluster).held != nil {
		t.Error("a Cluster client: held connections")
	}
}
