package keys

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Ring is a signer's keys: one active key that signs, plus keys that are published in
// the JWKS without signing. Rotation is two steps so that verifiers can learn a key
// before they see it (publish-before-use), and a retired key stays published until
// every token it signed has expired.
type Ring struct {
	mu        sync.RWMutex
	active    *PrivateKey
	published []ringEntry
	now       func() time.Time
	maxAge    time.Duration // of the served JWKS; 0: DefaultJWKSMaxAge
}

// DefaultJWKSMaxAge is how long a Ring's JWKS may be cached (Cache-Control max-age)
// unless SetMaxAge says otherwise. A key must be published at least this long before it
// signs, so that a verifier that refreshes on schedule knows it in time.
const DefaultJWKSMaxAge = 5 * time.Minute

type ringEntry struct {
	key       *PrivateKey
	retireAt  time.Time // zero: no retirement scheduled
	activated bool
}

// NewRing starts a ring whose active key is active.
func NewRing(active *PrivateKey, now func() time.Time) *Ring {
	if now == nil {
		now = time.Now
	}
	return &Ring{active: active, published: []ringEntry{{key: active, activated: true}}, now: now}
}

// replaceWith makes r hold o's keys (o must not be in use elsewhere): a shared Rotator
// adopts a reloaded state into the Ring its servers already hold.
func (r *Ring) replaceWith(o *Ring) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active = o.active
	r.published = o.published
}

// SetMaxAge sets how long the served JWKS may be cached (0: DefaultJWKSMaxAge); the
// Cache-Control header carries it in whole seconds, rounded down. A shorter one lets the
// publish delay be shorter.
func (r *Ring) SetMaxAge(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.maxAge = d
}

// MaxAge returns the Cache-Control max-age of the served JWKS.
func (r *Ring) MaxAge() time.Duration {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.maxAge <= 0 {
		return DefaultJWKSMaxAge
	}
	return r.maxAge
}

// Active returns the key that signs now.
func (r *Ring) Active() *PrivateKey {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.active
}

// Publish adds k to the JWKS without signing with it yet.
func (r *Ring) Publish(k *PrivateKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.published {
		if e.key.KID() == k.KID() {
			return
		}
	}
	r.published = append(r.published, ringEntry{key: k})
}

// Activate makes the published key kid the signing key. The previous active key stays
// published for retain (the longest lifetime of a token it signed), then drops out.
// Activating a key that was not published first is refused.
func (r *Ring) Activate(kid string, retain time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := -1
	for i, e := range r.published {
		if e.key.KID() == kid {
			idx = i
		}
	}
	if idx < 0 {
		return errcode.New(errcode.UnknownKey, "key %q must be published before it is activated", kid)
	}
	now := r.now()
	for i := range r.published {
		if r.published[i].key == r.active {
			r.published[i].retireAt = now.Add(retain)
		}
	}
	r.published[idx].retireAt = time.Time{}
	r.published[idx].activated = true
	r.active = r.published[idx].key
	return nil
}

// Public returns the published public keys, dropping retired ones.
func (r *Ring) Public() []*PublicKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	kept := r.published[:0]
	out := make([]*PublicKey, 0, len(r.published))
	for _, e := range r.published {
		if !e.retireAt.IsZero() && !now.Before(e.retireAt) && e.key != r.active {
			continue
		}
		kept = append(kept, e)
		out = append(out, e.key.Public())
	}
	r.published = kept
	return out
}

// KeySet returns the published keys as a StaticSet (a snapshot).
func (r *Ring) KeySet() *StaticSet {
	s, _ := NewStaticSet(r.Public()...)
	return s
}

// JWKS returns the JWK Set document of the published keys.
func (r *Ring) JWKS() ([]byte, error) { return marshalJWKS(r.Public()) }

// ServeHTTP serves the JWKS (application/jwk-set+json) for GET and HEAD.
func (r *Ring) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := r.JWKS()
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	// Short caching: verifiers also refetch on an unknown kid.
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(r.MaxAge()/time.Second)))
	w.WriteHeader(http.StatusOK)
	if req.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}
