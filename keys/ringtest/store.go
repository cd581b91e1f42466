package ringtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// StoreSettle is the settle time (keys.NewStoreRotator) RunStore's replicas wait after
// creating the first key of an empty store.
const StoreSettle = 10 * time.Millisecond

// RunStore checks what every keys.KeyStore must do under keys.NewStoreRotator, the same
// rotations as RunShared: newStore returns a fresh, empty store, and every replica of
// one subtest opens the same store.
func RunStore(t *testing.T, newStore func(t *testing.T) keys.KeyStore) {
	open := func(store keys.KeyStore) func(keys.RotationConfig) (*keys.Rotator, error) {
		return func(cfg keys.RotationConfig) (*keys.Rotator, error) {
			return keys.NewStoreRotator(context.Background(), store, cfg, StoreSettle)
		}
	}
	t.Run("ThreeReplicasRotateUnderLoad", func(t *testing.T) {
		res := SimulateReplicas(t, open(newStore(t)), []int{1, 2, 3}, PublishDelay)
		if res.Failures != 0 {
			t.Fatalf("%d of %d verifications failed; first: %s", res.Failures, res.Checks, res.First)
		}
		if res.Activations < 2 {
			t.Fatalf("only %d rotations completed, want at least 2", res.Activations)
		}
	})
	t.Run("ReloadSlowerThanPublishDelayFails", func(t *testing.T) {
		res := SimulateReplicas(t, open(newStore(t)), []int{1, 25, 1}, PublishDelay)
		if res.Failures == 0 {
			t.Fatalf("a replica reloading slower than the publish delay went unnoticed (%d checks)", res.Checks)
		}
	})
	t.Run("ConcurrentRotateAgreesBeforeSigning", func(t *testing.T) {
		testStoreConcurrentRotate(t, newStore(t))
	})
	t.Run("RetiredKeysLeaveTheStore", func(t *testing.T) {
		testStoreRetire(t, newStore(t))
	})
}

// testStoreConcurrentRotate: two replicas rotate at the same moment, so each may create
// a key of the next generation; after one step each, both publish the same one next
// key, the store holds it and the active key only, and both sign with it once due.
func testStoreConcurrentRotate(t *testing.T, store keys.KeyStore) {
	ctx := context.Background()
	clock := testkit.NewClock(testkit.Epoch)
	a, b := storeReplica(t, store, clock), storeReplica(t, store, clock)
	if a.Ring().Active().KID() != b.Ring().Active().KID() {
		t.Fatalf("replicas start with %s and %s", a.Ring().Active().KID(), b.Ring().Active().KID())
	}
	var wg sync.WaitGroup
	for _, r := range []*keys.Rotator{a, b} {
		wg.Go(func() {
			if _, err := r.Rotate(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, r := range []*keys.Rotator{a, b} {
		if err := r.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Step(); err != nil { // b may have dropped a's key after a's step
		t.Fatal(err)
	}
	na, nb := nextKID(a), nextKID(b)
	if na == "" || na != nb {
		t.Fatalf("replicas publish next keys %q and %q", na, nb)
	}
	stored, err := store.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 {
		t.Fatalf("the store holds %d keys, want the active and the one next", len(stored))
	}
	clock.Advance(PublishDelay)
	for _, r := range []*keys.Rotator{a, b} {
		if err := r.Step(); err != nil {
			t.Fatal(err)
		}
		if got := r.Ring().Active().KID(); got != na {
			t.Fatalf("a replica signs with %s, want %s", got, na)
		}
	}
}

// storeReplica is one replica's rotator on store, on clock.
func storeReplica(t *testing.T, store keys.KeyStore, clock *testkit.Clock) *keys.Rotator {
	t.Helper()
	cfg := keys.RotationConfig{PublishDelay: PublishDelay, Retain: Retain, Now: clock.Now}
	r, err := keys.NewStoreRotator(context.Background(), store, cfg, StoreSettle)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testStoreRetire: a replaced key is published for Retain plus PublishDelay after its
// successor started signing, then destroyed in the store.
func testStoreRetire(t *testing.T, store keys.KeyStore) {
	clock := testkit.NewClock(testkit.Epoch)
	r := storeReplica(t, store, clock)
	old := r.Ring().Active().KID()
	if _, err := r.Rotate(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(PublishDelay)
	if err := r.Step(); err != nil {
		t.Fatal(err)
	}
	clock.Advance(Retain + PublishDelay - time.Second)
	if err := r.Step(); err != nil {
		t.Fatal(err)
	}
	if !published(r, old) || storeCount(t, store) != 2 {
		t.Fatalf("the replaced key left before Retain plus PublishDelay (published %v, %d stored)", published(r, old), storeCount(t, store))
	}
	clock.Advance(time.Second)
	if err := r.Step(); err != nil {
		t.Fatal(err)
	}
	if published(r, old) || storeCount(t, store) != 1 {
		t.Fatalf("the replaced key stayed after its retirement (published %v, %d stored)", published(r, old), storeCount(t, store))
	}
}

func nextKID(r *keys.Rotator) string {
	for _, k := range r.State().Keys {
		if k.State == keys.KeyNext {
			return k.Key.KID()
		}
	}
	return ""
}

func published(r *keys.Rotator, kid string) bool {
	for _, k := range r.Ring().Public() {
		if k.KID() == kid {
			return true
		}
	}
	return false
}

func storeCount(t *testing.T, store keys.KeyStore) int {
	t.Helper()
	stored, err := store.Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(stored)
}
