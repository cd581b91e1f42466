package chaining

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// DiscoveredKeys is a peer AS's signing keys found through its RFC 8414 metadata
// (oauth.md 2.3: AS B trusts AS A's keys by configuration or through the jwks_uri of
// AS A's metadata). The metadata is read with oauth.Discover from the configured issuer
// identifier, so its issuer must equal that identifier (RFC 8414 section 3.3) and
// jwks_uri must be on the issuer's origin: metadata cannot point trust elsewhere.
//
// Discovery is lazy, as with keys.LazyRemoteSet: peers start in any order. Until the
// metadata and the JWKS answer, every lookup is keys_unavailable (Incomplete: "could
// not be completed", never acceptance), tried again at most once per retry interval.
type DiscoveredKeys struct {
	base   context.Context
	issuer string
	hc     *http.Client
	retry  time.Duration
	now    func() time.Time
	opts   []keys.RemoteOption

	mu      sync.Mutex
	set     *keys.LazyRemoteSet
	lastTry time.Time
	lastErr error
}

// NewDiscoveredKeys returns the keys of the AS whose issuer identifier is issuer. Its
// background refreshes live as long as ctx; hc fetches metadata and JWKS (default: a
// client with a 5 second timeout); retry bounds how often a failed discovery is tried
// again (default 5 s); now is its clock; opts apply to the JWKS set (keys.WithRSA for a
// peer whose grants are RSA-signed).
func NewDiscoveredKeys(ctx context.Context, issuer string, hc *http.Client, retry time.Duration, now func() time.Time, opts ...keys.RemoteOption) *DiscoveredKeys {
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	if retry <= 0 {
		retry = 5 * time.Second
	}
	if now == nil {
		now = time.Now
	}
	return &DiscoveredKeys{base: ctx, issuer: issuer, hc: hc, retry: retry, now: now, opts: opts}
}

// LookupKey implements keys.KeySet.
func (d *DiscoveredKeys) LookupKey(ctx context.Context, kid string) (*keys.PublicKey, error) {
	set, err := d.get(ctx)
	if err != nil {
		return nil, err
	}
	return set.LookupKey(ctx, kid)
}

// Ready reports whether the metadata was read and the JWKS fetched; a readiness check.
func (d *DiscoveredKeys) Ready(ctx context.Context) error {
	set, err := d.get(ctx)
	if err != nil {
		return err
	}
	return set.Ready(ctx)
}

func (d *DiscoveredKeys) get(ctx context.Context) (*keys.LazyRemoteSet, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.set != nil {
		return d.set, nil
	}
	now := d.now()
	if !d.lastTry.IsZero() && now.Sub(d.lastTry) < d.retry {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, d.lastErr, "metadata of %s not read yet", d.issuer)
	}
	d.lastTry = now
	md, err := oauth.Discover(ctx, d.hc, d.issuer)
	if err != nil {
		d.lastErr = err
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "metadata of %s", d.issuer)
	}
	d.set = keys.NewLazyRemoteSet(d.base, md.JWKSURI, d.retry, d.now, append([]keys.RemoteOption{keys.WithHTTPClient(d.hc)}, d.opts...)...)
	return d.set, nil
}
