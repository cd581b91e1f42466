package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// runReplayContract checks what every Replay must do. newStore returns a fresh store
// and, when the store's clock can be moved, a function that moves it; a nil advance
// skips the expiry step (Redis keeps its own clock; redis_test.go checks instead that
// an expiry is set).
func runReplayContract(t *testing.T, newStore func(t *testing.T) (s Replay, advance func(time.Duration))) {
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
		mustClaim(t, s, "jti-twice", ttl)
		for i := range 3 {
			wantReplayed(t, s.Claim(ctx, "jti-twice", ttl), fmt.Sprintf("claim %d", i+2))
		}
		// A different ttl does not make it a different claim.
		wantReplayed(t, s.Claim(ctx, "jti-twice", time.Hour), "claim with another ttl")
	})

	t.Run("KeysAreIndependent", func(t *testing.T) {
		s, _ := newStore(t)
		mustClaim(t, s, "a", ttl)
		mustClaim(t, s, "b", ttl)
		// Keys that differ only in case, or by a byte, are different values.
		mustClaim(t, s, "A", ttl)
		mustClaim(t, s, "a ", ttl)
		mustClaim(t, s, "{a}", ttl)
		wantReplayed(t, s.Claim(ctx, "a", ttl), "a again")
		wantReplayed(t, s.Claim(ctx, "b", ttl), "b again")
	})

	t.Run("LongAndBinaryKeys", func(t *testing.T) {
		s, _ := newStore(t)
		long := string(make([]byte, 64<<10))
		mustClaim(t, s, long, ttl)
		wantReplayed(t, s.Claim(ctx, long, ttl), "long key again")
		mustClaim(t, s, long+"x", ttl)
		mustClaim(t, s, "\x00\xff\n", ttl)
	})

	t.Run("ExpiryFreesKey", func(t *testing.T) {
		s, advance := newStore(t)
		if advance == nil {
			t.Skip("the store keeps its own clock")
		}
		mustClaim(t, s, "jti-expiring", ttl)
		advance(ttl - time.Nanosecond)
		wantReplayed(t, s.Claim(ctx, "jti-expiring", ttl), "just before expiry")
		advance(time.Nanosecond)
		mustClaim(t, s, "jti-expiring", ttl)
		wantReplayed(t, s.Claim(ctx, "jti-expiring", ttl), "claimed again after expiry")
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
				wantReplayed(t, err, fmt.Sprintf("round %d goroutine %d", round, i))
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
		mustClaim(t, s, "jti-zero-ttl", ttl)
		mustClaim(t, s, "jti-negative-ttl", ttl)
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
		wantUnavailable(t, err, "claim with canceled context")
	})

	t.Run("ExpiredDeadlineFailsClosed", func(t *testing.T) {
		s, _ := newStore(t)
		dctx, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
		defer cancel()
		wantUnavailable(t, s.Claim(dctx, "jti-deadline", ttl), "claim past deadline")
	})
}

func mustClaim(t *testing.T, s Replay, key string, ttl time.Duration) {
	t.Helper()
	if err := s.Claim(context.Background(), key, ttl); err != nil {
		t.Fatalf("claim %.20q: %v", key, err)
	}
}

func wantReplayed(t *testing.T, err error, what string) {
	t.Helper()
	if !errcode.Is(err, errcode.Replayed) || errcode.KindOf(err) != errcode.Failed {
		t.Fatalf("%s: got %v (code %q, kind %v), want failed %q", what, err,
			errcode.CodeOf(err), errcode.KindOf(err), errcode.Replayed)
	}
}

func wantUnavailable(t *testing.T, err error, what string) {
	t.Helper()
	if !errcode.Is(err, errcode.StoreUnavailable) || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("%s: got %v (code %q, kind %v), want incomplete %q", what, err,
			errcode.CodeOf(err), errcode.KindOf(err), errcode.StoreUnavailable)
	}
}
