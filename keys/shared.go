package keys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// ErrRingConflict is returned by RingBackend.Store when the stored state is no longer
// the version the caller read: another replica changed it first.
var ErrRingConflict = errors.New("keys: the shared key ring changed concurrently")

// RingBackend keeps one RingState that several replicas of a service share, versioned
// so that concurrent changes never overwrite each other: a replica reads a state and its
// version, changes it, and stores it only if the version is still the one it read.
type RingBackend interface {
	// Load returns the stored state and its version; found is false (and version 0)
	// when nothing is stored yet.
	Load(ctx context.Context) (state RingState, version uint64, found bool, err error)
	// Store writes state if the stored version is still version (0: nothing stored)
	// and returns the new version, or ErrRingConflict (possibly wrapped) when another
	// write came first.
	Store(ctx context.Context, state RingState, version uint64) (uint64, error)
}

// DefaultSharedTimeout bounds each Load or Store a shared Rotator makes.
const DefaultSharedTimeout = 2 * time.Second

// sharedAttempts bounds how often a Step or Rotate rereads the shared state after
// losing a race to another replica.
const sharedAttempts = 8

// NewSharedRotator returns a Rotator whose state lives in backend, shared with every
// other replica that uses the same backend. The first replica to start finds nothing
// stored and stores a freshly generated active key (of cfg.Alg); the others load it.
//
// Every Step and Rotate first reloads the shared state (so Run's tick is also the
// reload interval), then makes its change on that state and stores it only if no other
// replica stored in between; a lost race rereads and tries again. A key therefore
// enters the shared state as next, and every replica publishes it at its next reload;
// it signs only once the Step of some replica finds its ActivateAt passed, so that
// PublishDelay must exceed the reload interval plus the verifiers' JWKS cache time plus
// the clock skew between replicas. A replaced key stays published at every replica
// for Retain plus PublishDelay: a replica that has not reloaded since the activation
// still signs with it, for up to a step while it reaches the store and for longer
// while it cannot (the services take it out of readiness after the publish delay less
// the JWKS cache time), and each token it signs then must verify while it lives. A
// state older than one this Rotator already saw (a lower version) is
// refused rather than adopted, so a rolled-back store cannot bring back an older key.
//
// cfg.OnChange, when set, hears every state this Rotator stores.
func NewSharedRotator(ctx context.Context, backend RingBackend, cfg RotationConfig) (*Rotator, error) {
	if backend == nil {
		return nil, fmt.Errorf("keys.shared: no backend")
	}
	alg := cfg.Alg
	if alg == "" {
		alg = ES256
	}
	if cfg.Retain > 0 {
		delay := cfg.PublishDelay
		if delay <= 0 {
			delay = DefaultPublishDelay
		}
		cfg.Retain += delay
	}
	for attempt := 0; attempt < sharedAttempts; attempt++ {
		state, version, found, err := backend.Load(ctx)
		if err != nil {
			return nil, fmt.Errorf("keys.shared: loading the key ring: %w", err)
		}
		if !found {
			k, err := Generate(alg)
			if err != nil {
				return nil, err
			}
			now := time.Now()
			if cfg.Now != nil {
				now = cfg.Now()
			}
			state = RingState{Keys: []KeyRecord{{Key: k, State: KeyActive, ActivatedAt: now}}}
			version, err = backend.Store(ctx, state, 0)
			if errors.Is(err, ErrRingConflict) {
				continue // another replica started first: load its ring
			}
			if err != nil {
				return nil, fmt.Errorf("keys.shared: storing the first key: %w", err)
			}
		}
		r, err := NewRotator(state, cfg)
		if err != nil {
			return nil, fmt.Errorf("keys.shared: %w", err)
		}
		r.shared = &sharedRing{backend: backend, version: version, lastSync: r.cfg.Now()}
		return r, nil
	}
	return nil, fmt.Errorf("keys.shared: %w", ErrRingConflict)
}

