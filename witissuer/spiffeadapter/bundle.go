package spiffeadapter

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/exp/bundle/witbundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// maxJWKSSize bounds a JWKS read from an issuer.
const maxJWKSSize = 1 << 20

// BundleFromJWKS parses an issuer's JWKS (GET /.well-known/jwks.json) with the key
// parser the issuer's own relying parties use (keys.ParseJWKS: kid and alg required) and
// returns it as the WIT bundle of td.
func BundleFromJWKS(td spiffeid.TrustDomain, jwks []byte) (*witbundle.Bundle, error) {
	set, err := keys.ParseJWKS(jwks)
	if err != nil {
		return nil, err
	}
	return BundleFromKeys(td, set.Keys()...), nil
}

// BundleFromKeys returns the WIT bundle of td holding ks under their kids.
func BundleFromKeys(td spiffeid.TrustDomain, ks ...*keys.PublicKey) *witbundle.Bundle {
	b := witbundle.New(td)
	for _, k := range ks {
		_ = b.AddWITAuthority(k.KID(), k.Crypto()) // fails only for an empty kid, which ParseJWKS refuses
	}
	return b
}

// JWKSSource is a witbundle.Source for one trust domain that follows an issuer's JWKS:
// it fetches the JWKS URL when its copy is older than the refresh interval, and keeps the
// previous copy while a fetch fails. Safe for concurrent use.
type JWKSSource struct {
	td      spiffeid.TrustDomain
	url     string
	hc      *http.Client
	refresh time.Duration
	now     func() time.Time

	mu      sync.Mutex
	bundle  *witbundle.Bundle
	fetched time.Time
}

// NewJWKSSource returns a source of td's WIT bundle from jwksURL (the issuer's jwks_uri,
// from configuration), fetched with hc (nil: http.DefaultClient) at most once per
// refresh (at least one second; the issuer's JWKS max-age is five minutes). The first
// fetch happens now: an unreachable issuer is an error.
func NewJWKSSource(ctx context.Context, hc *http.Client, td spiffeid.TrustDomain, jwksURL string, refresh time.Duration) (*JWKSSource, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	s := &JWKSSource{td: td, url: jwksURL, hc: hc, refresh: max(refresh, time.Second), now: time.Now}
	if _, err := s.get(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// GetWITBundleForTrustDomain implements witbundle.Source.
func (s *JWKSSource) GetWITBundleForTrustDomain(td spiffeid.TrustDomain) (*witbundle.Bundle, error) {
	if td != s.td {
		return nil, errcode.New(errcode.UntrustedIssuer, "no WIT bundle for trust domain %q", td)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.get(ctx)
}

func (s *JWKSSource) get(ctx context.Context) (*witbundle.Bundle, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.bundle != nil && now.Sub(s.fetched) < s.refresh {
		return s.bundle, nil
	}
	b, err := s.fetch(ctx)
	if err != nil {
		if s.bundle != nil {
			return s.bundle, nil
		}
		return nil, err
	}
	s.bundle, s.fetched = b, now
	return b, nil
}

func (s *JWKSSource) fetch(ctx context.Context) (*witbundle.Bundle, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "JWKS URL")
	}
	res, err := s.hc.Do(req)
	if err != nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "fetching %s", s.url)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSSize+1))
	if err != nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "reading %s", s.url)
	}
	if res.StatusCode != http.StatusOK {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, nil, "%s answered %d", s.url, res.StatusCode)
	}
	if len(body) > maxJWKSSize {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, nil, "%s: JWKS over %d octets", s.url, maxJWKSSize)
	}
	return BundleFromJWKS(s.td, body)
}
