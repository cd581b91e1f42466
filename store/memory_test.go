package store_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/storetest"
)

// newFakeClock is a time source that moves only when told to.
func newFakeClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC))
}

// memOptions: a memory store on clock c.
func memOptions(c *testkit.Clock) []store.MemoryOption {
	return []store.MemoryOption{store.WithClock(c.Now)}
}

// withMax: a memory store on clock c that holds at most n entries.
func withMax(c *testkit.Clock, n int) []store.MemoryOption {
	return append(memOptions(c), store.WithMaxEntries(n))
}

func TestMemoryContract(t *testing.T) {
	storetest.RunReplay(t, func(t *testing.T) (store.Replay, func(time.Duration)) {
		c := newFakeClock()
		m := store.NewMemory(memOptions(c)...)
		t.Cleanup(func() { store.CheckInvariants(t, m) })
		return m, c.Advance
	})
}

func TestMemoryFullRefusesAndKeepsLiveClaims(t *testing.T) {
	c := newFakeClock()
	const max = 8
	m := store.NewMemory(withMax(c, max)...)
	for i := range max {
		storetest.MustClaim(t, m, fmt.Sprintf("live-%d", i), time.Minute)
	}
	err := m.Claim(context.Background(), "one-too-many", time.Minute)
	storetest.WantUnavailable(t, err, "claim into a full store")
	if !strings.Contains(err.Error(), "replay store full") {
		t.Errorf("error %q does not say the store is full", err)
	}
	// Refusing must not have made room by forgetting anything.
	for i := range max {
		storetest.WantReplayed(t, m.Claim(context.Background(), fmt.Sprintf("live-%d", i), time.Minute), "live claim in a full store")
	}
	// The refused key was not claimed, so it is refused again, not reported as a replay.
	storetest.WantUnavailable(t, m.Claim(context.Background(), "one-too-many", time.Minute), "refused key again")
	if got := m.Len(); got != max {
		t.Errorf("Len = %d, want %d", got, max)
	}
	store.CheckInvariants(t, m)
}

func TestMemoryFloodOfLiveKeysStaysBounded(t *testing.T) {
	c := newFakeClock()
	const max, workers, perWorker = 100, 20, 500
	m := store.NewMemory(withMax(c, max)...)
	var ok, full atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				err := m.Claim(context.Background(), fmt.Sprintf("flood-%d-%d", w, i), time.Hour)
				switch {
				case err == nil:
					ok.Add(1)
				case errcode.Is(err, errcode.StoreUnavailable) && errcode.KindOf(err) == errcode.Incomplete:
					full.Add(1)
				default:
					t.Errorf("flood claim: unexpected %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if ok.Load() != max || full.Load() != workers*perWorker-max {
		t.Fatalf("accepted %d, refused %d; want %d accepted and the rest refused", ok.Load(), full.Load(), max)
	}
	if got := m.Len(); got != max {
		t.Fatalf("Len = %d after flood, want %d", got, max)
	}
	store.CheckInvariants(t, m)
}

func TestMemoryExpiredEntriesFreeCapacity(t *testing.T) {
	c := newFakeClock()
	const max = 64
	m := store.NewMemory(withMax(c, max)...)
	// Ten times the capacity over time: only possible if expired claims are evicted,
	// including those in shards that the new keys do not touch.
	for round := range 10 {
		for i := range max {
			storetest.MustClaim(t, m, fmt.Sprintf("r%d-k%d", round, i), time.Second)
		}
		storetest.WantUnavailable(t, m.Claim(context.Background(), fmt.Sprintf("r%d-extra", round), time.Second), "store full within a round")
		if got := m.Len(); got > max {
			t.Fatalf("round %d: Len = %d > max %d", round, got, max)
		}
		c.Advance(time.Second)
	}
	store.CheckInvariants(t, m)
	// Mixed lifetimes: a long-lived claim survives pressure from short-lived ones.
	m = store.NewMemory(withMax(c, 4)...)
	storetest.MustClaim(t, m, "long", time.Hour)
	for i := range 100 {
		storetest.MustClaim(t, m, fmt.Sprintf("short-%d", i), time.Millisecond)
		c.Advance(time.Millisecond)
	}
	storetest.WantReplayed(t, m.Claim(context.Background(), "long", time.Hour), "long-lived claim after pressure")
	store.CheckInvariants(t, m)
}

func TestMemoryLazyEvictionFreesMemory(t *testing.T) {
	c := newFakeClock()
	m := store.NewMemory(memOptions(c)...)
	for i := range 50_000 {
		storetest.MustClaim(t, m, fmt.Sprintf("burst-%d", i), time.Second)
	}
	c.Advance(time.Second)
	m.EvictAll()
	if got := m.Len(); got != 0 {
		t.Fatalf("Len = %d after every claim expired, want 0", got)
	}
	for i, c := range m.HeapCaps() {
		if c > 1024 {
			t.Errorf("shard %d keeps a heap of capacity %d after emptying", i, c)
		}
	}
	store.CheckInvariants(t, m)
}

// TestMemoryBytesPerEntry checks that an entry costs a fixed amount, whatever the
// length of the key: the store keeps a digest, not the sender's value.
func TestMemoryBytesPerEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates tens of megabytes")
	}
	c := newFakeClock()
	const n = 50_000
	m := store.NewMemory(withMax(c, n)...)
	pad := strings.Repeat("x", 1024)
	before := heapInUse()
	for i := range n {
		storetest.MustClaim(t, m, fmt.Sprintf("%d-%s", i, pad), time.Hour)
	}
	after := heapInUse()
	perEntry := (int64(after) - int64(before)) / n
	t.Logf("about %d bytes per entry", perEntry)
	// Keeping the 1 KiB keys would cost more than 1024 bytes per entry.
	if perEntry > 256 {
		t.Fatalf("about %d bytes per entry for 1 KiB keys; keys are being retained", perEntry)
	}
	runtime.KeepAlive(m)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func TestMemoryHugeTTLDoesNotWrap(t *testing.T) {
	c := newFakeClock()
	m := store.NewMemory(memOptions(c)...)
	c.Advance(time.Hour) // so that now + ttl would overflow
	storetest.MustClaim(t, m, "forever-ish", time.Duration(math.MaxInt64))
	c.Advance(100 * 365 * 24 * time.Hour)
	storetest.WantReplayed(t, m.Claim(context.Background(), "forever-ish", time.Minute), "claim with maximal ttl")
	store.CheckInvariants(t, m)
}

