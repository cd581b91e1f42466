package keys_test

import (
	"context"
	"errors"
	"testing"

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
