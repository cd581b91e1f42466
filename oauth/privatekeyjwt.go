package oauth

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
)

// Defaults of PrivateKeyJWT and NewClientAssertion.
const (
	DefaultAssertionMaxLifetime = 5 * time.Minute
	DefaultSkew                 = 30 * time.Second
	// DefaultClientAssertionLifetime is the lifetime NewClientAssertion gives an
	// assertion when none is asked for.
	DefaultClientAssertionLifetime = time.Minute
	// MaxAssertionJTI bounds a client assertion's jti: it becomes part of a replay-store
	// key.
	MaxAssertionJTI = 256
)

// RegisteredClient is a workload that may authenticate with private_key_jwt, and the
// keys (a static set or a JWKS URL) its assertions are signed with.
type RegisteredClient struct {
	ID   identifier.ID
	Keys keys.KeySet
}

// AssertionClaims are the claims of a client assertion (RFC 7523 section 3).
type AssertionClaims struct {
	Iss string            `json:"iss"`
	Sub string            `json:"sub"`
	Aud jose.Audience     `json:"aud"`
	Iat *jose.NumericDate `json:"iat"`
	Nbf *jose.NumericDate `json:"nbf,omitempty"`
	Exp *jose.NumericDate `json:"exp"`
	Jti string            `json:"jti"`
}

// PrivateKeyJWTConfig configures a PrivateKeyJWT.
type PrivateKeyJWTConfig struct {
	// Audiences are the values an assertion's aud may name: this server's issuer
	// identifier (and token endpoint URL, oauth.md 4.3).
	Audiences []string
	// SingleAudience requires aud to be exactly one value, one of Audiences (the WIT
	// issuer's rule).
	SingleAudience bool
	// Clients are the registered workloads.
	Clients []RegisteredClient
	// Replay claims each assertion's jti once, until its exp plus Skew.
	Replay store.Replay
	// ReplayPrefix scopes the replay keys ("tts:assertion:", "witissuer:assertion:").
	ReplayPrefix string
	// JTITooLongCode is the code of a refused jti over MaxAssertionJTI octets (default
	// invalid_claim; the TTS has always answered missing_claim).
	JTITooLongCode errcode.Code
	// Now is the clock (default time.Now); Skew the allowed clock skew (default 30 s);
	// MaxLifetime bounds exp - iat (default 5 minutes).
	Now         func() time.Time
	Skew        time.Duration
	MaxLifetime time.Duration
}

// PrivateKeyJWT authenticates a registered workload by a client assertion (RFC 7521
// section 4.2, RFC 7523 sections 2.2 and 3, OpenID private_key_jwt) with explicit
// typing: typ client-authentication+jwt, iss = sub = the workload identifier, aud
// naming this server, exp required and short, jti claimed once. The TTS uses it at
// its token endpoint, the WIT issuer for POST /v1/wit.
type PrivateKeyJWT struct {
	cfg       PrivateKeyJWTConfig
	workloads map[string]keys.KeySet
}

