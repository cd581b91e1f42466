package keys

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// KeyStore keeps a signer's keys where they cannot be read out (a PKCS#11 token:
// keys/pkcs11), shared by every replica that opens the same store. It has no
// compare-and-swap: each key carries the facts it was created with (a generation and a
// creation time) and never changes, and NewStoreRotator derives the rotation state from
// them (storeSchedule), so that replicas that list the same keys agree.
type KeyStore interface {
	// Keys lists the stored keys of this signer.
	Keys(ctx context.Context) ([]StoredKey, error)
	// Create makes a key of alg in the store, recording generation and created.
	Create(ctx context.Context, alg string, generation uint64, created time.Time) (StoredKey, error)
	// Destroy removes a key from the store; a key already gone is no error.
	Destroy(ctx context.Context, k StoredKey) error
}

// StoredKey is one key of a KeyStore and the facts it was created with.
type StoredKey struct {
	Key        *PrivateKey
	Generation uint64
	Created    time.Time
	// Handle is the store's own reference, for Destroy.
	Handle any
}

// DefaultStoreSettle is how long NewStoreRotator waits after creating the first key of
// an empty store before it reads the store again: replicas that started at the same
// moment may each have created one, and all must sign with the same.
const DefaultStoreSettle = 2 * time.Second

// NewStoreRotator returns a Rotator over the keys of store, shared with every replica
// that opens the same store (oauth.md 1.12, workload-creds-02 section 3). A rotation
// creates the key of the next generation in the store; every replica publishes it when
// its Step next lists the store, and it signs only PublishDelay after its creation, so
// PublishDelay must exceed the step interval plus the verifiers' JWKS cache time plus
// the clock skew between replicas (as with NewSharedRotator). Two replicas that create
// the same generation at once keep the earlier key (then the lower kid) and destroy the
// other before it could sign. A replaced key stays published for Retain plus
// PublishDelay and is then destroyed in the store.
//
// The first replica to start on an empty store creates the first key, which signs at
// once; it waits settle (DefaultStoreSettle when 0) and lists the store again, so that
// replicas started at the same moment agree on one first key.
func NewStoreRotator(ctx context.Context, store KeyStore, cfg RotationConfig, settle time.Duration) (*Rotator, error) {
	if store == nil {
		return nil, fmt.Errorf("keys.store: no key store")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Retain += cfg.PublishDelay
	cfg.OnChange = nil
	if settle <= 0 {
		settle = DefaultStoreSettle
	}
	stored, err := store.Keys(ctx)
	if err != nil {
		return nil, fmt.Errorf("keys.store: listing the keys: %w", err)
	}
	if len(stored) == 0 {
		if _, err := store.Create(ctx, cfg.Alg, 1, cfg.Now()); err != nil {
			return nil, fmt.Errorf("keys.store: creating the first key: %w", err)
		}
		t := time.NewTimer(settle)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	r := &Rotator{cfg: cfg, store: &storeRing{store: store}}
	if err := r.syncStoreLocked(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// storeRing is a Rotator's link to its KeyStore; guarded by the Rotator's mu.
type storeRing struct {
	store    KeyStore
	lastSync time.Time // of the last successful listing (cfg.Now)
}

// syncStoreLocked lists the store, derives the state, destroys what it drops and
// rebuilds the ring (keeping the Ring its servers hold).
func (r *Rotator) syncStoreLocked(ctx context.Context) error {
	stored, err := r.store.store.Keys(ctx)
	if err != nil {
		return fmt.Errorf("rotation: listing the key store: %w", err)
	}
	now := r.cfg.Now()
	state, drop, err := storeSchedule(stored, r.cfg, now)
	if err != nil {
		return err
	}
	fresh, err := NewRotator(state, r.cfg)
	if err != nil {
		return fmt.Errorf("rotation: key store: %w", err)
	}
	r.records = fresh.records
	if r.ring == nil {
		r.ring = fresh.ring
	} else {
		r.ring.replaceWith(fresh.ring)
	}
	r.store.lastSync = now
	var errs []error
	for _, k := range drop {
		if err := r.store.store.Destroy(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("rotation: destroying key %s: %w", k.Key.KID(), err))
		}
	}
	return errors.Join(errs...)
}

// storeStepLocked is Step for a store Rotator: list, rotate when the period is up, and
// list again after a creation, so the new key is published at once.
func (r *Rotator) storeStepLocked() error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultSharedTimeout)
	defer cancel()
	if err := r.syncStoreLocked(ctx); err != nil {
		return err
	}
	if r.cfg.Period <= 0 {
		return nil
	}
	now := r.cfg.Now()
	for _, rec := range r.records {
		if rec.State == KeyActive && !now.Before(rec.ActivatedAt.Add(r.cfg.Period)) {
			_, err := r.storeRotateLocked(ctx)
			return err
		}
	}
	return nil
}

// storeRotateLocked creates the next generation's key unless one is under way.
func (r *Rotator) storeRotateLocked(ctx context.Context) (string, error) {
	var top uint64
	for _, rec := range r.records {
		if rec.State == KeyNext {
			return rec.Key.KID(), nil
		}
	}
	stored, err := r.store.store.Keys(ctx)
	if err != nil {
		return "", fmt.Errorf("rotation: listing the key store: %w", err)
	}
	for _, k := range stored {
		top = max(top, k.Generation)
	}
	if _, err := r.store.store.Create(ctx, r.cfg.Alg, top+1, r.cfg.Now()); err != nil {
		return "", fmt.Errorf("rotation: creating a key in the key store: %w", err)
	}
	if err := r.syncStoreLocked(ctx); err != nil {
		return "", err
	}
	for _, rec := range r.records {
		if rec.State == KeyNext {
			return rec.Key.KID(), nil
		}
	}
	return "", fmt.Errorf("rotation: the key created in the key store is not the next key")
}

// storeSchedule derives the rotation state from the stored keys at now, and the keys
// to destroy: per generation the earliest created key (then the lowest kid) counts and
// the others are dropped; the lowest remaining generation signs from its creation, each
// later one from PublishDelay after its creation; the newest whose time has come is
// active, the first one after it next (later ones are dropped: only one rotation runs
// at a time), and the ones before it retire Retain after their successor started
// signing (dropped once that has passed).
func storeSchedule(stored []StoredKey, cfg RotationConfig, now time.Time) (RingState, []StoredKey, error) {
	if len(stored) == 0 {
		return RingState{}, nil, fmt.Errorf("rotation: the key store holds no key")
	}
	sorted := slices.Clone(stored)
	slices.SortFunc(sorted, func(a, b StoredKey) int {
		return cmp.Or(cmp.Compare(a.Generation, b.Generation), a.Created.Compare(b.Created), cmp.Compare(a.Key.KID(), b.Key.KID()))
	})
	var gens, drop []StoredKey
	for i, k := range sorted {
		if i > 0 && k.Generation == sorted[i-1].Generation {
			drop = append(drop, k)
			continue
		}
		gens = append(gens, k)
	}
	activates := make([]time.Time, len(gens))
	active := 0
	for i, k := range gens {
		activates[i] = k.Created.Add(cfg.PublishDelay)
		if i == 0 {
			activates[i] = k.Created
		}
		if i > 0 && !now.Before(activates[i]) {
			active = i
		}
	}
	var state RingState
	for i, k := range gens {
		switch {
		case i < active:
			retire := activates[i+1].Add(cfg.Retain)
			if !now.Before(retire) {
				drop = append(drop, k)
				continue
			}
			state.Keys = append(state.Keys, KeyRecord{Key: k.Key, State: KeyRetiring, RetireAt: retire})
		case i == active:
			state.Keys = append(state.Keys, KeyRecord{Key: k.Key, State: KeyActive, ActivatedAt: activates[i]})
		case i == active+1:
			state.Keys = append(state.Keys, KeyRecord{Key: k.Key, State: KeyNext, ActivateAt: activates[i]})
		default:
			drop = append(drop, k)
		}
	}
	return state, drop, nil
}

// MemoryKeyStore is a KeyStore in memory, for replicas in one process (tests): the
// keys are generated in the process, unlike a token's.
type MemoryKeyStore struct {
	mu   sync.Mutex
	keys []StoredKey
}

// Keys implements KeyStore.
func (m *MemoryKeyStore) Keys(context.Context) ([]StoredKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.keys), nil
}

// Create implements KeyStore.
func (m *MemoryKeyStore) Create(_ context.Context, alg string, generation uint64, created time.Time) (StoredKey, error) {
	k, err := Generate(alg)
	if err != nil {
		return StoredKey{}, err
	}
	sk := StoredKey{Key: k, Generation: generation, Created: created, Handle: k.KID()}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = append(m.keys, sk)
	return sk, nil
}

// Destroy implements KeyStore.
func (m *MemoryKeyStore) Destroy(_ context.Context, k StoredKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = slices.DeleteFunc(m.keys, func(s StoredKey) bool { return s.Handle == k.Handle })
	return nil
}
