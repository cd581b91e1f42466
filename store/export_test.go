package store

import "testing"

// What the external tests (package store_test, which can use storetest without an
// import cycle) need to see of the memory stores' insides.

// EvictAll evicts every expired claim now.
func (m *Memory) EvictAll() { m.evictAll(m.elapsed()) }

// HeapCaps returns the capacity of each shard's expiry heap.
func (m *Memory) HeapCaps() []int {
	caps := make([]int, len(m.shards))
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		caps[i] = cap(sh.heap)
		sh.mu.Unlock()
	}
	return caps
}

// Max is the capacity in claims.
func (m *Memory) Max() int64 { return m.max }

// HasClock reports whether the store has a time source.
func (m *Memory) HasClock() bool { return m.now != nil }

// HeapLen is the number of entries in the records' expiry heap, stale ones included.
func (m *MemoryRecords) HeapLen() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.heap)
}

// CheckInvariants verifies that every shard's heap and map describe the same entries,
// that each heap is ordered, and that the shared count is their total.
func CheckInvariants(t *testing.T, m *Memory) {
	t.Helper()
	total := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		if len(sh.heap) != len(sh.until) {
			t.Errorf("shard %d: %d heap entries, %d map entries", i, len(sh.heap), len(sh.until))
		}
		for j, e := range sh.heap {
			if at, ok := sh.until[e.item]; !ok || at != e.at {
				t.Errorf("shard %d: heap entry %d not in map with its expiry", i, j)
			}
			if j > 0 && sh.heap[(j-1)/2].at > e.at {
				t.Errorf("shard %d: heap order broken at %d", i, j)
			}
		}
		total += len(sh.until)
		sh.mu.Unlock()
	}
	if got := m.Len(); got != total {
		t.Errorf("count = %d, entries = %d", got, total)
	}
	if int64(total) > m.max {
		t.Errorf("%d entries exceed max %d", total, m.max)
	}
}
