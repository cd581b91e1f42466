package tts

import (
	"context"
	"fmt"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
	"strings"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Subject is what a validated subject token says (oauth.md 1.4, 1.5 steps 2-5).
type Subject struct {
	// TokenType is the subject_token_type the token was validated as.
	TokenType string
	// Sub is the Txn-Token sub, prefixed so that it is unique in the trust domain
	// (oauth.md 1.5 step 5).
	Sub string
	// Scope is the scope tied to the subject token; ScopeKnown is false when the token
	// says nothing about it (then policy may supply one, or the request is refused:
	// oauth.md 1.5 step 4).
	Scope      []string
	ScopeKnown bool
	// Expiry is the subject token's exp; zero when it has none (unsigned_json).
	Expiry time.Time
	// Issuer is the subject token's iss ("" when it has none).
	Issuer string
	// Input is the Txn-Token being replaced (txn_token subjects only).
	Input *txntoken.Claims

	hash string // Hash of the token when the handler knows it ("" otherwise), for the log
	// claims are the token's claims for the policy's expressions (shared by the copies
	// of a cached token, decoded once).
	claims *grantpolicy.Claims
}

// SubjectTokenHandler validates one subject_token_type (in the style of fosite's token
// exchange handlers: one handler per type). Validate checks the token completely,
// including its signature and expiry, for the authenticated requester; every error is an
// *errcode.Error and is answered with invalid_request (oauth.md 1.11).
type SubjectTokenHandler interface {
	Type() string
	Validate(ctx context.Context, token string, requester *oauth.Client) (*Subject, error)
}

// HandlerOptions are shared by the handlers of this package.
type HandlerOptions struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Skew is the clock skew allowed on exp, nbf and iat (default 30s).
	Skew time.Duration
	// CacheSize bounds the cache of validated tokens (0: DefaultCacheSize; negative:
	// no cache). Tokens are cached by their exact text until their exp, never longer
	// than CacheMaxAge, and the time rules run on every use.
	CacheSize   int
	CacheMaxAge time.Duration
}

// Cache defaults.
const (
	DefaultCacheSize   = 10000
	DefaultCacheMaxAge = 5 * time.Minute
)

func (o *HandlerOptions) fill() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Skew <= 0 {
		o.Skew = oauth.DefaultSkew
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.CacheMaxAge <= 0 {
		o.CacheMaxAge = DefaultCacheMaxAge
	}
}

// subjectCache keeps validated subject tokens by the token's exact text (and the
// requester, for tokens whose validity depends on who presents them). A hit skips the
// parse and the signature; it does not skip the time rules, which run on every use
// with the entry's exp, nbf and iat. An entry lives until the token's exp, at most
// maxAge, so a key withdrawn from trust stops vouching within maxAge. Failures are
// never cached. Bounded: when full, expired entries go first, then arbitrary ones.
//
// The map is keyed by the text itself, not a digest: the lookup hashes it with the
// map's seeded hash and compares it octet for octet, so a hit costs no SHA-256; the
// token's SHA-256 (for the log line) is computed once, when it is cached.
type subjectCache struct {
	mu      sync.RWMutex
	entries map[cacheKey]*cacheEntry
	max     int
	maxAge  time.Duration
	swept   time.Time // last sweep of expired entries
}

type cacheEntry struct {
	raw, requester string
	subject        Subject
	exp, nbf, iat  *jose.NumericDate
	until          time.Time
}

func newSubjectCache(max int, maxAge time.Duration) *subjectCache {
	if max <= 0 {
		return nil
	}
	return &subjectCache{entries: make(map[cacheKey]*cacheEntry), max: max, maxAge: maxAge}
}

type cacheKey struct{ raw, requester string }

func (c *subjectCache) get(raw, requester string, now time.Time) (*cacheEntry, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.RLock()
	e, ok := c.entries[cacheKey{raw, requester}]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return nil, false
	}
	return e, true
}

