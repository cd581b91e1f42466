package storetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store"
)

// RunRecords checks what every store.Records must do. newStore returns a fresh store
// and, when its clock can be moved, a function that moves it (nil for Redis, whose
// expiry the redisstore tests check instead).
func RunRecords(t *testing.T, newStore func(t *testing.T) (store.Records, func(time.Duration))) {
	t.Helper()
	ctx := context.Background()
	const ttl = time.Minute

	t.Run("CreateThenGet", func(t *testing.T) {
		s, _ := newStore(t)
		if got := MustGet(t, s, "k"); got != nil {
			t.Fatalf("Get before Create = %q, want nil", got)
		}
		MustCreate(t, s, "k", []byte("v1"), ttl)
		if got := MustGet(t, s, "k"); string(got) != "v1" {
			t.Fatalf("Get = %q, want v1", got)
		}
	})

	t.Run("CreateKeepsExisting", func(t *testing.T) {
		s, _ := newStore(t)
		MustCreate(t, s, "k", []byte("first"), ttl)
		for range 3 {
			existing, err := s.Create(ctx, "k", []byte("second"), ttl)
			if err != nil || string(existing) != "first" {
				t.Fatalf("second Create = %q, %v; want existing %q", existing, err, "first")
			}
		}
		if got := MustGet(t, s, "k"); string(got) != "first" {
			t.Fatalf("record changed to %q", got)
		}
	})

	t.Run("KeysAreIndependent", func(t *testing.T) {
		s, _ := newStore(t)
		for _, k := range []string{"a", "A", "a ", "{a}", "\x00\xff"} {
			MustCreate(t, s, k, []byte("value of "+k), ttl)
		}
		for _, k := range []string{"a", "A", "a ", "{a}", "\x00\xff"} {
			if got := MustGet(t, s, k); string(got) != "value of "+k {
				t.Errorf("Get(%q) = %q", k, got)
			}
		}
	})

	t.Run("BinaryValuesRoundTrip", func(t *testing.T) {
		s, _ := newStore(t)
		v := []byte{0, 0xff, 0xd2, 0x84, '\n', 0}
		MustCreate(t, s, "bin", v, ttl)
		if got := MustGet(t, s, "bin"); !bytes.Equal(got, v) {
			t.Fatalf("Get = %x, want %x", got, v)
		}
		big := bytes.Repeat([]byte{0xa5}, store.MaxRecordSize)
		MustCreate(t, s, "big", big, ttl)
		if got := MustGet(t, s, "big"); !bytes.Equal(got, big) {
			t.Fatal("largest value did not round trip")
		}
	})

	t.Run("SwapComparesOld", func(t *testing.T) {
		s, _ := newStore(t)
		MustCreate(t, s, "k", []byte("v1"), ttl)
		if ok, err := s.Swap(ctx, "k", []byte("other"), []byte("v2"), ttl); err != nil || ok {
			t.Fatalf("Swap with wrong old = %v, %v; want false", ok, err)
		}
		if ok, err := s.Swap(ctx, "k", []byte("v1"), []byte("v2"), store.NoExpiry); err != nil || !ok {
			t.Fatalf("Swap = %v, %v; want true", ok, err)
		}
		if got := MustGet(t, s, "k"); string(got) != "v2" {
			t.Fatalf("after Swap Get = %q", got)
		}
		if ok, err := s.Swap(ctx, "k", []byte("v1"), []byte("v3"), ttl); err != nil || ok {
			t.Fatalf("second Swap from v1 = %v, %v; want false", ok, err)
		}
		if ok, err := s.Swap(ctx, "absent", []byte("v1"), []byte("v3"), ttl); err != nil || ok {
			t.Fatalf("Swap of absent record = %v, %v; want false", ok, err)
		}
		if got := MustGet(t, s, "absent"); got != nil {
			t.Fatal("Swap created a record")
		}
	})

	t.Run("DeleteComparesOld", func(t *testing.T) {
		s, _ := newStore(t)
		MustCreate(t, s, "k", []byte("v1"), ttl)
		if ok, err := s.Delete(ctx, "k", []byte("v2")); err != nil || ok {
			t.Fatalf("Delete with wrong old = %v, %v", ok, err)
		}
		if ok, err := s.Delete(ctx, "k", []byte("v1")); err != nil || !ok {
			t.Fatalf("Delete = %v, %v", ok, err)
		}
		if got := MustGet(t, s, "k"); got != nil {
			t.Fatal("record still there after Delete")
		}
		MustCreate(t, s, "k", []byte("again"), ttl)
	})

	t.Run("ExpiryAndNoExpiry", func(t *testing.T) {
		s, advance := newStore(t)
		if advance == nil {
			t.Skip("the store keeps its own clock")
		}
		MustCreate(t, s, "short", []byte("v"), ttl)
		MustCreate(t, s, "forever", []byte("v"), store.NoExpiry)
		MustCreate(t, s, "swapped", []byte("v"), ttl)
		if ok, _ := s.Swap(ctx, "swapped", []byte("v"), []byte("w"), store.NoExpiry); !ok {
			t.Fatal("swap failed")
		}
		advance(ttl - time.Nanosecond)
		if MustGet(t, s, "short") == nil {
			t.Fatal("expired before its ttl")
		}
		advance(time.Nanosecond)
		if MustGet(t, s, "short") != nil {
			t.Fatal("still there after its ttl")
		}
		MustCreate(t, s, "short", []byte("new"), ttl)
		advance(1000 * time.Hour)
		if string(MustGet(t, s, "forever")) != "v" || string(MustGet(t, s, "swapped")) != "w" {
			t.Fatal("a NoExpiry record expired (a swap must replace the old ttl)")
		}
	})

	t.Run("ConcurrentCreateOneWinner", func(t *testing.T) {
		s, _ := newStore(t)
		const n = 40
		for round := range 3 {
			key := fmt.Sprintf("race-%d", round)
			created := make([]bool, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					existing, err := s.Create(ctx, key, fmt.Appendf(nil, "v%d", i), ttl)
					created[i], errs[i] = existing == nil && err == nil, err
				})
			}
			wg.Wait()
			wins := 0
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("create %d: %v", i, errs[i])
				}
				if created[i] {
					wins++
				}
			}
			if wins != 1 {
				t.Fatalf("round %d: %d creates won, want 1", round, wins)
			}
		}
	})

	t.Run("ConcurrentSwapOneWinner", func(t *testing.T) {
		s, _ := newStore(t)
		MustCreate(t, s, "cas", []byte("v0"), ttl)
		const n = 40
		oks := make([]bool, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				ok, err := s.Swap(ctx, "cas", []byte("v0"), fmt.Appendf(nil, "v%d", i+1), ttl)
				if err != nil {
					t.Errorf("swap %d: %v", i, err)
				}
				oks[i] = ok
			})
		}
		wg.Wait()
		wins := 0
		for _, ok := range oks {
			if ok {
				wins++
			}
		}
		if wins != 1 {
			t.Fatalf("%d swaps won, want 1", wins)
		}
	})

	t.Run("RejectsInvalidInput", func(t *testing.T) {
		s, _ := newStore(t)
		for _, tc := range []struct {
			name  string
			key   string
			value []byte
			ttl   time.Duration
		}{
			{"empty key", "", []byte("v"), ttl},
			{"empty value", "k", nil, ttl},
			{"oversized value", "k", make([]byte, store.MaxRecordSize+1), ttl},
			{"zero ttl", "k", []byte("v"), 0},
			{"negative ttl", "k", []byte("v"), -time.Second},
		} {
			_, err := s.Create(ctx, tc.key, tc.value, tc.ttl)
			WantInvalid(t, err, "Create "+tc.name)
			_, err = s.Swap(ctx, tc.key, []byte("v"), tc.value, tc.ttl)
			WantInvalid(t, err, "Swap "+tc.name)
		}
		_, err := s.Get(ctx, "")
		WantInvalid(t, err, "Get empty key")
		_, err = s.Delete(ctx, "", []byte("v"))
		WantInvalid(t, err, "Delete empty key")
		if got := MustGet(t, s, "k"); got != nil {
			t.Fatal("an invalid call stored a record")
		}
	})

	t.Run("CanceledContextFailsClosed", func(t *testing.T) {
		s, _ := newStore(t)
		MustCreate(t, s, "k", []byte("v"), ttl)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := s.Create(cctx, "k2", []byte("v"), ttl)
		WantUnavailable(t, err, "Create with canceled context")
		got, err := s.Get(cctx, "k")
		WantUnavailable(t, err, "Get with canceled context")
		if got != nil {
			t.Fatal("a failed Get returned a record")
		}
		_, err = s.Swap(cctx, "k", []byte("v"), []byte("w"), ttl)
		WantUnavailable(t, err, "Swap with canceled context")
		_, err = s.Delete(cctx, "k", []byte("v"))
		WantUnavailable(t, err, "Delete with canceled context")
		if got := MustGet(t, s, "k"); string(got) != "v" {
			t.Fatalf("record changed to %q by failed calls", got)
		}
	})
}

// MustCreate creates a record and fails the test unless it was stored.
func MustCreate(t *testing.T, s store.Records, key string, v []byte, ttl time.Duration) {
	t.Helper()
	existing, err := s.Create(context.Background(), key, v, ttl)
	if err != nil || existing != nil {
		t.Fatalf("Create(%.20q) = %q, %v; want created", key, existing, err)
	}
}

// MustGet returns the live record under key (nil when there is none) and fails the
// test on an error.
func MustGet(t *testing.T, s store.Records, key string) []byte {
	t.Helper()
	v, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%.20q): %v", key, err)
	}
	return v
}

// WantInvalid marks the test failed unless err is a failed errcode.InvalidRequest.
func WantInvalid(t *testing.T, err error, what string) {
	t.Helper()
	if !errcode.Is(err, errcode.InvalidRequest) || errcode.KindOf(err) != errcode.Failed {
		t.Errorf("%s: got %v, want failed %q", what, err, errcode.InvalidRequest)
	}
}