// NewPrivateKeyJWTWith returns the private_key_jwt method.
func NewPrivateKeyJWTWith(cfg PrivateKeyJWTConfig) (*PrivateKeyJWT, error) {
	if len(cfg.Audiences) == 0 || cfg.Replay == nil {
		return nil, fmt.Errorf("private_key_jwt needs its audiences and a replay store")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Skew <= 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.MaxLifetime <= 0 {
		cfg.MaxLifetime = DefaultAssertionMaxLifetime
	}
	if cfg.JTITooLongCode == "" {
		cfg.JTITooLongCode = errcode.InvalidClaim
	}
	p := &PrivateKeyJWT{cfg: cfg, workloads: map[string]keys.KeySet{}}
	for _, c := range cfg.Clients {
		if c.ID.IsZero() || c.Keys == nil {
			return nil, fmt.Errorf("registered client %q needs an identifier and keys", c.ID)
		}
		if _, dup := p.workloads[c.ID.String()]; dup {
			return nil, fmt.Errorf("client %s registered twice", c.ID)
		}
		p.workloads[c.ID.String()] = c.Keys
	}
	return p, nil
}

// NewPrivateKeyJWT returns the private_key_jwt method of a token endpoint: audiences
// are its issuer identifier and token endpoint URL; replay keys start "tts:assertion:".
func NewPrivateKeyJWT(audiences []string, clients []RegisteredClient, replay store.Replay, now func() time.Time, skew time.Duration) (*PrivateKeyJWT, error) {
	p, err := NewPrivateKeyJWTWith(PrivateKeyJWTConfig{Audiences: audiences, Clients: clients, Replay: replay,
		ReplayPrefix: "tts:assertion:", JTITooLongCode: errcode.MissingClaim, Now: now, Skew: skew})
	if err != nil {
		return nil, fmt.Errorf("tts: %w", err)
	}
	return p, nil
}

// Name implements Authenticator.
func (*PrivateKeyJWT) Name() string { return MethodPrivateKeyJWT }

// Present implements Authenticator.
func (*PrivateKeyJWT) Present(_ *http.Request, tr *TokenRequest) bool {
	return tr.ClientAssertion != "" || tr.ClientAssertionType != ""
}

// Authenticate implements Authenticator.
func (p *PrivateKeyJWT) Authenticate(ctx context.Context, _ *http.Request, tr *TokenRequest) (*Client, error) {
	id, key, err := p.Verify(ctx, tr.ClientAssertionType, tr.ClientAssertion, tr.ClientID)
	if err != nil {
		return nil, err
	}
	return newClient(id, MethodPrivateKeyJWT, nil, key, ""), nil
}

// Verify checks a client assertion of the given client_assertion_type and returns the
// workload and the registered key that signed it; clientID, when not empty, must be
// the assertion's sub. The claims are read before the signature is checked only to find
// the registered workload (as a WIT's sub selects its anchors); nothing in them counts
// until the signature verified with that workload's key. The replay store is written
// last, after every other check passed.
func (p *PrivateKeyJWT) Verify(ctx context.Context, assertionType, assertion, clientID string) (identifier.ID, *keys.PublicKey, error) {
	if assertionType != ClientAssertionTypeJWTBearer {
		return identifier.ID{}, nil, errcode.New(errcode.InvalidRequest, "client_assertion_type must be %s", ClientAssertionTypeJWTBearer)
	}
	if assertion == "" {
		return identifier.ID{}, nil, errcode.New(errcode.MissingCredential, "client_assertion is empty")
	}
	t, err := jose.Parse(assertion, MaxClientAssertion)
	if err != nil {
		return identifier.ID{}, nil, err
	}
	if err := t.CheckHeader(jose.Options{Typ: ClientAssertionType}); err != nil {
		return identifier.ID{}, nil, err
	}
	var c AssertionClaims
	if err := netjson.DecodeClaims(t.Payload, &c); err != nil {
		return identifier.ID{}, nil, err
	}
	if c.Iss == "" {
		return identifier.ID{}, nil, errcode.New(errcode.MissingClaim, "iss is required")
	}
	id, err := identifier.Parse(c.Iss)
	if err != nil {
		return identifier.ID{}, nil, err
	}
	set, ok := p.workloads[id.String()]
	if !ok {
		return identifier.ID{}, nil, errcode.New(errcode.UntrustedIssuer, "workload %s is not registered for private_key_jwt", id)
	}
	key, err := set.LookupKey(ctx, t.Kid)
	if err != nil {
		return identifier.ID{}, nil, err
	}
	if err := t.VerifyWith(key, false); err != nil {
		return identifier.ID{}, nil, err
	}
	if c.Sub != c.Iss {
		return identifier.ID{}, nil, errcode.New(errcode.InvalidClaim, "sub must equal iss in a client assertion")
	}
	if clientID != "" && clientID != c.Sub {
		return identifier.ID{}, nil, errcode.New(errcode.InvalidClaim, "client_id is not the assertion's sub")
	}
	if len(c.Aud) == 0 || p.cfg.SingleAudience && len(c.Aud) != 1 || !slices.ContainsFunc(c.Aud, p.named) {
		return identifier.ID{}, nil, errcode.New(errcode.AudienceMismatch, "aud must name this server (issuer identifier)")
	}
	now := p.cfg.Now()
	if c.Iat == nil {
		return identifier.ID{}, nil, errcode.New(errcode.MissingClaim, "iat is required")
	}
	if err := jose.CheckTimes(jose.TimeRules{Now: now, Skew: p.cfg.Skew, RequireExp: true, MaxLifetime: p.cfg.MaxLifetime}, c.Exp, c.Nbf, c.Iat); err != nil {
		return identifier.ID{}, nil, err
	}
	if c.Exp.Time().Sub(c.Iat.Time()) > p.cfg.MaxLifetime {
		return identifier.ID{}, nil, errcode.New(errcode.LifetimeTooLong, "assertion lives %s, limit %s", c.Exp.Time().Sub(c.Iat.Time()), p.cfg.MaxLifetime)
	}
	if c.Jti == "" {
		return identifier.ID{}, nil, errcode.New(errcode.MissingClaim, "jti is required")
	}
	if len(c.Jti) > MaxAssertionJTI {
		return identifier.ID{}, nil, errcode.New(p.cfg.JTITooLongCode, "jti longer than %d octets", MaxAssertionJTI)
	}
	// Held until the assertion can no longer be accepted: exp plus skew.
	ttl := c.Exp.Time().Add(p.cfg.Skew).Sub(now)
	if err := p.cfg.Replay.Claim(ctx, p.cfg.ReplayPrefix+id.String()+"\x00"+c.Jti, ttl); err != nil {
		return identifier.ID{}, nil, err
	}
	return id, key, nil
}

func (p *PrivateKeyJWT) named(aud string) bool { return slices.Contains(p.cfg.Audiences, aud) }

// NewClientAssertion mints a private_key_jwt client assertion (RFC 7523 section 3,
// typ client-authentication+jwt) for workload, for the server named audience (its
// issuer identifier), valid for lifetime (DefaultClientAssertionLifetime when not
// positive) from now (time.Now when zero), with a fresh jti of 128 random bits.
func NewClientAssertion(key *keys.PrivateKey, workload identifier.ID, audience string, lifetime time.Duration, now time.Time) (string, error) {
	if key == nil || workload.IsZero() || audience == "" {
		return "", errcode.New(errcode.InvalidRequest, "key, workload and audience are required")
	}
	if lifetime <= 0 {
		lifetime = DefaultClientAssertionLifetime
	}
	if now.IsZero() {
		now = time.Now()
	}
	iat := jose.NumericDate(now.Unix())
	exp := jose.NumericDate(now.Add(lifetime).Unix())
	return jose.SignClaims(ClientAssertionType, key, true, AssertionClaims{
		Iss: workload.String(), Sub: workload.String(), Aud: jose.Audience{audience},
		Iat: &iat, Exp: &exp, Jti: rand.Text(),
	})
}
