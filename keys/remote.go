package keys

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// RemoteSet is a KeySet backed by a JWKS URL that was configured out of band. jwx's
// cache fetches it and refreshes it in the background; an unknown kid triggers an
// immediate refresh, at most once per MinRefresh, so that a rotated-in key is found
// quickly while a flood of bogus kids cannot turn into a flood of fetches.
type RemoteSet struct {
	url        string
	cache      *jwk.Cache
	minRefresh time.Duration
	now        func() time.Time
	hook       func(RefreshEvent)
	rsa        *RSAPolicy // WithRSA

	mu          sync.Mutex
	lastRefresh time.Time
	current     *StaticSet
	currentSrc  jwk.Set
}

// RemoteOption configures a RemoteSet.
type RemoteOption func(*RemoteSet, *[]jwk.RegisterOption)

// WithHTTPClient sets the client used to fetch the JWKS (e.g. one with the right CAs).
func WithHTTPClient(c *http.Client) RemoteOption {
	return func(_ *RemoteSet, o *[]jwk.RegisterOption) { *o = append(*o, jwk.WithHTTPClient(c)) }
}

// WithMinRefresh bounds how often an unknown kid may force a fetch (default 30s).
func WithMinRefresh(d time.Duration) RemoteOption {
	return func(r *RemoteSet, _ *[]jwk.RegisterOption) { r.minRefresh = d }
}

// WithClock sets the clock of NewRemoteSet (default time.Now), which rate-limits forced
// refreshes. Time is an input: tests move it instead of sleeping. A nil clock keeps the
// default.
func WithClock(now func() time.Time) RemoteOption {
	return func(r *RemoteSet, _ *[]jwk.RegisterOption) { r.now = now }
}

// RefreshEvent describes one JWKS fetch of a RemoteSet, for metrics: Forced is a
// fetch forced by an unknown kid (or the first one); otherwise the background refresh
// of the cache delivered a new set. Err is the fetch's error (nil on success).
type RefreshEvent struct {
	URL    string
	Forced bool
	Err    error
}

// WithRefreshHook calls hook after every forced fetch (the first one, and each
// unknown-kid refresh that the rate limit lets through) and whenever a background
// refresh delivered a new key set. hook must be fast and must not call the set.
func WithRefreshHook(hook func(RefreshEvent)) RemoteOption {
	return func(r *RemoteSet, _ *[]jwk.RegisterOption) { r.hook = hook }
}

// NewRemoteSet registers url with a jwx cache that lives as long as ctx. The first fetch
// happens here so that a wrong URL fails at start-up, not at the first request.
func NewRemoteSet(ctx context.Context, url string, opts ...RemoteOption) (*RemoteSet, error) {
	r := &RemoteSet{url: url, minRefresh: 30 * time.Second, now: time.Now}
	var reg []jwk.RegisterOption
	for _, o := range opts {
		o(r, &reg)
	}
	if r.now == nil {
		r.now = time.Now
	}
	// Background refresh no more often than every 15 minutes unless the server's cache
	// headers ask for less; unknown kids force refreshes below.
	reg = append(reg, jwk.WithMinRefreshInterval(r.minRefresh))
	r.cache = jwk.NewCache(ctx)
	if err := r.cache.Register(url, reg...); err != nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "registering JWKS URL")
	}
	if _, err := r.refresh(ctx, true); err != nil {
		return nil, err
	}
	return r, nil
}

// refresh returns the current set; with force it fetches anew (rate-limited).
func (r *RemoteSet) refresh(ctx context.Context, force bool) (*StaticSet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var (
		src jwk.Set
		err error
	)
	if force {
		if !r.lastRefresh.IsZero() && r.now().Sub(r.lastRefresh) < r.minRefresh {
			return r.current, nil
		}
		r.lastRefresh = r.now()
		src, err = r.cache.Refresh(ctx, r.url)
		if r.hook != nil {
			r.hook(RefreshEvent{URL: r.url, Forced: true, Err: err})
		}
	} else {
		src, err = r.cache.Get(ctx, r.url)
		if err == nil && r.hook != nil && r.currentSrc != nil && src != r.currentSrc {
			r.hook(RefreshEvent{URL: r.url})
		}
	}
	if err != nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "fetching JWKS")
	}
	if src != r.currentSrc || r.current == nil {
		set, err := fromJWKSetPolicy(src, r.rsa)
		if err != nil {
			return nil, err
		}
		r.current, r.currentSrc = set, src
	}
	return r.current, nil
}

// LookupKey implements KeySet: known kids are answered from the cache; an unknown kid
// forces one rate-limited refresh before it is called unknown.
func (r *RemoteSet) LookupKey(ctx context.Context, kid string) (*PublicKey, error) {
	set, err := r.refresh(ctx, false)
	if err != nil {
		return nil, err
	}
	k, err := set.LookupKey(ctx, kid)
	if err == nil || kid == "" {
		return k, err
	}
	set, ferr := r.refresh(ctx, true)
	if ferr != nil {
		return nil, ferr
	}
	return set.LookupKey(ctx, kid)
}
