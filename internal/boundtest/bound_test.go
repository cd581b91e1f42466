package boundtest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
)

// wantFull checks err is the fail-closed refusal of a full store.
func wantFull(t *testing.T, err error, what string) {
	t.Helper()
	if errcode.CodeOf(err) != errcode.StoreUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("%s: got %v, want an Incomplete %s", what, err, errcode.StoreUnavailable)
	}
}

// The replay store: bounded, refuses when full of live claims, never forgets a live
// claim, and takes claims again once the clock has passed the old ones' expiry.
func TestReplayMemoryBound(t *testing.T) {
	const max = 1000
	ctx := context.Background()
	clock := testkit.NewClock(testkit.Epoch)
	m := store.NewMemory(store.WithMaxEntries(max), store.WithClock(clock.Now))
	ttl := time.Minute

	// Flood: the first max unique keys are claimed, every later one refused.
	refused := 0
	for i := range 3 * max {
		err := m.Claim(ctx, "jti-"+strconv.Itoa(i), ttl)
		switch {
		case i < max && err != nil:
			t.Fatalf("claim %d below the bound: %v", i, err)
		case i >= max:
			wantFull(t, err, "claim over the bound")
			refused++
		}
		if m.Len() > max {
			t.Fatalf("holds %d claims, bound %d", m.Len(), max)
		}
	}
	if refused != 2*max {
		t.Fatalf("refused %d, want %d", refused, 2*max)
	}
	// Never forgets a live claim: every one of them is still a replay, however long the
	// flood went on, until just before it expires.
	clock.Advance(ttl - time.Nanosecond)
	for i := range max {
		if err := m.Claim(ctx, "jti-"+strconv.Itoa(i), ttl); errcode.CodeOf(err) != errcode.Replayed {
			t.Fatalf("live claim %d forgotten: %v", i, err)
		}
	}
	wantFull(t, m.Claim(ctx, "one-more", ttl), "still full just before expiry")

	// Past the expiry the room is free again, and the bound still holds.
	clock.Advance(time.Nanosecond)
	for i := range max {
		if err := m.Claim(ctx, "next-"+strconv.Itoa(i), ttl); err != nil {
			t.Fatalf("claim %d after expiry: %v", i, err)
		}
	}
	if m.Len() != max {
		t.Fatalf("holds %d claims after the old ones expired, want %d", m.Len(), max)
	}
	wantFull(t, m.Claim(ctx, "over", ttl), "full again")
	// An expired value may be claimed anew (its proof has expired too).
	clock.Advance(ttl)
	if err := m.Claim(ctx, "jti-0", ttl); err != nil {
		t.Fatalf("reclaiming an expired value: %v", err)
	}
}

// The record store (dialog registry, handoff receiver records): bounded in entries and
// in bytes, refuses when full of live records, keeps every live record readable, and
// frees expired ones.
func TestMemoryRecordsBound(t *testing.T) {
	const maxEntries = 500
	ctx := context.Background()
	clock := testkit.NewClock(testkit.Epoch)
	m := store.NewMemoryRecords(store.WithRecordsMaxEntries(maxEntries), store.WithRecordsMaxBytes(1<<20), store.WithClock(clock.Now))
	ttl := time.Hour
	for i := range 3 * maxEntries {
		existing, err := m.Create(ctx, "rec-"+strconv.Itoa(i), []byte("value-"+strconv.Itoa(i)), ttl)
		switch {
		case i < maxEntries && (err != nil || existing != nil):
			t.Fatalf("create %d below the bound: %v %q", i, err, existing)
		case i >= maxEntries:
			wantFull(t, err, "create over the bound")
		}
		if m.Len() > maxEntries {
			t.Fatalf("holds %d records, bound %d", m.Len(), maxEntries)
		}
	}
	clock.Advance(ttl - time.Nanosecond)
	for i := range maxEntries {
		v, err := m.Get(ctx, "rec-"+strconv.Itoa(i))
		if err != nil || string(v) != "value-"+strconv.Itoa(i) {
			t.Fatalf("live record %d lost: %q %v", i, v, err)
		}
	}
	clock.Advance(time.Nanosecond)
	for i := range maxEntries {
		if _, err := m.Create(ctx, "new-"+strconv.Itoa(i), []byte("v"), ttl); err != nil {
			t.Fatalf("create %d after expiry: %v", i, err)
		}
	}
	if m.Len() != maxEntries {
		t.Fatalf("holds %d after expiry, want %d", m.Len(), maxEntries)
	}

	// The byte bound: large values fill it before the entry bound.
	b := store.NewMemoryRecords(store.WithRecordsMaxEntries(1_000_000), store.WithRecordsMaxBytes(64<<10), store.WithClock(clock.Now))
	big := make([]byte, 4<<10)
	stored := 0
	for i := range 100 {
		if _, err := b.Create(ctx, "big-"+strconv.Itoa(i), big, ttl); err != nil {
			wantFull(t, err, "create over the byte bound")
			continue
		}
		stored++
	}
	if stored != 16 {
		t.Fatalf("stored %d values of 4 KiB under a 64 KiB bound, want 16", stored)
	}
}

