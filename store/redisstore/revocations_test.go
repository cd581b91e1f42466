package redisstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revoketest"
)

type revClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *revClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *revClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestRedisRevocationsContract(t *testing.T) {
	addr := testRedisAddr(t)
	revoketest.RunStore(t, func(t *testing.T) revoketest.Env {
		client, prefix := newTestRedis(t, addr)
		c := &revClock{t: time.Now()}
		return revoketest.Env{Store: NewRevocations(client, WithPrefix(prefix), WithClock(c.Now), WithTimeout(contractTimeout)), Now: c.Now, Advance: c.Advance}
	})
}

// Issue 26: a revoke.Checker started on Revocations hears a revocation another
// process stored by Redis pub/sub, with a bound of an hour and a clock that does not
// move: the notice alone makes it refuse. The loop waits for the notice's effect.
func TestRedisRevocationsCheckerHearsPubSub(t *testing.T) {
	addr := testRedisAddr(t)
	c := &revClock{t: time.Now()}
	clientA, prefix := newTestRedis(t, addr)
	clientB, _ := newTestRedis(t, addr)
	reader := NewRevocations(clientA, WithPrefix(prefix), WithClock(c.Now))
	writer := NewRevocations(clientB, WithPrefix(prefix), WithClock(c.Now))
	ch := revoke.NewChecker(reader, revoke.WithClock(c.Now), revoke.WithBound(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := ch.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sub := revoke.Subject{Dialog: "D1"}
	if err := ch.Check(ctx, sub); err != nil {
		t.Fatal(err)
	}
	now := c.Now()
	if err := writer.Put(ctx, revoke.Revocation{Kind: revoke.Dialog, ID: "D1", Reason: "r", Created: now, Expires: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // a failure deadline, not a wait for expiry
	for !errcode.Is(ch.Check(ctx, sub), errcode.DialogRevoked) {
		if time.Now().After(deadline) {
			t.Fatal("the checker did not hear the revocation")
		}
		time.Sleep(time.Millisecond)
	}
}

// Issue 26: a revocation survives the restart of every process (a new client, store
// and checker find it), and an expired one is dropped from Redis by List.
func TestRedisRevocationsSurviveRestartsAndExpire(t *testing.T) {
	addr := testRedisAddr(t)
	c := &revClock{t: time.Now()}
	client, prefix := newTestRedis(t, addr)
	ctx := context.Background()
	now := c.Now()
	s := NewRevocations(client, WithPrefix(prefix), WithClock(c.Now))
	if err := s.Put(ctx, revoke.Revocation{Kind: revoke.Workload, ID: "wimse://a.example/x", Reason: "r", Created: now, Expires: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	other, _ := newTestRedis(t, addr)
	restarted := revoke.NewChecker(NewRevocations(other, WithPrefix(prefix), WithClock(c.Now)), revoke.WithClock(c.Now))
	if err := restarted.Check(ctx, revoke.Subject{Workloads: []string{"wimse://a.example/x"}}); !errcode.Is(err, errcode.WorkloadRevoked) {
		t.Fatalf("after a restart: %v", err)
	}
	c.Advance(time.Minute)
	if l, err := s.List(ctx); err != nil || len(l) != 0 {
		t.Fatalf("List after expiry = %+v, %v", l, err)
	}
	if n, err := client.HLen(ctx, s.listKey()).Result(); err != nil || n != 0 {
		t.Fatalf("%d expired revocations left in Redis (%v)", n, err)
	}
}

// A value in the hash that this store did not write fails closed: List is
// store_unavailable, never a list without it.
func TestRedisRevocationsForeignValueFailsClosed(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	s := NewRevocations(client, WithPrefix(prefix))
	ctx := context.Background()
	if err := client.HSet(ctx, s.listKey(), "dialog D1", "not json").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx); !errcode.Is(err, errcode.StoreUnavailable) || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("List = %v", err)
	}
}
