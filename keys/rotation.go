package keys

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Key states in a RingState.
const (
	KeyActive   = "active"   // signs now
	KeyNext     = "next"     // published, signs from ActivateAt
	KeyRetiring = "retiring" // no longer signs, published until RetireAt
)

// KeyRecord is one signing key and where it stands in rotation.
type KeyRecord struct {
	Key         *PrivateKey
	State       string
	ActivatedAt time.Time // KeyActive: when it started signing
	ActivateAt  time.Time // KeyNext: when it will
	RetireAt    time.Time // KeyRetiring: when it leaves the JWKS
}

type keyRecordJSON struct {
	State       string          `json:"state"`
	ActivatedAt *time.Time      `json:"activated_at,omitempty"`
	ActivateAt  *time.Time      `json:"activate_at,omitempty"`
	RetireAt    *time.Time      `json:"retire_at,omitempty"`
	JWK         json.RawMessage `json:"jwk"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// MarshalJSON writes the record with its private JWK: the file it goes to must be 0600.
func (k KeyRecord) MarshalJSON() ([]byte, error) {
	j, err := json.Marshal(k.Key)
	if err != nil {
		return nil, err
	}
	return json.Marshal(keyRecordJSON{State: k.State, ActivatedAt: timePtr(k.ActivatedAt), ActivateAt: timePtr(k.ActivateAt), RetireAt: timePtr(k.RetireAt), JWK: j})
}

// UnmarshalJSON reads a record written by MarshalJSON.
func (k *KeyRecord) UnmarshalJSON(b []byte) error {
	var r keyRecordJSON
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	key, err := ParsePrivateJWK(r.JWK)
	if err != nil {
		return err
	}
	*k = KeyRecord{Key: key, State: r.State}
	if r.ActivatedAt != nil {
		k.ActivatedAt = *r.ActivatedAt
	}
	if r.ActivateAt != nil {
		k.ActivateAt = *r.ActivateAt
	}
	if r.RetireAt != nil {
		k.RetireAt = *r.RetireAt
	}
	return nil
}

// RingState is the persistent form of a Rotator: exactly one active key, at most one
// next key, and the retiring keys.
type RingState struct {
	Keys []KeyRecord `json:"keys"`
}

// RotationConfig configures a Rotator.
type RotationConfig struct {
	// Alg of generated keys (default ES256).
	Alg string
	// PublishDelay is how long a new key is published before it signs. It must exceed
	// the time verifiers cache the JWKS (Ring.MaxAge, 5 minutes by default), so that a
	// verifier that refreshes on schedule knows the key before it sees a token signed
	// with it (default 10m).
	PublishDelay time.Duration
	// Retain is how long a replaced key stays published: at least the longest lifetime
	// of a token it signs (a WIT, a Txn-Token) plus clock skew, so that every token it
	// signed verifies until it expires. Required.
	Retain time.Duration
	// Period starts a rotation when the active key has signed this long (0: never;
	// Rotate still works).
	Period time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnChange, if set, is called with the new state after every change (with the
	// Rotator's lock held, so states arrive in order); an error is returned to the
	// caller of the change. OpenRotator persists the state here.
	OnChange func(RingState) error
}

// DefaultPublishDelay is RotationConfig.PublishDelay's default.
const DefaultPublishDelay = 10 * time.Minute

// Rotator owns an issuer's Ring and rotates it publish-before-use (oauth.md 1.12,
// workload-creds-02 section 3): Rotate (or Period) publishes a new key, Step activates it
// once PublishDelay has passed, and the key it replaces stays published for Retain. The
// state (RingState) is reported through OnChange before the ring signs with a new key,
// so that a restart from the saved state never goes back to an older key. The wit-issuer
// and the TTS both rotate through one.
type Rotator struct {
	cfg  RotationConfig
	ring *Ring

	mu      sync.Mutex
	records []KeyRecord
	shared  *sharedRing // nil unless NewSharedRotator
	store   *storeRing  // nil unless NewStoreRotator
}

// withDefaults fills the algorithm, the clock and the publish delay, and refuses a
// configuration without a retention.
func (cfg RotationConfig) withDefaults() (RotationConfig, error) {
	if cfg.Alg == "" {
		cfg.Alg = ES256
	}
	if cfg.PublishDelay <= 0 {
		cfg.PublishDelay = DefaultPublishDelay
	}
	if cfg.Retain <= 0 {
		return cfg, fmt.Errorf("rotation: retain must be positive (the longest lifetime of a signed token plus skew)")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg, nil
}

// NewRotator starts from state (one active key and any next or retiring keys, for
// example as persisted by OnChange).
func NewRotator(state RingState, cfg RotationConfig) (*Rotator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var active *KeyRecord
	var next []KeyRecord
	var retiring []KeyRecord
	for i, r := range state.Keys {
		if r.Key == nil {
			return nil, fmt.Errorf("rotation: key %d is missing", i)
		}
		switch r.State {
		case KeyActive:
			if active != nil {
				return nil, fmt.Errorf("rotation: more than one active key")
			}
			active = &state.Keys[i]
		case KeyNext:
			next = append(next, r)
		case KeyRetiring:
			retiring = append(retiring, r)
		default:
			return nil, fmt.Errorf("rotation: key %s has unknown state %q", r.Key.KID(), r.State)
		}
	}
	if active == nil {
		return nil, fmt.Errorf("rotation: no active key")
	}
	if len(next) > 1 {
		return nil, fmt.Errorf("rotation: more than one next key")
	}
	now := cfg.Now()
	if active.ActivatedAt.IsZero() {
		active.ActivatedAt = now
	}
	// A Ring only learns retirement times through Activate, so the ring is rebuilt
	// by replaying the activations in the order the keys retire.
	slices.SortFunc(retiring, func(a, b KeyRecord) int { return a.RetireAt.Compare(b.RetireAt) })
	chain := append(slices.Clone(retiring), *active)
	ring := NewRing(chain[0].Key, cfg.Now)
	for i := 1; i < len(chain); i++ {
		ring.Publish(chain[i].Key)
		if err := ring.Activate(chain[i].Key.KID(), chain[i-1].RetireAt.Sub(now)); err != nil {
			return nil, err
		}
	}
	for _, n := range next {
		ring.Publish(n.Key)
	}
	r := &Rotator{cfg: cfg, ring: ring, records: append(chain, next...)}
	r.pruneLocked(now)
	return r, nil
}

// NewStaticRotator is a Rotator holding one active key, e.g. a freshly generated one.
func NewStaticRotator(active *PrivateKey, cfg RotationConfig) (*Rotator, error) {
	return NewRotator(RingState{Keys: []KeyRecord{{Key: active, State: KeyActive}}}, cfg)
}

// Ring is the key ring: its active key signs, its public keys are the JWKS.
func (r *Rotator) Ring() *Ring { return r.ring }

// State returns a copy of the current state.
func (r *Rotator) State() RingState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RingState{Keys: slices.Clone(r.records)}
}

// Rotate generates a key and publishes it now; Step activates it once PublishDelay has
// passed. It returns the new key's kid. A rotation already under way is not started
// again: its kid is returned.
func (r *Rotator) Rotate() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultSharedTimeout)
		defer cancel()
		if err := r.syncStoreLocked(ctx); err != nil {
			return "", err
		}
		return r.storeRotateLocked(ctx)
	}
	if r.shared == nil {
		return r.rotateLocked(r.cfg.Now())
	}
	var kid string
	err := r.sharedLocked(func() (err error) {
		kid, err = r.rotateLocked(r.cfg.Now())
		return err
	})
	return kid, err
}

func (r *Rotator) rotateLocked(now time.Time) (string, error) {
	for _, rec := range r.records {
		if rec.State == KeyNext {
			return rec.Key.KID(), nil
		}
	}
	k, err := Generate(r.cfg.Alg)
	if err != nil {
		return "", err
	}
	prev := slices.Clone(r.records)
	r.records = append(r.records, KeyRecord{Key: k, State: KeyNext, ActivateAt: now.Add(r.cfg.PublishDelay)})
	if err := r.changed(prev); err != nil {
		return "", err
	}
	r.ring.Publish(k)
	return k.KID(), nil
}

// Step does whatever is due at the current time: activate a next key whose publish
// delay has passed, drop retired keys, and start a periodic rotation. A shared Rotator
// (NewSharedRotator) first reloads the shared state and does what is due on it.
func (r *Rotator) Step() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.store != nil {
		return r.storeStepLocked()
	}
	if r.shared == nil {
		return r.stepLocked()
	}
	return r.sharedLocked(r.stepLocked)
}

func (r *Rotator) stepLocked() error {
	now := r.cfg.Now()
	prev := slices.Clone(r.records)
	dirty := r.pruneLocked(now)
	for i, rec := range r.records {
		if rec.State != KeyNext || now.Before(rec.ActivateAt) {
			continue
		}
		for j := range r.records {
			if r.records[j].State == KeyActive {
				r.records[j] = KeyRecord{Key: r.records[j].Key, State: KeyRetiring, RetireAt: now.Add(r.cfg.Retain)}
			}
		}
		r.records[i] = KeyRecord{Key: rec.Key, State: KeyActive, ActivatedAt: now}
		// Persist before the ring signs with the new key: after a crash the file must
		// never name an older active key than the one tokens went out with.
		if err := r.changed(prev); err != nil {
			return err
		}
		if err := r.ring.Activate(rec.Key.KID(), r.cfg.Retain); err != nil {
			return err
		}
		return nil
	}
	if r.cfg.Period > 0 {
		for _, rec := range r.records {
			if rec.State == KeyActive && !now.Before(rec.ActivatedAt.Add(r.cfg.Period)) {
				if _, err := r.rotateLocked(now); err != nil {
					return err
				}
				return nil
			}
		}
	}
	if dirty {
		return r.changed(prev)
	}
	return nil
}

// pruneLocked drops retiring keys whose retention has ended; the ring drops them from
// the JWKS on its own at the same instant.
func (r *Rotator) pruneLocked(now time.Time) bool {
	n := len(r.records)
	r.records = slices.DeleteFunc(r.records, func(k KeyRecord) bool {
		return k.State == KeyRetiring && !now.Before(k.RetireAt)
	})
	return len(r.records) != n
}

// changed reports the new state (a shared Rotator stores it first); on failure the
// records go back to prev.
func (r *Rotator) changed(prev []KeyRecord) error {
	if r.shared != nil {
		if err := r.storeShared(); err != nil {
			r.records = prev
			return fmt.Errorf("rotation: storing the shared key ring: %w", err)
		}
	}
	if r.cfg.OnChange == nil {
		return nil
	}
	if err := r.cfg.OnChange(RingState{Keys: slices.Clone(r.records)}); err != nil {
		r.records = prev
		return fmt.Errorf("rotation: saving key state: %w", err)
	}
	return nil
}

// Run calls Step on every tick until ctx ends; report (may be nil) hears errors.
func (r *Rotator) Run(ctx context.Context, tick <-chan time.Time, report func(error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if err := r.Step(); err != nil && report != nil {
				report(err)
			}
		}
	}
}