func (c *subjectCache) put(e *cacheEntry, now time.Time) {
	if c == nil {
		return
	}
	// The entry keeps a copy of the token: the caller's string may be a substring of a
	// whole request body (ParseTokenRequest), which the cache must not keep alive.
	e.raw = strings.Clone(e.raw)
	e.subject.hash = tokenhash.Of(e.raw)
	e.until = now.Add(c.maxAge)
	if e.exp != nil && e.exp.Time().Before(e.until) {
		e.until = e.exp.Time()
	}
	k := cacheKey{e.raw, e.requester}
	c.mu.Lock()
	defer c.mu.Unlock()
	interval := c.maxAge
	if interval <= 0 {
		interval = time.Minute
	}
	if len(c.entries) >= c.max || now.Sub(c.swept) >= interval {
		// Expired entries go at least once per interval, so that memory follows the
		// live entries under churn instead of growing to the bound first.
		for key, old := range c.entries {
			if !now.Before(old.until) {
				delete(c.entries, key)
			}
		}
		c.swept = now
	}
	if len(c.entries) >= c.max {
		for key := range c.entries {
			if len(c.entries) < c.max*3/4 {
				break
			}
			delete(c.entries, key)
		}
	}
	c.entries[k] = e
}

func (c *subjectCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

// JWTIssuer is an issuer whose JWT access tokens or ID tokens are accepted as subject
// tokens.
type JWTIssuer struct {
	// Issuer is the iss the tokens carry, compared exactly.
	Issuer string
	// Keys are the issuer's keys (a keys.RemoteSet for a JWKS URL: cached, refreshed on
	// an unknown kid).
	Keys keys.KeySet
	// Typ is the required JOSE typ (explicit typing, RFC 8725 section 3.11). Default:
	// at+jwt for access tokens (RFC 9068), JWT otherwise.
	Typ string
	// Audiences, when set, must include one of the token's aud values.
	Audiences []string
	// SubjectPrefix is put before the token's sub to form the Txn-Token sub. The sub of
	// a Txn-Token must name one principal in the trust domain (oauth.md 1.5 step 5): give
	// issuers whose sub values could name different principals different prefixes.
	SubjectPrefix string
	// Scope is the scope granted to tokens of this issuer that carry no scope claim
	// (ID tokens, typically). Without it, such a token's scope is unknown and the
	// request is refused (oauth.md 1.5 step 4).
	Scope []string
	// AllowUntyped accepts this issuer's tokens without a typ header (some identity
	// providers' ID tokens carry none); a typ, when present, must still be Typ. It needs
	// Audiences, so that an untyped token of another kind from the same issuer is not
	// taken for one of this kind.
	AllowUntyped bool
	// RSA admits RS256 and PS256 tokens of this issuer (identity providers sign with
	// RSA); Keys must then be a set opened to RSA (keys.RSAPolicy), since no other set
	// holds RSA keys.
	RSA bool
}

// JWTHandler validates JWT subject tokens (access_token, id_token or jwt) of configured
// issuers.
type JWTHandler struct {
	typ     string
	issuers map[string]JWTIssuer
	o       HandlerOptions
	cache   *subjectCache
}

// NewJWTHandler returns the handler of tokenType (one of the RFC 8693 JWT types) for
// issuers.
func NewJWTHandler(tokenType string, issuers []JWTIssuer, o HandlerOptions) (*JWTHandler, error) {
	switch tokenType {
	case TokenTypeAccessToken, TokenTypeIDToken, TokenTypeJWT:
	default:
		return nil, fmt.Errorf("tts: %s is not a JWT subject token type", tokenType)
	}
	o.fill()
	h := &JWTHandler{typ: tokenType, issuers: map[string]JWTIssuer{}, o: o, cache: newSubjectCache(o.CacheSize, o.CacheMaxAge)}
	for _, is := range issuers {
		if is.Issuer == "" || is.Keys == nil {
			return nil, fmt.Errorf("tts: a subject token issuer needs iss and keys")
		}
		if _, dup := h.issuers[is.Issuer]; dup {
			return nil, fmt.Errorf("tts: issuer %s configured twice for %s", is.Issuer, tokenType)
		}
		if is.AllowUntyped && len(is.Audiences) == 0 {
			return nil, fmt.Errorf("tts: issuer %s: accepting untyped tokens needs audiences", is.Issuer)
		}
		if is.Typ == "" {
			is.Typ = "JWT"
			if tokenType == TokenTypeAccessToken {
				is.Typ = "at+jwt"
			}
		}
		h.issuers[is.Issuer] = is
	}
	return h, nil
}

// Type implements SubjectTokenHandler.
func (h *JWTHandler) Type() string { return h.typ }

// jwtClaims are the claims read from a JWT subject token.
type jwtClaims struct {
	jose.RegisteredClaims
	Scope *string `json:"scope"`
}

// Validate implements SubjectTokenHandler.
func (h *JWTHandler) Validate(ctx context.Context, token string, _ *oauth.Client) (*Subject, error) {
	now := h.o.Now()
	if e, ok := h.cache.get(token, "", now); ok {
		if err := h.times(e.exp, e.nbf, e.iat, now); err != nil {
			return nil, err
		}
		s := e.subject
		return &s, nil
	}
	t, err := jose.Parse(token, oauth.MaxSubjectTokenSize)
	if err != nil {
		return nil, err
	}
	// The issuer's configuration (its typ and keys) is chosen by iss, so the claims are
	// decoded first; nothing in them counts until the signature verified.
	var c jwtClaims
	if err := netjson.DecodeClaims(t.Payload, &c); err != nil {
		return nil, err
	}
	is, ok := h.issuers[c.Iss]
	if !ok {
		return nil, errcode.New(errcode.UntrustedIssuer, "subject token issuer %q is not configured", errcode.Cut(c.Iss))
	}
	if err := t.CheckHeader(jose.Options{Typ: is.Typ, RSA: is.RSA, AllowUntyped: is.AllowUntyped}); err != nil {
		return nil, err
	}
	key, err := is.Keys.LookupKey(ctx, t.Kid)
	if err != nil {
		return nil, err
	}
	if err := t.VerifyWith(key, false); err != nil {
		return nil, err
	}
	if err := h.times(c.Exp, c.Nbf, c.Iat, now); err != nil {
		return nil, err
	}
	if c.Sub == "" {
		return nil, errcode.New(errcode.MissingClaim, "subject token has no sub")
	}
	if len(is.Audiences) > 0 && !anyOf(c.Aud, is.Audiences) {
		return nil, errcode.New(errcode.AudienceMismatch, "subject token aud does not name this TTS")
	}
	s := Subject{TokenType: h.typ, Sub: is.SubjectPrefix + c.Sub, Issuer: c.Iss, Expiry: c.Exp.Time(), claims: grantpolicy.NewClaims(t.Payload)}
	switch {
	case c.Scope != nil:
		if s.Scope, err = oauth.ParseScope(*c.Scope); err != nil {
			return nil, errcode.New(errcode.InvalidClaim, "subject token scope is not a valid scope")
		}
		s.ScopeKnown = true
	case len(is.Scope) > 0:
		s.Scope, s.ScopeKnown = append([]string(nil), is.Scope...), true
	}
	e := &cacheEntry{raw: token, subject: s, exp: c.Exp, nbf: c.Nbf, iat: c.Iat}
	h.cache.put(e, now)
	s = e.subject // with its hash, when cached
	return &s, nil
}

func (h *JWTHandler) times(exp, nbf, iat *jose.NumericDate, now time.Time) error {
	// exp is required (oauth.md 1.5 step 3: never issue on an expired subject token,
	// which needs an expiry to check).
	return jose.CheckTimes(jose.TimeRules{Now: now, Skew: h.o.Skew, RequireExp: true}, exp, nbf, iat)
}

// CacheLen reports how many validated tokens are cached.
func (h *JWTHandler) CacheLen() int { return h.cache.len() }

// SelfSignedHandler validates self_signed subject tokens (oauth.md 1.4): a JWT signed by
// the requesting workload with a key it proved it holds in this request, whose iss is
// the authenticated workload and whose aud names this TTS.
type SelfSignedHandler struct {
	audiences   []string
	typ         string
	maxAge      time.Duration
	maxLifetime time.Duration
	prefix      string
	o           HandlerOptions
	cache       *subjectCache
}

// Defaults of SelfSignedHandler.
const (
	// DefaultSelfSignedTyp: the drafts define no typ for a self-signed token; "JWT"
	// (RFC 7519 section 5.1) is what generic JWT libraries write.
	DefaultSelfSignedTyp         = "JWT"
	DefaultSelfSignedMaxAge      = 10 * time.Minute
	DefaultSelfSignedMaxLifetime = time.Hour
)

// SelfSignedOptions tune NewSelfSignedHandler.
type SelfSignedOptions struct {
	HandlerOptions
	// Typ is the required typ (default DefaultSelfSignedTyp).
	Typ string
	// MaxAge refuses an iat further in the past (default 10 minutes; TT: "may reject
	// values far in the past").
	MaxAge time.Duration
	// MaxLifetime refuses exp - iat longer than this (default one hour).
	MaxLifetime time.Duration
	// SubjectPrefix is put before the token's sub (see JWTIssuer.SubjectPrefix).
	SubjectPrefix string
}

// NewSelfSignedHandler returns the self_signed handler; audiences are this TTS's
// identifiers (its issuer identifier; its token endpoint URL).
func NewSelfSignedHandler(audiences []string, o SelfSignedOptions) *SelfSignedHandler {
	o.fill()
	if o.Typ == "" {
		o.Typ = DefaultSelfSignedTyp
	}
	if o.MaxAge <= 0 {
		o.MaxAge = DefaultSelfSignedMaxAge
	}
	if o.MaxLifetime <= 0 {
		o.MaxLifetime = DefaultSelfSignedMaxLifetime
	}
	return &SelfSignedHandler{audiences: audiences, typ: o.Typ, maxAge: o.MaxAge, maxLifetime: o.MaxLifetime, prefix: o.SubjectPrefix,
		o: o.HandlerOptions, cache: newSubjectCache(o.CacheSize, o.CacheMaxAge)}
}

// Type implements SubjectTokenHandler.
func (*SelfSignedHandler) Type() string { return TokenTypeSelfSigned }

// SelfSignedClaims are the claims of a self_signed subject token, as the client mints
// them (txntoken.SelfSignedClaims).
type SelfSignedClaims = txntoken.SelfSignedClaims

// Validate implements SubjectTokenHandler.
func (h *SelfSignedHandler) Validate(_ context.Context, token string, req *oauth.Client) (*Subject, error) {
	now := h.o.Now()
	who := req.IDString()
	if e, ok := h.cache.get(token, who, now); ok {
		if err := h.times(e.exp, e.iat, now); err != nil {
			return nil, err
		}
		s := e.subject
		return &s, nil
	}
	t, err := jose.Parse(token, oauth.MaxSubjectTokenSize)
	if err != nil {
		return nil, err
	}
	if err := t.CheckHeader(jose.Options{Typ: h.typ}); err != nil {
		return nil, err
	}
	var c SelfSignedClaims
	if err := netjson.DecodeClaims(t.Payload, &c); err != nil {
		return nil, err
	}
	// iss must be the authenticated workload (oauth.md 1.4 and Q7): a workload cannot
	// present a subject vouched for by another.
	if c.Iss != who {
		return nil, errcode.New(errcode.IssuerMismatch, "self_signed iss %q is not the authenticated workload %s", errcode.Cut(c.Iss), who)
	}
	if len(req.Keys) == 0 {
		return nil, errcode.New(errcode.UnknownKey, "a self_signed token needs a key the workload proved it holds (WIT or private_key_jwt authentication)")
	}
	verified := false
	for _, k := range req.Keys {
		if keys.FamilyOf(t.Alg) == k.Family() && t.VerifyWith(k, false) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, errcode.New(errcode.InvalidSignature, "self_signed token is not signed with the workload's key")
	}
	if c.Sub == "" {
		return nil, errcode.New(errcode.MissingClaim, "self_signed token has no sub")
	}
	if !anyOf(c.Aud, h.audiences) {
		return nil, errcode.New(errcode.AudienceMismatch, "self_signed aud does not name this TTS")
	}
	if c.Iat == nil {
		return nil, errcode.New(errcode.MissingClaim, "self_signed token has no iat")
	}
	if c.Exp == nil {
		return nil, errcode.New(errcode.MissingClaim, "self_signed token has no exp")
	}
	if c.Exp.Time().Sub(c.Iat.Time()) > h.maxLifetime {
		return nil, errcode.New(errcode.LifetimeTooLong, "self_signed token lives %s, limit %s", c.Exp.Time().Sub(c.Iat.Time()), h.maxLifetime)
	}
	if err := h.times(c.Exp, c.Iat, now); err != nil {
		return nil, err
	}
	s := Subject{TokenType: TokenTypeSelfSigned, Sub: h.prefix + c.Sub, Issuer: c.Iss, Expiry: c.Exp.Time(), claims: grantpolicy.NewClaims(t.Payload)}
	if c.Scope != nil {
		if s.Scope, err = oauth.ParseScope(*c.Scope); err != nil {
			return nil, errcode.New(errcode.InvalidClaim, "self_signed scope is not a valid scope")
		}
		s.ScopeKnown = true
	}
	e := &cacheEntry{raw: token, requester: who, subject: s, exp: c.Exp, iat: c.Iat}
	h.cache.put(e, now)
	s = e.subject // with its hash, when cached
	return &s, nil
}

func (h *SelfSignedHandler) times(exp, iat *jose.NumericDate, now time.Time) error {
	if err := jose.CheckTimes(jose.TimeRules{Now: now, Skew: h.o.Skew, RequireExp: true}, exp, nil, iat); err != nil {
		return err
	}
	if now.Sub(iat.Time()) > h.maxAge+h.o.Skew {
		return errcode.New(errcode.TooOld, "self_signed iat is %s ago, limit %s", now.Sub(iat.Time()).Truncate(time.Second), h.maxAge)
	}
	return nil
}

// CacheLen reports how many validated tokens are cached.
func (h *SelfSignedHandler) CacheLen() int { return h.cache.len() }

// UnsignedJSONHandler accepts unsigned_json subject tokens: a JSON object with sub (and
// optionally scope) that the requester vouches for. Only workloads that policy names
// may use it (the edge gateway, typically); the Server checks that before Validate.
type UnsignedJSONHandler struct{ prefix string }

// NewUnsignedJSONHandler returns the unsigned_json handler.
func NewUnsignedJSONHandler(subjectPrefix string) *UnsignedJSONHandler {
	return &UnsignedJSONHandler{prefix: subjectPrefix}
}

// Type implements SubjectTokenHandler.
func (*UnsignedJSONHandler) Type() string { return TokenTypeUnsignedJSON }

// Validate implements SubjectTokenHandler. The value is plain JSON text (oauth.md 1.4
// and Q8: no encoding is specified since -07); it has no exp.
func (h *UnsignedJSONHandler) Validate(_ context.Context, token string, _ *oauth.Client) (*Subject, error) {
	if err := oauth.CheckDepth(token, oauth.MaxContextDepth); err != nil {
		return nil, err
	}
	// A repeated member (sub twice, at any depth) is refused, not resolved: encoding/json
	// keeps the last, the requester's own reader may keep the first.
	if dup, err := netjson.FirstDuplicate(token); err == nil && dup != "" {
		return nil, errcode.New(errcode.InvalidEncoding, "unsigned_json subject token names member %q twice in one object", errcode.Cut(dup))
	}
	var m map[string]any
	if err := netjson.DecodeKeepingNumbers([]byte(token), &m); err != nil || m == nil {
		return nil, errcode.New(errcode.InvalidEncoding, "unsigned_json subject token is not a JSON object")
	}
	sub, _ := m["sub"].(string)
	if strings.TrimSpace(sub) == "" {
		return nil, errcode.New(errcode.MissingClaim, "unsigned_json subject token has no sub string")
	}
	s := Subject{TokenType: TokenTypeUnsignedJSON, Sub: h.prefix + sub, claims: grantpolicy.NewClaims([]byte(token))}
	if v, ok := m["scope"]; ok {
		str, isString := v.(string)
		if !isString {
			return nil, errcode.New(errcode.InvalidClaim, "unsigned_json scope is not a string")
		}
		sc, err := oauth.ParseScope(str)
		if err != nil {
			return nil, errcode.New(errcode.InvalidClaim, "unsigned_json scope is not a valid scope")
		}
		s.Scope, s.ScopeKnown = sc, true
	}
	return &s, nil
}

// txnTokenHandler validates a Txn-Token presented for replacement: signed by this TTS,
// for a trust domain it serves, not expired (oauth.md 1.8: never replace an expired
// token).
type txnTokenHandler struct{ v *txntoken.Verifier }

func (*txnTokenHandler) Type() string { return TokenTypeTxnToken }

func (h *txnTokenHandler) Validate(ctx context.Context, token string, _ *oauth.Client) (*Subject, error) {
	c, err := h.v.Verify(ctx, token)
	if err != nil {
		return nil, err
	}
	return &Subject{TokenType: TokenTypeTxnToken, Sub: c.Sub, Scope: c.ScopeList(), ScopeKnown: true,
		Expiry: c.Exp.Time(), Issuer: c.Iss, Input: c}, nil
}
