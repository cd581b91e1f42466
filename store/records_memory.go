package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"math"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Defaults of NewMemoryRecords.
const (
	DefaultRecordsMaxEntries = 100_000
	DefaultRecordsMaxBytes   = 256 << 20
)

// recordsOption is an option of NewMemoryRecords only (see memoryOption).
type recordsOption func(*MemoryRecords)

func (o recordsOption) applyRecords(m *MemoryRecords) { o(m) }

// WithRecordsMaxEntries bounds the number of records held at once (zero or less keeps
// DefaultRecordsMaxEntries).
func WithRecordsMaxEntries(n int) MemoryRecordsOption {
	return recordsOption(func(m *MemoryRecords) {
		if n > 0 {
			m.maxEntries = n
		}
	})
}

// WithRecordsMaxBytes bounds the total size of the values held (zero or less keeps
// DefaultRecordsMaxBytes).
func WithRecordsMaxBytes(n int64) MemoryRecordsOption {
	return recordsOption(func(m *MemoryRecords) {
		if n > 0 {
			m.maxBytes = n
		}
	})
}

// MemoryRecords is an in-process Records for one process. Its records do not survive a
// restart: a handoff delegate that uses it must apply the rule of handoff-context
// section 8.4 after each start (handoff.WithRecordsLostAt).
//
// It is bounded in entries and in bytes. When full it first drops expired records and
// then refuses (Incomplete errcode.StoreUnavailable); it never drops a live record.
// Safe for concurrent use.
type MemoryRecords struct {
	now        func() time.Time
	base       time.Time
	maxEntries int
	maxBytes   int64

	mu    sync.Mutex
	m     map[[32]byte]*memRecord
	bytes int64
	heap  expiryHeap[recRef] // min-heap on at; an entry is stale when the record changed since
	gen   uint64
}

type memRecord struct {
	value []byte
	at    int64 // expiry in ns after base; math.MaxInt64 for NoExpiry
	gen   uint64
}

type recExpiry = expiring[recRef]

// recRef names a record as it was when its expiry was pushed.
type recRef struct {
	gen uint64
	key [32]byte
}

var _ Records = (*MemoryRecords)(nil)

// NewMemoryRecords returns an empty in-memory Records.
func NewMemoryRecords(opts ...MemoryRecordsOption) *MemoryRecords {
	m := &MemoryRecords{now: time.Now, maxEntries: DefaultRecordsMaxEntries, maxBytes: DefaultRecordsMaxBytes,
		m: make(map[[32]byte]*memRecord)}
	for _, o := range opts {
		o.applyRecords(m)
	}
	if m.now == nil {
		m.now = time.Now
	}
	m.base = m.now()
	return m
}

// Len returns the number of records held, expired ones included until dropped.
func (m *MemoryRecords) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Create implements Records.
func (m *MemoryRecords) Create(ctx context.Context, key string, value []byte, ttl time.Duration) ([]byte, error) {
	if err := ValidateRecord(key, value, ttl); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "record create abandoned")
	}
	k := sha256.Sum256([]byte(key))
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.elapsed()
	if r := m.live(k, now); r != nil {
		return bytes.Clone(r.value), nil
	}
	if !m.room(now, int64(len(value))) {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, nil, "record store full")
	}
	m.put(k, value, now, ttl)
	return nil, nil
}

// Get implements Records.
func (m *MemoryRecords) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ValidateRecordKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "record read abandoned")
	}
	k := sha256.Sum256([]byte(key))
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.live(k, m.elapsed()); r != nil {
		return bytes.Clone(r.value), nil
	}
	return nil, nil
}

// Swap implements Records.
func (m *MemoryRecords) Swap(ctx context.Context, key string, old, value []byte, ttl time.Duration) (bool, error) {
	if err := ValidateRecord(key, value, ttl); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, errcode.Unavailable(errcode.StoreUnavailable, err, "record swap abandoned")
	}
	k := sha256.Sum256([]byte(key))
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.elapsed()
	r := m.live(k, now)
	if r == nil || !bytes.Equal(r.value, old) {
		return false, nil
	}
	if grow := int64(len(value) - len(r.value)); grow > 0 && m.bytes+grow > m.maxBytes {
		m.evict(now)
		if m.bytes+grow > m.maxBytes {
			return false, errcode.Unavailable(errcode.StoreUnavailable, nil, "record store full")
		}
	}
	m.remove(k, r)
	m.put(k, value, now, ttl)
	return true, nil
}

// Delete implements Records.
func (m *MemoryRecords) Delete(ctx context.Context, key string, old []byte) (bool, error) {
	if err := ValidateRecordKey(key); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, errcode.Unavailable(errcode.StoreUnavailable, err, "record delete abandoned")
	}
	k := sha256.Sum256([]byte(key))
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.live(k, m.elapsed())
	if r == nil || !bytes.Equal(r.value, old) {
		return false, nil
	}
	m.remove(k, r)
	return true, nil
}

func (m *MemoryRecords) elapsed() int64 { return int64(m.now().Sub(m.base)) }

// live returns the record under k when it has not expired, dropping it when it has.
// A record stored at t with ttl d is live for t <= now < t+d, as in Redis.
func (m *MemoryRecords) live(k [32]byte, now int64) *memRecord {
	r, ok := m.m[k]
	if !ok {
		return nil
	}
	if r.at <= now {
		m.remove(k, r)
		return nil
	}
	return r
}

// room reports whether one more record of n octets fits, dropping expired records
// first when it does not.
func (m *MemoryRecords) room(now, n int64) bool {
	m.evict(now)
	return len(m.m) < m.maxEntries && m.bytes+n <= m.maxBytes
}

func (m *MemoryRecords) put(k [32]byte, value []byte, now int64, ttl time.Duration) {
	at := int64(math.MaxInt64)
	if ttl != NoExpiry {
		at = addSaturating(now, ttl)
	}
	m.gen++
	m.m[k] = &memRecord{value: bytes.Clone(value), at: at, gen: m.gen}
	m.bytes += int64(len(value))
	if at != math.MaxInt64 {
		m.heap.push(recExpiry{at: at, item: recRef{gen: m.gen, key: k}})
	}
	// A swap leaves the old expiry in the heap; rebuild before stale entries outnumber
	// the records, so that the heap stays proportional to what is held.
	if len(m.heap) > 2*len(m.m)+1024 {
		m.rebuild()
	}
}

func (m *MemoryRecords) remove(k [32]byte, r *memRecord) {
	delete(m.m, k)
	m.bytes -= int64(len(r.value))
}

// evict drops every record whose expiry is at or before now.
func (m *MemoryRecords) evict(now int64) {
	for len(m.heap) > 0 && m.heap[0].at <= now {
		e := m.heap.pop().item
		if r, ok := m.m[e.key]; ok && r.gen == e.gen {
			m.remove(e.key, r)
		}
	}
	if len(m.m) == 0 && cap(m.heap) > 1024 {
		m.heap = nil
		m.m = make(map[[32]byte]*memRecord)
	}
}

func (m *MemoryRecords) rebuild() {
	h := m.heap[:0]
	for k, r := range m.m {
		if r.at != math.MaxInt64 {
			h = append(h, recExpiry{at: r.at, item: recRef{gen: r.gen, key: k}})
		}
	}
	m.heap = h
	for i := len(h)/2 - 1; i >= 0; i-- {
		m.heap.down(i)
	}
}
