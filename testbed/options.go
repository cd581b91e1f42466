package testbed

import (
	"net/http"
	"time"
)

// The servers of a domain, as WithMiddleware names them.
const (
	ServerWITIssuer = "wit-issuer"
	ServerTTS       = "tts"
)

// Option configures Start and StartDomain.
type Option func(*config)

type config struct {
	now     func() time.Time
	scopes  []string
	wrap    func(domain, server string, next http.Handler) http.Handler
	domainC bool
	idp     bool
}

func newConfig(opts []Option) *config {
	c := &config{now: time.Now, scopes: []string{Scope}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithClock is the clock of the whole world (default time.Now): its WIT issuers'
// and TTSs' issuance and checks, their stores and key rings, and the clients, key
// sets, validators and acceptors its Domains and Worlds hand out. A test that starts
// it at time.Now() and advances it checks expiry without sleeping.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithScopes are the scopes the authorization servers let cross from a.example to
// b.example (default Scope alone).
func WithScopes(scopes ...string) Option {
	return func(c *config) { c.scopes = append([]string(nil), scopes...) }
}

// WithMiddleware wraps the handler of each server the world starts: wrap gets the
// trust domain, which server it is (ServerWITIssuer or ServerTTS) and the handler, and
// returns the handler to serve. A test or the demo records with it what reached a
// domain's servers (dialog-binding section 13, domain separation).
func WithMiddleware(wrap func(domain, server string, next http.Handler) http.Handler) Option {
	return func(c *config) { c.wrap = wrap }
}

// WithDomainC makes Start add a third domain, c.example (World.C), an authorization
// server b.example's does not trust for grants: a.example's AS issues grants for
// c.example's too, c.example's issues grants for b.example's, and b.example's TTS
// trusts c.example's WITs, so that c.example's workloads authenticate there and the
// grant itself is what is refused (dialog-binding section 11). StartDomain ignores it.
func WithDomainC() Option {
	return func(c *config) { c.domainC = true }
}

// WithIdP makes Start add a.example's identity provider (World.IdP) and turn ID-JAGs
// on (draft-ietf-oauth-identity-assertion-authz-grant): a.example's AS issues them for
// b.example's AS on the IdP's ID tokens, which AS A trusts through the IdP's JWKS, and on
// Txn-Tokens; b.example's AS redeems them besides the generic grant. StartDomain
// ignores it.
func WithIdP() Option {
	return func(c *config) { c.idp = true }
}

func (c *config) wrapped(domain, server string, h http.Handler) http.Handler {
	if c.wrap == nil {
		return h
	}
	return c.wrap(domain, server, h)
}
