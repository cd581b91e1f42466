package tts

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/keys"
)

// KeyRecord is one signing key of the TTS and where it is in its life.
type KeyRecord struct {
	Key         *keys.PrivateKey
	PublishedAt time.Time
	ActivatedAt time.Time // zero: published, not yet signing
	RetireAt    time.Time // zero: not retired
}

// RotationConfig configures a Rotator.
type RotationConfig struct {
	// Alg of generated keys (default ES256).
	Alg string
	// Period between rotations; zero disables rotation (the key never changes).
	Period time.Duration
	// PublishDelay is how long a new key is published before it signs: longer than
	// the JWKS cache age (keys.Ring serves max-age=300), so verifiers know the key
	// before they see it (publish-before-use, oauth.md 1.12). Default 10 minutes.
	PublishDelay time.Duration
	// Retain keeps a retired key published: at least the longest Txn-Token lifetime
	// plus skew (default one hour, MaxLifetime).
	Retain time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Save, when set, persists the records after every change (cmd/tts writes them
	// to its data directory).
	Save func([]KeyRecord) error
}

// Rotator rotates the TTS's signing keys through a keys.Ring: publish a new key, let
// PublishDelay pass, activate it, keep the old one published for Retain.
type Rotator struct {
	mu      sync.Mutex
	cfg     RotationConfig
	ring    *keys.Ring
	records []KeyRecord
}

// NewRotator rebuilds the ring from records (at least one activated key). Records
// retired before now are dropped.
func NewRotator(records []KeyRecord, cfg RotationConfig) (*Rotator, error) {
	if cfg.Alg == "" {
		cfg.Alg = keys.ES256
	}
	if cfg.PublishDelay <= 0 {
		cfg.PublishDelay = 10 * time.Minute
	}
	if cfg.Retain <= 0 {
		cfg.Retain = MaxLifetime
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	now := cfg.Now()
	var activated, pending []KeyRecord
	for _, r := range records {
		switch {
		case r.Key == nil:
			return nil, fmt.Errorf("tts: key record without a key")
		case !r.RetireAt.IsZero() && !now.Before(r.RetireAt):
			continue
		case r.ActivatedAt.IsZero():
			pending = append(pending, r)
		default:
			activated = append(activated, r)
		}
	}
	if len(activated) == 0 {
		return nil, fmt.Errorf("tts: no activated signing key")
	}
	sort.Slice(activated, func(i, j int) bool { return activated[i].ActivatedAt.Before(activated[j].ActivatedAt) })
	// Replay the history: each later activation retires the one before it for the
	// time it has left.
	ring := keys.NewRing(activated[0].Key, cfg.Now)
	for i := 1; i < len(activated); i++ {
		ring.Publish(activated[i].Key)
		retain := activated[i-1].RetireAt.Sub(now)
		if activated[i-1].RetireAt.IsZero() {
			retain = cfg.Retain
		}
		if err := ring.Activate(activated[i].Key.KID(), retain); err != nil {
			return nil, err
		}
	}
	for _, p := range pending {
		ring.Publish(p.Key)
	}
	r := &Rotator{cfg: cfg, ring: ring, records: append(activated, pending...)}
	return r, nil
}

// NewStaticRotator starts with one active key.
func NewStaticRotator(active *keys.PrivateKey, cfg RotationConfig) (*Rotator, error) {
	now := time.Now()
	if cfg.Now != nil {
		now = cfg.Now()
	}
	return NewRotator([]KeyRecord{{Key: active, PublishedAt: now, ActivatedAt: now}}, cfg)
}

// Ring returns the key ring (its active key signs; ServeHTTP is the JWKS).
func (r *Rotator) Ring() *keys.Ring { return r.ring }

// Records returns a copy of the key records.
func (r *Rotator) Records() []KeyRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]KeyRecord(nil), r.records...)
}

// Step does whatever is due now: activate a key published PublishDelay ago; publish a
// new key when the active one is Period old; forget keys past RetireAt.
func (r *Rotator) Step() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	changed := false
	var active, pending *KeyRecord
	for i := range r.records {
		rec := &r.records[i]
		if rec.ActivatedAt.IsZero() {
			pending = rec
		} else if rec.RetireAt.IsZero() {
			active = rec
		}
	}
	switch {
	case pending != nil && now.Sub(pending.PublishedAt) >= r.cfg.PublishDelay:
		if err := r.ring.Activate(pending.Key.KID(), r.cfg.Retain); err != nil {
			return err
		}
		if active != nil {
			active.RetireAt = now.Add(r.cfg.Retain)
		}
		pending.ActivatedAt = now
		changed = true
	case pending == nil && r.cfg.Period > 0 && active != nil && now.Sub(active.ActivatedAt) >= r.cfg.Period:
		k, err := keys.Generate(r.cfg.Alg)
		if err != nil {
			return err
		}
		r.ring.Publish(k)
		r.records = append(r.records, KeyRecord{Key: k, PublishedAt: now})
		changed = true
	}
	kept := r.records[:0]
	for _, rec := range r.records {
		if !rec.RetireAt.IsZero() && !now.Before(rec.RetireAt) {
			changed = true
			continue
		}
		kept = append(kept, rec)
	}
	r.records = kept
	if changed && r.cfg.Save != nil {
		return r.cfg.Save(append([]KeyRecord(nil), r.records...))
	}
	return nil
}

// Run calls Step on every tick until ctx ends; report (may be nil) hears errors. The
// ticker is passed in so that tests drive it.
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