func TestMemoryClockBeforeStart(t *testing.T) {
	c := newFakeClock()
	m := store.NewMemory(memOptions(c)...)
	c.Advance(-time.Hour) // a wall clock stepped back
	storetest.MustClaim(t, m, "early", time.Minute)
	storetest.WantReplayed(t, m.Claim(context.Background(), "early", time.Minute), "claim before start")
	c.Advance(time.Minute)
	storetest.MustClaim(t, m, "early", time.Minute)
}

func TestMemoryOptionDefaults(t *testing.T) {
	m := store.NewMemory(store.WithClock(nil), store.WithMaxEntries(0), store.WithMaxEntries(-5))
	if m.Max() != store.DefaultMaxEntries {
		t.Errorf("max = %d, want default %d", m.Max(), store.DefaultMaxEntries)
	}
	if !m.HasClock() {
		t.Fatal("nil clock was kept")
	}
	storetest.MustClaim(t, m, "k", time.Minute)
}

// TestMemoryConcurrentMixedLoad is mostly for the race detector: overlapping keys,
// a moving clock and a store that keeps filling up.
func TestMemoryConcurrentMixedLoad(t *testing.T) {
	c := newFakeClock()
	m := store.NewMemory(withMax(c, 256)...)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 2000 {
				if i%100 == 0 {
					c.Advance(time.Millisecond)
				}
				err := m.Claim(context.Background(), fmt.Sprintf("k%d", (w*7919+i)%600), time.Duration(1+i%5)*time.Millisecond)
				if err != nil && !errcode.Is(err, errcode.Replayed) && !errcode.Is(err, errcode.StoreUnavailable) {
					t.Errorf("unexpected %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if m.Len() > 256 {
		t.Fatalf("Len = %d > 256", m.Len())
	}
	store.CheckInvariants(t, m)
}

func BenchmarkMemoryClaim(b *testing.B) {
	// A clock that moves 1µs per claim and a 100ms ttl keep about 100k claims live,
	// so the benchmark includes eviction as in steady state.
	var tick atomic.Int64
	start := time.Now()
	m := store.NewMemory(store.WithClock(func() time.Time { return start.Add(time.Duration(tick.Add(1)) * time.Microsecond) }))
	var id atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := fmt.Sprintf("bench-jti-%d", id.Add(1))
			if err := m.Claim(context.Background(), key, 100*time.Millisecond); err != nil {
				b.Fatal(err)
			}
		}
	})
}
