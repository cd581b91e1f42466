package keys_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/keys/ringtest"
)

func TestSharedRotatorMemoryBackend(t *testing.T) {
	ringtest.RunShared(t, func(*testing.T) keys.RingBackend { return &keys.MemoryRingBackend{} })
}

// A store that went back to an older version (a restored backup, a replayed value)
// is refused rather than adopted.
func TestSharedRotatorRefusesRollback(t *testing.T) {
	ctx := context.Background()
	b := &keys.MemoryRingBackend{}
	r, err := keys.NewSharedRotator(ctx, b, keys.RotationConfig{Retain: ringtest.Retain})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rotate(); err != nil {
		t.Fatal(err)
	}
	old := &rollback{MemoryRingBackend: b}
	r2, err := keys.NewSharedRotator(ctx, old, keys.RotationConfig{Retain: ringtest.Retain})
	if err != nil {
		t.Fatal(err)
	}
	old.back = true
	if err := r2.Step(); err == nil {
		t.Fatal("an older shared state was adopted")
	}
	if _, err := b.Store(ctx, keys.RingState{}, 0); !errors.Is(err, keys.ErrRingConflict) {
		t.Fatalf("store at a stale version: %v, want ErrRingConflict", err)
	}
}

type rollback struct {
	*keys.MemoryRingBackend
	back bool
}

func (r *rollback) Load(ctx context.Context) (keys.RingState, uint64, bool, error) {
	s, v, ok, err := r.MemoryRingBackend.Load(ctx)
	if r.back {
		v--
	}
	return s, v, ok, err
}

// A replica that reloads the shared ring after another replica activated a new key
// still signs with the replaced key until then; a token it signs in that time, living
// as long as Retain allows, must verify at every replica until it expires. Replica B
// here lags 9 minutes (it could not reach the store, and is still within the publish
// delay less the JWKS cache time that keeps it ready).
func TestSharedRotatorKeepsReplacedKeyForLaggingReplicas(t *testing.T) {
	ctx := context.Background()
	clock := testkit.NewClock(testkit.Epoch)
	cfg := keys.RotationConfig{PublishDelay: 10 * time.Minute, Retain: time.Hour, Now: clock.Now}
	b := &keys.MemoryRingBackend{}
	ra, err := keys.NewSharedRotator(ctx, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := keys.NewSharedRotator(ctx, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := ra.Ring().Active().KID()
	if _, err := ra.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := rb.Step(); err != nil { // B publishes the next key
		t.Fatal(err)
	}
	clock.Advance(cfg.PublishDelay)
	if err := ra.Step(); err != nil { // A activates it
		t.Fatal(err)
	}
	if ra.Ring().Active().KID() == old {
		t.Fatal("A did not activate the next key")
	}
	clock.Advance(9 * time.Minute)
	if rb.Ring().Active().KID() != old {
		t.Fatal("B switched keys without reloading")
	}
	// B signs now, with the replaced key, a token that lives Retain.
	expires := clock.Now().Add(cfg.Retain)
	if err := rb.Step(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(expires.Sub(clock.Now()) - time.Second)
	for name, r := range map[string]*keys.Rotator{"A": ra, "B": rb} {
		if _, err := r.Ring().KeySet().LookupKey(ctx, old); err != nil {
			t.Errorf("a second before B's token expires, %s's JWKS no longer lists the key it was signed with: %v", name, err)
		}
	}
	// And it does not stay forever: gone a publish delay after Retain.
	clock.Advance(cfg.PublishDelay)
	if err := ra.Step(); err != nil {
		t.Fatal(err)
	}
	if _, err := ra.Ring().KeySet().LookupKey(ctx, old); err == nil {
		t.Error("the replaced key is still published Retain plus the publish delay after it was replaced")
	}
}