// sharedRing is a Rotator's link to its RingBackend; guarded by the Rotator's mu.
type sharedRing struct {
	backend  RingBackend
	version  uint64    // of the state the records were last loaded from or stored as
	lastSync time.Time // of the last successful load (cfg.Now)
}

// SharedSince returns when a shared Rotator last read the shared state (or a store
// Rotator, NewStoreRotator, its key store) successfully (by its clock), and false for a
// Rotator that is neither. A replica that has not
// read it for long may not publish a key that the others sign with: the services take
// it out of readiness (cmd/internal/kit.SharedKeysReady).
func (r *Rotator) SharedSince() (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.store != nil {
		return r.store.lastSync, true
	}
	if r.shared == nil {
		return time.Time{}, false
	}
	return r.shared.lastSync, true
}

// PublishDelay returns the configured (or default) publish delay.
func (r *Rotator) PublishDelay() time.Duration { return r.cfg.PublishDelay }

// Period returns the rotation period: how long the active key signs before a rotation
// starts (0: never).
func (r *Rotator) Period() time.Duration { return r.cfg.Period }

// reloadLocked replaces the records and the ring's keys with the shared state.
func (r *Rotator) reloadLocked() error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultSharedTimeout)
	defer cancel()
	state, version, found, err := r.shared.backend.Load(ctx)
	if err != nil {
		return fmt.Errorf("rotation: loading the shared key ring: %w", err)
	}
	if !found {
		return fmt.Errorf("rotation: the shared key ring is gone from the store (version %d was there)", r.shared.version)
	}
	now := r.cfg.Now()
	if version < r.shared.version {
		return fmt.Errorf("rotation: the shared key ring went back from version %d to %d; refusing the older state", r.shared.version, version)
	}
	if version == r.shared.version {
		r.shared.lastSync = now
		return nil
	}
	cfg := r.cfg
	cfg.OnChange = nil
	fresh, err := NewRotator(state, cfg)
	if err != nil {
		return fmt.Errorf("rotation: shared key ring version %d: %w", version, err)
	}
	r.records = fresh.records
	r.ring.replaceWith(fresh.ring)
	r.shared.version = version
	r.shared.lastSync = now
	return nil
}

// storeShared writes the records as the next version of the shared state.
func (r *Rotator) storeShared() error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultSharedTimeout)
	defer cancel()
	v, err := r.shared.backend.Store(ctx, RingState{Keys: slices.Clone(r.records)}, r.shared.version)
	if err != nil {
		return err
	}
	r.shared.version = v
	return nil
}

// sharedLocked runs change on the freshly reloaded shared state, again after every lost
// race.
func (r *Rotator) sharedLocked(change func() error) error {
	for attempt := 0; attempt < sharedAttempts; attempt++ {
		if err := r.reloadLocked(); err != nil {
			return err
		}
		err := change()
		if !errors.Is(err, ErrRingConflict) {
			return err
		}
	}
	return fmt.Errorf("rotation: gave up after %d concurrent changes: %w", sharedAttempts, ErrRingConflict)
}

// MemoryRingBackend is a RingBackend in memory, for replicas in one process (tests).
type MemoryRingBackend struct {
	mu      sync.Mutex
	state   []byte
	version uint64
}

// Load implements RingBackend.
func (m *MemoryRingBackend) Load(context.Context) (RingState, uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.version == 0 {
		return RingState{}, 0, false, nil
	}
	// A copy through JSON, as a real store keeps it: replicas share no key objects.
	var s RingState
	if err := json.Unmarshal(m.state, &s); err != nil {
		return RingState{}, 0, false, err
	}
	return s, m.version, true, nil
}

// Store implements RingBackend.
func (m *MemoryRingBackend) Store(_ context.Context, state RingState, version uint64) (uint64, error) {
	b, err := json.Marshal(state)
	if err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if version != m.version {
		return 0, ErrRingConflict
	}
	m.state = b
	m.version++
	return m.version, nil
}
