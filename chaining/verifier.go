package chaining

import (
	"context"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// AccessTokenVerifier validates the RFC 9068 access tokens of one AS at a resource
// server of its domain (B1 in Figure 5): typ at+jwt, the alg allow-list, the signature
// by kid from the AS's keys, iss, aud, exp (with skew, at most MaxLifetime ahead), iat
// not in the future, sub, client_id and jti present. Safe for concurrent use.
type AccessTokenVerifier struct {
	Keys     keys.KeySet
	Issuer   string
	Audience string
	// Algs restricts the algorithms (default: all that package keys supports).
	Algs []string
	// Now is the clock (default time.Now); Skew the allowed clock skew (default 30 s).
	Now  func() time.Time
	Skew time.Duration
	// MaxLifetime refuses a token whose exp lies further ahead (default an hour).
	MaxLifetime time.Duration
}

// Verify validates raw and returns its claims.
func (v *AccessTokenVerifier) Verify(ctx context.Context, raw string) (*AccessTokenClaims, error) {
	if v.Keys == nil || v.Issuer == "" || v.Audience == "" {
		return nil, errcode.New(errcode.InvalidRequest, "the access token verifier needs keys, issuer and audience")
	}
	t, err := jose.Verify(ctx, raw, jose.Options{Typ: AccessTokenTyp, Algs: v.Algs, MaxSize: MaxAssertion}, v.Keys)
	if err != nil {
		return nil, err
	}
	var c AccessTokenClaims
	if err := netjson.DecodeClaims(t.Payload, &c); err != nil {
		return nil, err
	}
	now, skew, maxLife := time.Now(), v.Skew, v.MaxLifetime
	if v.Now != nil {
		now = v.Now()
	}
	if skew <= 0 {
		skew = oauth.DefaultSkew
	}
	if maxLife <= 0 {
		maxLife = MaxAccessTokenLifetime
	}
	switch {
	case c.Iss != v.Issuer:
		return nil, errcode.New(errcode.IssuerMismatch, "iss %q is not the configured authorization server", errcode.Cut(c.Iss))
	case !c.Aud.Contains(v.Audience):
		return nil, errcode.New(errcode.AudienceMismatch, "the access token's aud does not name this audience")
	case c.Sub == "" || c.ClientID == "" || c.Jti == "":
		return nil, errcode.New(errcode.MissingClaim, "sub, client_id and jti are required (RFC 9068 section 2.2)")
	}
	if err := jose.CheckTimes(jose.TimeRules{Now: now, Skew: skew, RequireExp: true, MaxLifetime: maxLife}, c.Exp, nil, c.Iat); err != nil {
		return nil, err
	}
	return &c, nil
}

// CheckHolder checks that the access token is bound to key (cnf.jkt), the WIT key that
// proved the request carrying it: a token taken from its holder is refused.
func CheckHolder(c *AccessTokenClaims, key *keys.PublicKey) error {
	if c == nil || c.Cnf == nil || c.Cnf.JKT == "" {
		return errcode.New(errcode.GrantBindingMismatch, "the access token is not bound to a key (cnf.jkt)")
	}
	if key == nil || c.Cnf.JKT != Thumbprint(key) {
		return errcode.New(errcode.GrantBindingMismatch, "the access token is bound to another workload's key")
	}
	return nil
}
