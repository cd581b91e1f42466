package keys

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// LazyRemoteSet is a KeySet backed by a JWKS URL that may not answer yet: a service can
// start before the issuer whose keys it trusts. Until the first fetch succeeds,
// every lookup is refused with keys_unavailable (Incomplete: "could not be
// completed", never acceptance), and a new fetch is tried at most once per retry
// interval, so a dead JWKS URL is not hammered. Once fetched it is a RemoteSet:
// cached, refetched (rate limited) on an unknown kid.
//
// NewRemoteSet fails when its first fetch fails, by design for configurations that
// must be right at start-up; this wrapper is for the development default and other
// deployments that start services in any order.
type LazyRemoteSet struct {
	base  context.Context
	url   string
	opts  []RemoteOption
	retry time.Duration
	now   func() time.Time

	mu      sync.Mutex
	set     *RemoteSet
	cancel  context.CancelFunc
	lastTry time.Time
	lastErr error
}

// NewLazyRemoteSet returns a set for url whose background refreshes live as long as
// ctx. retry bounds how often a failed first fetch is tried again (default 5s); now is
// the clock of that bound (default time.Now). Without a WithHTTPClient option the
// fetches use a client with a 5 second timeout.
func NewLazyRemoteSet(ctx context.Context, url string, retry time.Duration, now func() time.Time, opts ...RemoteOption) *LazyRemoteSet {
	if retry <= 0 {
		retry = 5 * time.Second
	}
	if now == nil {
		now = time.Now
	}
	opts = append([]RemoteOption{WithHTTPClient(&http.Client{Timeout: 5 * time.Second})}, opts...)
	return &LazyRemoteSet{base: ctx, url: url, opts: opts, retry: retry, now: now}
}

// LookupKey implements KeySet.
func (l *LazyRemoteSet) LookupKey(ctx context.Context, kid string) (*PublicKey, error) {
	set, err := l.get()
	if err != nil {
		return nil, err
	}
	return set.LookupKey(ctx, kid)
}

// Ready tries the first fetch (within the retry bound) and reports whether the set is
// usable; a readiness check.
func (l *LazyRemoteSet) Ready(context.Context) error {
	_, err := l.get()
	return err
}

func (l *LazyRemoteSet) get() (*RemoteSet, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set != nil {
		return l.set, nil
	}
	now := l.now()
	if !l.lastTry.IsZero() && now.Sub(l.lastTry) < l.retry {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, l.lastErr, "JWKS %s not fetched yet", l.url)
	}
	l.lastTry = now
	// Each attempt gets its own context, so that a failed attempt's cache goroutines
	// end with it instead of piling up.
	ctx, cancel := context.WithCancel(l.base)
	set, err := NewRemoteSet(ctx, l.url, l.opts...)
	if err != nil {
		cancel()
		l.lastErr = err
		if errcode.KindOf(err) != errcode.Incomplete {
			return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "JWKS %s", l.url)
		}
		return nil, err
	}
	l.set, l.cancel = set, cancel // the set lives until base ends
	return set, nil
}