// The dialog registry keeps its dialogs in a Records store: when that is full of live
// dialogs, a new dialog is refused as "could not be completed", never established
// without a record, and the known dialogs keep working.
func TestDialogRegistryBound(t *testing.T) {
	ctx := context.Background()
	clock := testkit.NewClock(testkit.Epoch)
	// 100 dialogs plus the one record that lists a sender's dialogs (the per-sender
	// bound, dialog.WithMaxDialogsPerSender).
	records := store.NewMemoryRecords(store.WithRecordsMaxEntries(101), store.WithClock(clock.Now))
	reg := dialog.NewRegistry(records, dialog.WithDialogTTL(time.Hour), dialog.WithClock(clock.Now))
	a1 := identifier.MustParse("wimse://a.example/agent/a1")
	for i := range 300 {
		dc, err := dialog.New("D"+strconv.Itoa(i), a1)
		if err != nil {
			t.Fatal(err)
		}
		out, err := reg.Accept(ctx, dc, a1)
		switch {
		case i < 100 && (err != nil || out != dialog.Established):
			t.Fatalf("dialog %d: %v %v", i, out, err)
		case i >= 100:
			wantFull(t, err, "a new dialog over the bound")
		}
	}
	if records.Len() != 101 {
		t.Fatalf("records %d, want 101", records.Len())
	}
	d0, _ := dialog.New("D0", a1)
	if out, err := reg.Accept(ctx, d0, a1); err != nil || out != dialog.Continued {
		t.Fatalf("a known dialog while full: %v %v", out, err)
	}
	clock.Advance(time.Hour)
	late, _ := dialog.New("D-late", a1)
	if out, err := reg.Accept(ctx, late, a1); err != nil || out != dialog.Established {
		t.Fatalf("after the dialogs expired: %v %v", out, err)
	}
}

// The verified-WIT cache: bounded whatever the number of distinct WITs, and expired
// entries go first when it is full.
func TestWITCacheBound(t *testing.T) {
	const max = 64
	ctx := context.Background()
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(t, "a.example", keys.EdDSA, clock)
	v := d.Validator(wit.WithCache(max, time.Minute))
	for i := range 4 * max {
		w := d.Workload(t, "/agent/w"+strconv.Itoa(i), keys.EdDSA)
		if _, err := v.Validate(ctx, w.WIT); err != nil {
			t.Fatal(err)
		}
		if n := v.CacheLen(); n > max {
			t.Fatalf("cache holds %d WITs, bound %d", n, max)
		}
	}
	if v.CacheLen() < max*3/4 {
		t.Fatalf("cache holds %d: it should stay near its bound under a flood", v.CacheLen())
	}
	// Every cached entry has expired (maxAge): once the cache is full again, the
	// insertion that finds it full drops all of them, and only new WITs remain.
	clock.Advance(time.Minute)
	k := max - v.CacheLen() + 1
	for i := range k {
		w := d.Workload(t, "/agent/after"+strconv.Itoa(i), keys.EdDSA)
		if _, err := v.Validate(ctx, w.WIT); err != nil {
			t.Fatal(err)
		}
	}
	if n := v.CacheLen(); n != k {
		t.Fatalf("after expiry the cache holds %d, want only the %d new WITs", n, k)
	}
}

// The handoff delegator tracks at most MaxHops hops; a further offer is refused (it
// could not be tracked) and the hops already offered are kept: an unresolved hop may
// never be dropped (handoff-context section 5.3), so the delegator refuses instead.
func TestHandoffDelegatorBound(t *testing.T) {
	const max = 50
	key, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(testkit.Epoch)
	d, err := handoff.NewDelegator(handoff.DelegatorConfig{Self: "spiffe://a.example/agent/planner", Key: key,
		Trust: handoff.NewStaticTrust(), Now: clock.Now, MaxHops: max})
	if err != nil {
		t.Fatal(err)
	}
	var hops []string
	for i := range 3 * max {
		hop := handoff.NewHopID()
		_, err := d.Offer(context.Background(), handoff.OfferRequest{Offer: handoff.Offer{Hop: hop, Aud: "spiffe://a.example/agent/booker", Dialog: fmt.Sprintf("D%d", i)}})
		if i < max {
			if err != nil {
				t.Fatalf("offer %d: %v", i, err)
			}
			hops = append(hops, hop)
			continue
		}
		wantFull(t, err, "an offer over the bound")
	}
	// Time passing does not drop an unresolved hop: an expired offer is only
	// provisionally expired (a verified status may still arrive).
	clock.Advance(24 * time.Hour)
	for _, hop := range hops {
		if _, ok := d.State(hop); !ok {
			t.Fatalf("hop %s forgotten", hop)
		}
	}
	if n := len(d.Unresolved()); n != max {
		t.Fatalf("unresolved %d, want %d", n, max)
	}
}
