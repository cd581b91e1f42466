package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/store/storetest"
)

// ownRedis is a redis-server of the test's own, without persistence, so that it can be
// killed and restarted (the shared test server cannot).
type ownRedis struct {
	t     *testing.T
	port  int
	dir   string
	cmd   *exec.Cmd
	extra []string
}

func startOwnRedis(t *testing.T) *ownRedis { return startOwnRedisArgs(t) }

// startOwnRedisArgs is startOwnRedis with extra redis-server arguments.
func startOwnRedisArgs(t *testing.T, extra ...string) *ownRedis {
	t.Helper()
	testkit.RedisServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &ownRedis{t: t, port: port, dir: t.TempDir(), extra: extra}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *ownRedis) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

func (r *ownRedis) start() {
	r.t.Helper()
	args := append([]string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--dir", r.dir, "--loglevel", "warning"}, r.extra...)
	r.cmd = exec.Command("redis-server", args...)
	r.cmd.Stdout, r.cmd.Stderr = nil, nil
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	client := NewClient([]string{r.addr()}, false)
	defer client.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s did not answer: %v", r.addr(), err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen, not for expiry
	}
}

// kill is SIGKILL: nothing is saved (there is no persistence anyway).
func (r *ownRedis) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

// newTestClock is the settable clock of the loss tests.
func newTestClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
}

func wantLost(t *testing.T, err error, what string) {
	t.Helper()
	if errcode.CodeOf(err) != errcode.StoreUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("%s: %v; want store_unavailable (could not be completed): the store lost its data", what, err)
	}
}

// Issue 7, "no replay is ever accepted": a Redis restart without persistence empties the
// store. A broker that was running across it sees the loss at its next claim in a tag,
// refuses claims there (and so does every other broker, a new one included) until every
// claim made before the loss has expired, and then works again.
func TestRedisRestartWithoutPersistenceIsSeen(t *testing.T) {
	srv := startOwnRedis(t)
	clock := newTestClock()
	client := NewClient([]string{srv.addr()}, false)
	defer client.Close()
	var losses []LossEvent
	var lossMu sync.Mutex
	a := NewReplay(client, WithLossQuarantine(2*time.Minute), WithClock(clock.Now), WithLossHook(func(e LossEvent) {
		lossMu.Lock()
		defer lossMu.Unlock()
		losses = append(losses, e)
	}))
	ctx := context.Background()
	jtis := make([]string, 40)
	for i := range jtis {
		jtis[i] = fmt.Sprintf("jti-%d", i)
		storetest.MustClaim(t, a, jtis[i], time.Minute)
	}
	storetest.WantReplayed(t, a.Claim(ctx, jtis[0], time.Minute), "before the restart")

	srv.kill()
	srv.start()

	// Every replay of a proof accepted before the restart is refused.
	for _, j := range jtis {
		wantLost(t, a.Claim(ctx, j, time.Minute), "replay after the restart of "+j)
	}
	lossMu.Lock()
	seen := map[int]bool{}
	for _, e := range losses {
		if seen[e.Tag] {
			t.Errorf("tag %d reported twice", e.Tag)
		}
		seen[e.Tag] = true
		if !e.Until.Equal(clock.Now().Add(2 * time.Minute).Truncate(time.Millisecond)) {
			t.Errorf("quarantine until %v, want %v", e.Until, clock.Now().Add(2*time.Minute))
		}
	}
	if len(losses) == 0 {
		t.Error("the loss hook was not called")
	}
	lossMu.Unlock()
	// A broker started after the restart honours the quarantine the first one recorded
	// in the tags it saw.
	b := NewReplay(NewClient([]string{srv.addr()}, false), WithLossQuarantine(2*time.Minute), WithClock(clock.Now))
	for _, j := range jtis {
		wantLost(t, b.Claim(ctx, j, time.Minute), "replay at a new broker of "+j)
	}
	// Once every claim made before the loss has expired, claims work again, with
	// replay protection.
	clock.Advance(2*time.Minute + time.Second)
	for _, j := range jtis {
		storetest.MustClaim(t, b, j, time.Minute)
		storetest.WantReplayed(t, a.Claim(ctx, j, time.Minute), "after the quarantine, "+j+" again")
	}
}

