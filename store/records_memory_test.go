package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/storetest"
)

func TestMemoryRecordsContract(t *testing.T) {
	storetest.RunRecords(t, func(t *testing.T) (store.Records, func(time.Duration)) {
		c := newFakeClock()
		return store.NewMemoryRecords(store.WithClock(c.Now)), c.Advance
	})
}

// The store is bounded and fails closed: when full it refuses, and never drops a live
// record (a forgotten (iss, hop) would let an offer be replayed).
func TestMemoryRecordsFullRefusesAndKeepsLive(t *testing.T) {
	c := newFakeClock()
	const max = 8
	m := store.NewMemoryRecords(store.WithClock(c.Now), store.WithRecordsMaxEntries(max))
	ctx := context.Background()
	for i := range max {
		storetest.MustCreate(t, m, fmt.Sprint("live-", i), []byte("v"), store.NoExpiry)
	}
	_, err := m.Create(ctx, "one-more", []byte("v"), time.Minute)
	storetest.WantUnavailable(t, err, "create in a full store")
	for i := range max {
		if storetest.MustGet(t, m, fmt.Sprint("live-", i)) == nil {
			t.Fatalf("live record %d dropped", i)
		}
	}
	// Expired records make room again.
	m2 := store.NewMemoryRecords(store.WithClock(c.Now), store.WithRecordsMaxEntries(max))
	for i := range max {
		storetest.MustCreate(t, m2, fmt.Sprint("short-", i), []byte("v"), time.Second)
	}
	c.Advance(time.Second)
	storetest.MustCreate(t, m2, "after-expiry", []byte("v"), time.Minute)
	if m2.Len() != 1 {
		t.Fatalf("Len = %d after expired records were dropped, want 1", m2.Len())
	}
}

func TestMemoryRecordsByteBound(t *testing.T) {
	c := newFakeClock()
	m := store.NewMemoryRecords(store.WithClock(c.Now), store.WithRecordsMaxBytes(100))
	ctx := context.Background()
	storetest.MustCreate(t, m, "a", make([]byte, 60), time.Minute)
	_, err := m.Create(ctx, "b", make([]byte, 60), time.Minute)
	storetest.WantUnavailable(t, err, "create over the byte bound")
	// A swap that grows a record past the bound is refused too, and changes nothing.
	_, err = m.Swap(ctx, "a", make([]byte, 60), make([]byte, 101), time.Minute)
	storetest.WantUnavailable(t, err, "swap over the byte bound")
	if got := storetest.MustGet(t, m, "a"); len(got) != 60 {
		t.Fatalf("record is %d octets after a refused swap", len(got))
	}
	if ok, err := m.Swap(ctx, "a", make([]byte, 60), make([]byte, 10), time.Minute); !ok || err != nil {
		t.Fatalf("shrinking swap: %v %v", ok, err)
	}
	storetest.MustCreate(t, m, "b", make([]byte, 60), time.Minute)
}

// Swaps leave stale expiry entries behind; the heap must stay proportional to the
// records held instead of growing with the number of swaps.
func TestMemoryRecordsHeapStaysBounded(t *testing.T) {
	c := newFakeClock()
	m := store.NewMemoryRecords(store.WithClock(c.Now))
	ctx := context.Background()
	storetest.MustCreate(t, m, "k", []byte("v0"), time.Hour)
	for i := range 10_000 {
		old, next := fmt.Appendf(nil, "v%d", i), fmt.Appendf(nil, "v%d", i+1)
		if ok, err := m.Swap(ctx, "k", old, next, time.Hour); !ok || err != nil {
			t.Fatalf("swap %d: %v %v", i, ok, err)
		}
	}
	n := m.HeapLen()
	if n > 2*1+1024+1 {
		t.Fatalf("heap holds %d entries for one record", n)
	}
}
