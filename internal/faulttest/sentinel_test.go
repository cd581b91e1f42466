package faulttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
)

// sentinelMaster is the name the sentinels of TestRedisSentinelFailover know the
// primary by.
const sentinelMaster = "dialogtrust"

// A Redis Sentinel failover under load. A primary, one replica and three sentinels
// (quorum 2, down-after-milliseconds 1000) run on loopback. The store is opened as the
// services open it for store.redis.sentinel (cmd/internal/kit.OpenStore, built here from
// package redisstore as it builds it: cmd/internal is not importable from here) with
// replica_acks 1, and serves a closed-loop load of claims of fresh values. The primary is then SIGKILLed;
// the sentinels promote the replica; once the new primary accepts writes (a second
// store on the same sentinels without replica_acks claims again), the old primary's port
// gets a new, empty redis-server that is made a replica of the new primary, so that
// claims can be acknowledged by a replica again.
//
// Criteria:
//
//   - nothing acknowledged is lost: after the load, every claim accepted before, during
//     or after the failover is claimed again through the same client and refused as
//     replayed;
//   - no claim sent after the primary died is accepted until a replica of the new
//     primary is back: each is refused (store_unavailable, could not be completed),
//     first for want of a primary, then for want of the replica acknowledgement;
//   - the client follows the failover without a restart: the store without
//     replica_acks accepts claims once the replica is promoted, and the store with
//     replica_acks once the new replica is connected, each within 60 s (a bound for
//     liveness only).
//
// The figures are the claims of each phase and how long each step took. The store
// without replica_acks shows the window replica_acks closes: its claims acknowledged
// just before the kill that the promoted replica had not received are counted (a
// figure, not a criterion: whether any are lost depends on timing).
func TestRedisSentinelFailover(t *testing.T) {
	h := setupRedis(t)
	// go-redis logs each failed dial to the dead primary: count the lines instead.
	var clientLog countingLogger
	redis.SetLogger(&clientLog)
	primary := h.startRedis(t, 0, "", false)
	replica := h.startRedis(t, 0, "", false)
	makeReplica(t, replica, primary.addr())
	var sentinelAddrs []string
	for range 3 {
		sentinelAddrs = append(sentinelAddrs, h.startSentinel(t, primary.addr()).addr())
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinelAddrs[0]})
	defer sc.Close()
	waitUntil(t, 30*time.Second, "every sentinel knows the replica and the two other sentinels", func() bool {
		for _, a := range sentinelAddrs {
			c := redis.NewSentinelClient(&redis.Options{Addr: a})
			replicas, err1 := c.Replicas(context.Background(), sentinelMaster).Result()
			others, err2 := c.Sentinels(context.Background(), sentinelMaster).Result()
			_ = c.Close()
			if err1 != nil || err2 != nil || len(replicas) != 1 || len(others) != 2 {
				return false
			}
		}
		return true
	})

	open := func(prefix string, acks int) store.Replay {
		// What the services' store section (cmd/internal/kit.OpenStore) opens for
		// store.redis.sentinel with prefix, timeout 1s, replica_acks and
		// replica_ack_timeout 300ms.
		client := redisstore.NewFailoverClient(redisstore.Sentinel{MasterName: sentinelMaster, Addrs: sentinelAddrs})
		t.Cleanup(func() { _ = client.Close() })
		opts := []redisstore.Option{redisstore.WithPrefix(prefix), redisstore.WithTimeout(time.Second)}
		if acks > 0 {
			opts = append(opts, redisstore.WithReplicaAcks(acks, 300*time.Millisecond))
		}
		return redisstore.NewReplay(client, opts...)
	}
	acked := open("sentinel-acks:", 1)
	plain := open("sentinel-plain:", 0)

	acksLoad := startClaimLoad(acked, "acks", 4)
	plainLoad := startClaimLoad(plain, "plain", 1)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			acksLoad.stop()
			plainLoad.stop()
		}
	}
	defer stop()
	waitUntil(t, 30*time.Second, "claims accepted before the failover", func() bool {
		return acksLoad.acceptedCount() >= 200 && plainLoad.acceptedCount() >= 50
	})

	oldPrimary := primary.addr()
	primary.kill(t)
	killed := time.Now()
	var promoted string
	waitUntil(t, 60*time.Second, "the sentinels name a new primary", func() bool {
		addr, err := sc.GetMasterAddrByName(context.Background(), sentinelMaster).Result()
		if err == nil && len(addr) == 2 && addr[0]+":"+addr[1] != oldPrimary {
			promoted = addr[0] + ":" + addr[1]
			return true
		}
		return false
	})
	switched := time.Now()
	if promoted != replica.addr() {
		t.Fatalf("the sentinels name %s, not the replica %s", promoted, replica.addr())
	}
	waitUntil(t, 60*time.Second, "the store without replica_acks claims on the new primary", func() bool {
		return !plainLoad.firstAcceptedAfter(killed).IsZero()
	})
	plainResumed := plainLoad.firstAcceptedAfter(killed)
	// The new primary takes writes, but has no replica to acknowledge them: let the store
	// with replica_acks be refused there a while.
	waitUntil(t, 60*time.Second, "claims refused on the new primary for want of a replica", func() bool {
		return acksLoad.refusedAfter(plainResumed) >= 20
	})

	// A new, empty replica on the old primary's port.
	newReplica := h.startRedis(t, primary.port, "", false)
	replicaBack := time.Now()
	makeReplica(t, newReplica, promoted)
	waitUntil(t, 60*time.Second, "the store with replica_acks claims again", func() bool {
		return !acksLoad.firstAcceptedAfter(replicaBack).IsZero()
	})
	acksResumed := acksLoad.firstAcceptedAfter(replicaBack)
	resumedCount := acksLoad.acceptedCount()
	waitUntil(t, 30*time.Second, "claims accepted after the failover", func() bool {
		return acksLoad.acceptedCount() >= resumedCount+200
	})
	stop()

	// No claim sent after the primary died was accepted until the new replica was back.
	// (A claim still waiting for its acknowledgement when the replica is connected may
	// be acknowledged by it: only the claims answered before are judged.)
	var refusedNoPrimary, refusedNoReplica, refusedAfter, acceptedBefore, acceptedAfter, acceptedWithout int
	codes := map[errcode.Code]int{}
	for _, c := range acksLoad.all() {
		switch {
		case c.err == nil && c.start.After(killed) && c.end.Before(replicaBack):
			if acceptedWithout++; acceptedWithout <= 5 {
				t.Errorf("claim %s sent %s after the kill was accepted before a replica was back", c.key, c.start.Sub(killed))
			}
		case c.err == nil && c.start.Before(killed):
			acceptedBefore++
		case c.err == nil:
			acceptedAfter++
		case !c.start.Before(killed):
			if refusedWrong := !errcode.Is(c.err, errcode.StoreUnavailable) || errcode.KindOf(c.err) != errcode.Incomplete; refusedWrong && codes[errcode.CodeOf(c.err)] < 5 {
				t.Errorf("claim %s refused during the failover with %v (code %q), want could not complete store_unavailable", c.key, c.err, errcode.CodeOf(c.err))
			}
			codes[errcode.CodeOf(c.err)]++
			switch {
			case c.start.Before(switched):
				refusedNoPrimary++
			case c.start.Before(replicaBack):
				refusedNoReplica++
			default:
				refusedAfter++
			}
		}
	}

	// Nothing acknowledged was lost: each accepted value is a replay now.
	ctx := context.Background()
	lost := 0
	for _, c := range acksLoad.all() {
		if c.err != nil {
			continue
		}
		if err := acked.Claim(ctx, c.key, time.Hour); !errcode.Is(err, errcode.Replayed) || errcode.KindOf(err) != errcode.Failed {
			lost++
			if lost <= 5 {
				t.Errorf("claim %s acknowledged %s after the kill is not a replay after the failover: %v", c.key, c.end.Sub(killed), err)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged claims lost in the failover", lost)
	}
	plainLost, plainAccepted := 0, 0
	for _, c := range plainLoad.all() {
		if c.err != nil || !c.start.Before(killed) {
			continue
		}
		plainAccepted++
		if err := plain.Claim(ctx, c.key, time.Hour); !errcode.Is(err, errcode.Replayed) {
			plainLost++
		}
	}

	figure(t, "replica_acks 1: %d claims, %d accepted before the kill, %d accepted after the failover, %d acknowledged claims lost",
		len(acksLoad.all()), acceptedBefore, acceptedAfter, lost)
	figure(t, "replica_acks 1: refused after the kill: %d without a primary, %d on the new primary without a replica, %d after the replica was back (codes %v)",
		refusedNoPrimary, refusedNoReplica, refusedAfter, codes)
	figure(t, "the first sentinel named the new primary %s after the kill; the store without replica_acks claimed again %s after the kill",
		switched.Sub(killed).Round(time.Millisecond), plainResumed.Sub(killed).Round(time.Millisecond))
	figure(t, "the store with replica_acks claimed again %s after the new replica was started (%s after the kill)",
		acksResumed.Sub(replicaBack).Round(time.Millisecond), acksResumed.Sub(killed).Round(time.Millisecond))
	figure(t, "go-redis logged %d lines (failed dials to the dead primary, new primary)", clientLog.lines.Load())
	figure(t, "without replica_acks: %d of the %d claims accepted before the kill lost in the failover", plainLost, plainAccepted)
}

// setupRedis is setup for a test that needs redis-server and no service binary.
func setupRedis(t *testing.T) *harness {
	t.Helper()
	if os.Getenv(envEnable) != "1" {
		t.Skipf("fault tests run only with %s=1 (see .ci/fault)", envEnable)
	}
	bin := testkit.RedisServer(t)
	before := loadAvg()
	t.Cleanup(func() { figure(t, "machine load average (1 min): %s at the start, %s at the end", before, loadAvg()) })
	return &harness{redis: bin}
}

// makeReplica makes r a replica of the primary at addr and waits (at most 30 s) until
// its replication link is up.
func makeReplica(t *testing.T, r *redisProc, primary string) {
	t.Helper()
	host, port, _ := strings.Cut(primary, ":")
	// A full sync without the default 5 s wait for more replicas.
	if _, err := redisCommand(primary, "CONFIG SET repl-diskless-sync-delay 0"); err != nil {
		t.Fatalf("CONFIG SET on %s: %v", primary, err)
	}
	if _, err := redisCommand(r.addr(), "REPLICAOF "+host+" "+port); err != nil {
		t.Fatalf("REPLICAOF %s on %s: %v", primary, r.addr(), err)
	}
	waitUntil(t, 30*time.Second, "the replica on "+r.addr()+" is in sync with "+primary, func() bool {
		info, err := redisCommand(r.addr(), "INFO replication")
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
}

// startSentinel starts a sentinel (redis-server --sentinel) on a free loopback port
// that monitors the primary at addr as sentinelMaster, with quorum 2, and waits for it
// to answer PING.
func (h *harness) startSentinel(t *testing.T, primary string) *redisProc {
	t.Helper()
	host, port, _ := strings.Cut(primary, ":")
	dir := t.TempDir()
	for attempt := range 3 {
		p := testkit.FreePort(t)
		conf := filepath.Join(dir, "sentinel-"+strconv.Itoa(p)+".conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\nloglevel warning\n"+
			"sentinel monitor %s %s %s 2\n"+
			"sentinel down-after-milliseconds %[3]s 1000\n"+
			"sentinel failover-timeout %[3]s 5000\n"+
			"sentinel parallel-syncs %[3]s 1\n", p, dir, sentinelMaster, host, port)
		// The sentinel rewrites its configuration file: it must be writable.
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		pr, _ := startProc(t, "redis-sentinel", h.redis, []string{conf, "--sentinel"}, "")
		r := &redisProc{proc: pr, port: p, dir: dir}
		if r.waitPing(10 * time.Second) {
			return r
		}
		pr.kill(t)
		t.Logf("sentinel on port %d did not answer PING (attempt %d):\n%s", p, attempt+1, pr.logs.String())
	}
	t.Fatal("could not start a sentinel")
	return nil
}

// waitUntil polls cond every 50 ms until it holds, failing the test after d: a bound
// for liveness, not a measure.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// claim is one claim of a claimLoad: its value, when it was sent and answered, and
// the answer.
type claim struct {
	key        string
	start, end time.Time
	err        error
}

// claimLoad is a closed loop of claims of fresh values on a store by a few workers.
// After a refusal a worker waits 10 ms before its next claim, as a client backs off,
// so that a store that refuses at once does not spin the machine.
type claimLoad struct {
	mu     sync.Mutex
	claims []claim
	quit   atomic.Bool
	wg     sync.WaitGroup
}

// maxClaims bounds a claimLoad's claims (the loop stops there).
const maxClaims = 200_000

func startClaimLoad(s store.Replay, name string, workers int) *claimLoad {
	l := &claimLoad{}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; !l.quit.Load(); n++ {
				c := claim{key: fmt.Sprintf("%s-%d-%d", name, w, n), start: time.Now()}
				c.err = s.Claim(context.Background(), c.key, time.Hour)
				c.end = time.Now()
				l.mu.Lock()
				full := len(l.claims) >= maxClaims
				if !full {
					l.claims = append(l.claims, c)
				}
				l.mu.Unlock()
				if full {
					return
				}
				if c.err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	return l
}

func (l *claimLoad) stop() {
	l.quit.Store(true)
	l.wg.Wait()
}

func (l *claimLoad) all() []claim {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]claim(nil), l.claims...)
}

func (l *claimLoad) acceptedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.claims {
		if c.err == nil {
			n++
		}
	}
	return n
}

// refusedAfter counts the claims sent after t that were refused.
func (l *claimLoad) refusedAfter(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.claims {
		if c.err != nil && c.start.After(t) {
			n++
		}
	}
	return n
}

// firstAcceptedAfter is when the first claim sent after t was accepted (zero: none).
func (l *claimLoad) firstAcceptedAfter(t time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, c := range l.claims {
		if c.err == nil && c.start.After(t) && (first.IsZero() || c.end.Before(first)) {
			first = c.end
		}
	}
	return first
}

// countingLogger is a go-redis logger that counts its lines.
type countingLogger struct{ lines atomic.Int64 }

func (l *countingLogger) Printf(context.Context, string, ...any) { l.lines.Add(1) }
