package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store"
)

// RunReplay checks what every store.Replay must do. newStore returns a fresh store
// and, when the store's clock can be moved, a function that moves it; a nil advance
// skips the expiry step (Redis keeps its own clock; the redisstore tests check instead
// that an expiry is set).
func RunReplay(t *testing.T, newStore func(t *testing.T) (s store.Replay, advance func(time.Duration))) {
	t.Helper()
	ctx := context.Background()
	const ttl = time.Minute

	t.Run("FirstClaimSucceeds", func(t *testing.T) {
		s, _ := newStore(t)
		if err := s.Claim(ctx, "jti-first", ttl); err != nil {
			t.Fatalf("first claim: %v", err)
		}
	})

	t.Run("SecondClaimIsReplay", func(t *testing.T) {
		s, _ := newStore(t)
		MustClaim(t, s, "jti-twice", ttl)
		for i := range 3 {
			WantReplayed(t, s.Claim(ctx, "jti-twice", ttl), fmt.Sprintf("claim %d", i+2))
		}
		// A different ttl does not make it a different claim.
		WantReplayed(t, s.Claim(ctx, "jti-twice", time.Hour), "claim with another ttl")
	})

	t.Run("KeysAreIndependent", func(t *testing.T) {
		s, _ := newStore(t)
		MustClaim(t, s, "a", ttl)
		MustClaim(t, s, "b", ttl)
		// Keys that differ only in case, or by a byte, are different values.
		MustClaim(t, s, "A", ttl)
		MustClaim(t, s, "a ", ttl)
		MustClaim(t, s, "{a}", ttl)
		WantReplayed(t, s.Claim(ctx, "a", ttl), "a again")
		WantReplayed(t, s.Claim(ctx, "b", ttl), "b again")
	})

	t.Run("LongAndBinaryKeys", func(t *testing.T) {
		s, _ := newStore(t)
		long := string(make([]byte, 64<<10))
		MustClaim(t, s, long, ttl)
		WantReplayed(t, s.Claim(ctx, long, ttl), "long key again")
		MustClaim(t, s, long+"x", ttl)
		MustClaim(t, s, "\x00\xff\n", ttl)
	})

	t.Run("ExpiryFreesKey", func(t *testing.T) {
		s, advance := newStore(t)
		if advance == nil {
			t.Skip("the store keeps its own clock")
		}
		MustClaim(t, s, "jti-expiring", ttl)
		advance(ttl - time.Nanosecond)
		WantReplayed(t, s.Claim(ctx, "jti-expiring", ttl), "just before expiry")
		advance(time.Nanosecond)
		MustClaim(t, s, "jti-expiring", ttl)
		WantReplayed(t, s.Claim(ctx, "jti-expiring", ttl), "claimed again after expiry")
	})

	t.Run("ConcurrentClaimsOneWinner", func(t *testing.T) {
		s, _ := newStore(t)
		const n = 50
		for round := range 5 {
			key := fmt.Sprintf("jti-race-%d", round)
			errs := make([]error, n)
			var start, done sync.WaitGroup
			start.Add(1)
			for i := range n {
				done.Go(func() {
					start.Wait()
					errs[i] = s.Claim(ctx, key, ttl)
				})
			}
			start.Done()
			done.Wait()
			wins := 0
			for i, err := range errs {
				if err == nil {
					wins++
					continue
				}
				WantReplayed(t, err, fmt.Sprintf("round %d goroutine %d", round, i))
			}
			if wins != 1 {
				t.Fatalf("round %d: %d of %d concurrent claims succeeded, want exactly 1", round, wins, n)
			}
		}
	})

	t.Run("RejectsInvalidInput", func(t *testing.T) {
		s, _ := newStore(t)
		for _, tc := range []struct {
			name string
			key  string
			ttl  time.Duration
		}{
			{"empty key", "", ttl},
			{"zero ttl", "jti-zero-ttl", 0},
			{"negative ttl", "jti-negative-ttl", -time.Second},
			{"keepttl sentinel", "jti-keepttl", -1},
		} {
			err := s.Claim(ctx, tc.key, tc.ttl)
			if !errcode.Is(err, errcode.InvalidRequest) || errcode.KindOf(err) != errcode.Failed {
				t.Errorf("%s: got %v (code %q, kind %v), want failed %q", tc.name, err,
					errcode.CodeOf(err), errcode.KindOf(err), errcode.InvalidRequest)
			}
		}
		// A rejected claim claims nothing.
		MustClaim(t, s, "jti-zero-ttl", ttl)
		MustClaim(t, s, "jti-negative-ttl", ttl)
	})

	t.Run("TinyTTLAccepted", func(t *testing.T) {
		s, _ := newStore(t)
		if err := s.Claim(ctx, "jti-tiny-ttl", time.Nanosecond); err != nil {
			t.Fatalf("claim with 1ns ttl: %v", err)
		}
	})

	t.Run("CanceledContextFailsClosed", func(t *testing.T) {
		s, _ := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := s.Claim(cctx, "jti-canceled", ttl)
		WantUnavailable(t, err, "claim with canceled context")
	})

	t.Run("ExpiredDeadlineFailsClosed", func(t *testing.T) {
		s, _ := newStore(t)
		dctx, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
		defer cancel()
		WantUnavailable(t, s.Claim(dctx, "jti-deadline", ttl), "claim past deadline")
	})
}

// MustClaim claims key and fails the test unless the claim succeeds.
func MustClaim(t *testing.T, s store.Replay, key string, ttl time.Duration) {
	t.Helper()
	if err := s.Claim(context.Background(), key, ttl); err != nil {
		t.Fatalf("claim %.20q: %v", key, err)
	}
}

// WantReplayed fails the test unless err is a failed errcode.Replayed.
func WantReplayed(t *testing.T, err error, what string) {
	t.Helper()
	if !errcode.Is(err, errcode.Replayed) || errcode.KindOf(err) != errcode.Failed {
		t.Fatalf("%s: got %v (code %q, kind %v), want failed %q", what, err,
			errcode.CodeOf(err), errcode.KindOf(err), errcode.Replayed)
	}
}

// WantUnavailable fails the test unless err is an incomplete errcode.StoreUnavailable:
// the store could not answer and failed closed.
func WantUnavailable(t *testing.T, err error, what string) {
	t.Helper()
	if !errcode.Is(err, errcode.StoreUnavailable) || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("%s: got %v (code %q, kind %v), want incomplete %q", what, err,
			errcode.CodeOf(err), errcode.KindOf(err), errcode.StoreUnavailable)
	}
}
