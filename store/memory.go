package store

import (
	"context"
	"crypto/sha256"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// DefaultMaxEntries is the capacity of a Memory store without WithMaxEntries.
const DefaultMaxEntries = 1_000_000

// A power of two well above the core count of the machines the broker runs on, so that
// claims of unrelated keys rarely wait for each other.
const memoryShards = 64

// memKey is the first 128 bits of SHA-256(key). Truncation is safe in the direction
// that matters: a collision can only make a fresh key look replayed (a rejection),
// never let a replay through, and finding one takes about 2^64 work.
type memKey [16]byte

// MemoryOption configures NewMemory.
type MemoryOption interface{ applyMemory(*Memory) }

// MemoryRecordsOption configures NewMemoryRecords.
type MemoryRecordsOption interface{ applyRecords(*MemoryRecords) }

// ClockOption is the clock WithClock sets; it serves NewMemory and NewMemoryRecords, so
// that a test hands the same clock to its replay store and its records.
type ClockOption func() time.Time

func (now ClockOption) applyMemory(m *Memory)         { m.now = now }
func (now ClockOption) applyRecords(m *MemoryRecords) { m.now = now }

// WithClock sets the clock of NewMemory or NewMemoryRecords (default time.Now). Time is
// an input: tests move it instead of sleeping. A nil clock keeps the default.
func WithClock(now func() time.Time) ClockOption { return ClockOption(now) }

var (
	_ MemoryOption        = ClockOption(nil)
	_ MemoryRecordsOption = ClockOption(nil)
)

// memoryOption is an option of NewMemory only: capacities differ between the stores, so
// passing one to the other is a compile error instead of an option quietly ignored.
type memoryOption func(*Memory)

func (o memoryOption) applyMemory(m *Memory) { o(m) }

// WithMaxEntries bounds the number of claims held at once, live or not yet evicted.
// A value of zero or less keeps DefaultMaxEntries.
func WithMaxEntries(n int) MemoryOption {
	return memoryOption(func(m *Memory) {
		if n > 0 {
			m.max = int64(n)
		}
	})
}

// Memory is an in-process Replay for a single broker. It is safe for concurrent use.
//
// Memory is bounded: when it holds the maximum number of live claims it refuses new
// ones with an Incomplete errcode.StoreUnavailable instead of evicting a live claim,
// since forgetting one would let its value be replayed. Expired claims are evicted
// when their shard is next used, and from every shard when the store is full. A claim
// costs O(log n) in the size of its shard.
type Memory struct {
	now  func() time.Time
	base time.Time // expiries are offsets from base, so the monotonic clock is used when there is one
	max  int64
	seed maphash.Seed

	count  atomic.Int64 // entries over all shards, expired ones included until evicted
	shards [memoryShards]memShard
}

type memShard struct {
	mu    sync.Mutex
	until map[memKey]int64   // expiry, in nanoseconds after Memory.base
	heap  expiryHeap[memKey] // min-heap on at; exactly one entry per key of until
	_     [64]byte           // keeps neighbouring shards' locks off one cache line
}

type memEntry = expiring[memKey]

var _ Replay = (*Memory)(nil)

// NewMemory returns an empty in-memory Replay.
func NewMemory(opts ...MemoryOption) *Memory {
	m := &Memory{now: time.Now, max: DefaultMaxEntries, seed: maphash.MakeSeed()}
	for _, o := range opts {
		o.applyMemory(m)
	}
	if m.now == nil {
		m.now = time.Now
	}
	m.base = m.now()
	for i := range m.shards {
		m.shards[i].until = make(map[memKey]int64)
	}
	return m
}

// Claim implements Replay.
func (m *Memory) Claim(ctx context.Context, key string, ttl time.Duration) error {
	if err := ValidateClaim(key, ttl); err != nil {
		return err
	}
	// A caller that has given up gets the same answer as from Redis, and its key
	// stays free: nothing was claimed on its behalf.
	if err := ctx.Err(); err != nil {
		return errcode.Unavailable(errcode.StoreUnavailable, err, "replay claim abandoned")
	}

	sum := sha256.Sum256([]byte(key))
	k := memKey(sum[:16])
	// The shard is chosen with a secret seed: senders choose their jti and nonce, and
	// must not be able to pile all their claims onto one lock.
	sh := &m.shards[maphash.Comparable(m.seed, k)%memoryShards]
	now := m.elapsed()
	at := addSaturating(now, ttl)

	sh.mu.Lock()
	m.count.Add(-int64(sh.evict(now)))
	if _, ok := sh.until[k]; ok {
		sh.mu.Unlock()
		return Replayed()
	}
	if !m.reserve() {
		// Full. Expired claims in other shards may be holding the room; evicting them
		// needs their locks, and holding two shard locks at once could deadlock.
		sh.mu.Unlock()
		m.evictAll(now)
		sh.mu.Lock()
		// The key may have been claimed while this shard was unlocked.
		if _, ok := sh.until[k]; ok {
			sh.mu.Unlock()
			return Replayed()
		}
		if !m.reserve() {
			sh.mu.Unlock()
			return errcode.Unavailable(errcode.StoreUnavailable, nil, "replay store full")
		}
	}
	sh.until[k] = at
	sh.heap.push(memEntry{at: at, item: k})
	sh.mu.Unlock()
	return nil
}

// Len returns the number of claims held, including expired ones not yet evicted.
func (m *Memory) Len() int { return int(m.count.Load()) }

// reserve takes one unit of capacity, or reports that there is none.
func (m *Memory) reserve() bool {
	for {
		c := m.count.Load()
		if c >= m.max {
			return false
		}
		if m.count.CompareAndSwap(c, c+1) {
			return true
		}
	}
}

func (m *Memory) evictAll(now int64) {
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n := sh.evict(now)
		sh.mu.Unlock()
		m.count.Add(-int64(n))
	}
}

// elapsed is the current time as an offset from base. time.Time.Sub saturates instead
// of wrapping, so a clock far from base cannot make an expiry jump.
func (m *Memory) elapsed() int64 { return int64(m.now().Sub(m.base)) }

func addSaturating(now int64, ttl time.Duration) int64 {
	if now > 0 && int64(ttl) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(ttl)
}

// evict removes every entry whose expiry is at or before now and returns how many.
// A claim made at t with ttl d is live for t <= now < t+d, as in Redis.
// The caller holds sh.mu.
func (sh *memShard) evict(now int64) int {
	n := 0
	for len(sh.heap) > 0 && sh.heap[0].at <= now {
		delete(sh.until, sh.heap.pop().item)
		n++
	}
	if n > 0 && len(sh.heap) == 0 && cap(sh.heap) > 1024 {
		// Neither a slice nor a map shrinks by itself: after a burst has expired, hand
		// the memory back instead of holding the peak size for the life of the process.
		sh.heap = nil
		sh.until = make(map[memKey]int64)
	}
	return n
}