// The quarantine covers the longest claim this broker made, even when configured
// shorter.
func TestRedisQuarantineCoversLongestClaim(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	clock := newTestClock()
	r := NewReplay(client, WithPrefix(prefix), WithLossQuarantine(time.Second), WithClock(clock.Now))
	ctx := context.Background()
	storetest.MustClaim(t, r, "long", 10*time.Minute)
	tag, k := r.keyTag("long")
	// The tag's data is lost: its epoch and the claim.
	if err := client.Del(ctx, r.epochKey(tag), k).Err(); err != nil {
		t.Fatal(err)
	}
	wantLost(t, r.Claim(ctx, "long", 10*time.Minute), "replay after the loss")
	clock.Advance(5 * time.Minute)
	wantLost(t, r.Claim(ctx, "long", 10*time.Minute), "5 minutes later (the claim lived 10)")
	clock.Advance(5*time.Minute + 2*time.Second)
	storetest.MustClaim(t, r, "long", 10*time.Minute)
}

// A broker that knew nothing may start a tag again after a loss (it cannot tell an
// emptied Redis from a new one); a broker that was running sees the difference at its
// next claim there and quarantines the tag.
func TestRedisLossSeenLateThroughAFreshEpoch(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	clock := newTestClock()
	a := NewReplay(client, WithPrefix(prefix), WithLossQuarantine(time.Minute), WithClock(clock.Now))
	ctx := context.Background()
	storetest.MustClaim(t, a, "k1", time.Minute)
	tag, k := a.keyTag("k1")
	if err := client.Del(ctx, a.epochKey(tag), k).Err(); err != nil {
		t.Fatal(err)
	}
	fresh := NewReplay(client, WithPrefix(prefix), WithLossQuarantine(time.Minute), WithClock(clock.Now))
	storetest.MustClaim(t, fresh, "k1", time.Minute) // accepted: nothing told the new broker
	same := ""
	for i := 0; same == ""; i++ {
		if tg, _ := a.keyTag(fmt.Sprintf("k-%d", i)); tg == tag {
			same = fmt.Sprintf("k-%d", i)
		}
	}
	wantLost(t, a.Claim(ctx, same, time.Minute), "the running broker's next claim in the tag")
	wantLost(t, fresh.Claim(ctx, "k1", time.Minute), "the new broker, once the tag is quarantined")
	other := ""
	for i := 0; other == ""; i++ {
		if tg, _ := a.keyTag(fmt.Sprintf("o-%d", i)); tg != tag {
			other = fmt.Sprintf("o-%d", i)
		}
	}
	storetest.MustClaim(t, a, other, time.Minute) // other tags lost nothing
}

// failFirstPipeline fails the first pipeline the client sends (the store's read of
// every epoch), as a Cluster shard that is down at start would.
type failFirstPipeline struct{ failed atomic.Bool }

func (h *failFirstPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failFirstPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *failFirstPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.failed.CompareAndSwap(false, true) {
			err := errors.New("shard down")
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// A failed read of the epochs does not fail claims (the claim script adopts the epoch of
// its tag); the read is tried again later, and then every tag is known.
func TestRedisEpochReadFailureDoesNotFailClaims(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	hook := &failFirstPipeline{}
	client.AddHook(hook)
	clock := newTestClock()
	r := NewReplay(client, WithPrefix(prefix), WithClock(clock.Now))
	storetest.MustClaim(t, r, "first", time.Minute)
	if !hook.failed.Load() || r.learned.Load() {
		t.Fatalf("the first read of the epochs did not fail as arranged (failed %v, learned %v)", hook.failed.Load(), r.learned.Load())
	}
	tag, _ := r.keyTag("first")
	if r.epochs[tag].Load() == nil {
		t.Fatal("the claim did not teach its tag's epoch")
	}
	storetest.WantReplayed(t, r.Claim(context.Background(), "first", time.Minute), "again")
	storetest.MustClaim(t, r, "within-the-second", time.Minute)
	if r.learned.Load() {
		t.Fatal("the epochs were read again within a second")
	}
	clock.Advance(time.Second) // the once-a-second limit, passed
	storetest.MustClaim(t, r, "second", time.Minute)
	if !r.learned.Load() {
		t.Fatal("the epochs were not read again")
	}
	for tag := range LossTags {
		if r.epochs[tag].Load() == nil {
			t.Fatalf("tag %d unknown after the read", tag)
		}
	}
}
