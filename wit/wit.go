package wit

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tokenhash"
)

// Type is the JOSE typ of a WIT.
const Type = "wit+jwt"

// HeaderName is the HTTP field that carries a WIT (creds-02 section 5.1.1).
const HeaderName = "Workload-Identity-Token"

// Defaults.
const (
	DefaultMaxLifetime = 24 * time.Hour
	DefaultSkew        = 30 * time.Second
	DefaultTTL         = time.Hour
)

// Claims are the WIT claims, in the order dialogtrust writes them.
type Claims struct {
	Iss string            `json:"iss,omitempty"`
	Sub string            `json:"sub"`
	Iat *jose.NumericDate `json:"iat,omitempty"`
	Nbf *jose.NumericDate `json:"nbf,omitempty"`
	Exp *jose.NumericDate `json:"exp"`
	Jti string            `json:"jti,omitempty"`
	Cnf *Confirmation     `json:"cnf"`
}

// Confirmation is the cnf claim (RFC 7800 section 3.2).
type Confirmation struct {
	JWK json.RawMessage `json:"jwk"`
}

// WIT is a validated Workload Identity Token.
type WIT struct {
	Raw     string
	Claims  Claims
	Subject identifier.ID
	// Key is the confirmation key: every proof must be made with it and its Alg.
	Key *keys.PublicKey
	// IssuerKID is the kid of the trust-anchor key that signed the WIT.
	IssuerKID string

	hash    string // tokenhash.Of(Raw), computed once (every WPT's wth needs it)
	subject string // Subject.String(), computed once (replay keys and requester names need it)
}

// SubjectString returns Subject.String(); a validated WIT (cached ones too) carries it,
// so it is built once per validation rather than on every use.
func (w *WIT) SubjectString() string {
	if w.subject != "" {
		return w.subject
	}
	return w.Subject.String()
}

// Hash returns tokenhash.Of(w.Raw), computed at most once per validation.
func (w *WIT) Hash() string {
	if w.hash == "" {
		w.hash = tokenhash.Of(w.Raw)
	}
	return w.hash
}

// Expiry returns the WIT's exp.
func (w *WIT) Expiry() time.Time { return w.Claims.Exp.Time() }

// TrustResolver gives the trust anchors of a trust domain (keys.Trust implements it).
type TrustResolver interface {
	ForTrustDomain(td string) (keys.KeySet, error)
}

// Validator validates WITs against trust configuration.
type Validator struct {
	trust       TrustResolver
	now         func() time.Time
	skew        time.Duration
	maxLifetime time.Duration
	issuers     []string
	algs        []string
	cnfAlgs     []string
	maxSize     int
	cache       *cache
}

// NewValidator returns a Validator that takes trust anchors from trust.
func NewValidator(trust TrustResolver, opts ...ValidatorOption) *Validator {
	v := &Validator{trust: trust, now: time.Now, skew: DefaultSkew, maxLifetime: DefaultMaxLifetime, maxSize: 8 << 10}
	for _, o := range opts {
		o.applyValidator(v)
	}
	if v.now == nil {
		v.now = time.Now
	}
	return v
}

// Now returns the validator's current time (its injected clock).
func (v *Validator) Now() time.Time { return v.now() }

// Skew returns the configured clock skew.
func (v *Validator) Skew() time.Duration { return v.skew }

// Validate checks raw as the package documentation describes.
func (v *Validator) Validate(ctx context.Context, raw string) (*WIT, error) {
	if v.cache != nil {
		now := v.now()
		if w, ok := v.cache.get(raw, now); ok {
			if err := v.checkTimes(&w, now); err != nil {
				return nil, err
			}
			return &w, nil
		}
		w, err := v.validate(ctx, raw)
		if err == nil {
			// The cached copy owns its text (raw may be a substring of a larger
			// string) and carries its hash, so a hit computes neither.
			c := *w
			c.Raw = strings.Clone(raw)
			w.hash = c.Hash()
			v.cache.put(&c, now)
		}
		return w, err
	}
	return v.validate(ctx, raw)
}

// CacheLen reports how many validated WITs are cached (0 without a cache).
func (v *Validator) CacheLen() int {
	if v.cache == nil {
		return 0
	}
	return v.cache.len()
}

func (v *Validator) checkTimes(w *WIT, now time.Time) error {
	return jose.CheckTimes(jose.TimeRules{
		Now: now, Skew: v.skew, RequireExp: true, MaxLifetime: v.maxLifetime,
	}, w.Claims.Exp, w.Claims.Nbf, w.Claims.Iat)
}

func (v *Validator) validate(ctx context.Context, raw string) (*WIT, error) {
	opts := jose.Options{Typ: Type, Algs: v.algs, MaxSize: v.maxSize}
	t, err := jose.Parse(raw, opts.MaxSize)
	if err != nil {
		return nil, err
	}
	if err := t.CheckHeader(opts); err != nil {
		return nil, err
	}
	// The trust domain of sub selects the anchors (WIT-1), so the claims are decoded
	// before the signature is checked; sub must be a canonical identifier before it is
	// used for anything (identifier-03 section 7.1). Nothing in them is trusted until
	// the signature verifies.
	w := &WIT{Raw: t.Raw}
	if err := netjson.DecodeClaims(t.Payload, &w.Claims); err != nil {
		return nil, err
	}
	if w.Claims.Sub == "" {
		return nil, errcode.New(errcode.MissingClaim, "WIT has no sub")
	}
	sub, err := identifier.Parse(w.Claims.Sub)
	if err != nil {
		return nil, err
	}
	ks, err := v.trust.ForTrustDomain(sub.TrustDomain())
	if err != nil {
		return nil, err
	}
	anchor, err := ks.LookupKey(ctx, t.Kid)
	if err != nil {
		return nil, err
	}
	if err := t.VerifyWith(anchor, false); err != nil {
		return nil, err
	}
	w.Subject, w.IssuerKID, w.subject = sub, anchor.KID(), sub.String()
	if err := v.checkClaims(w); err != nil {
		return nil, err
	}
	return w, nil
}

func (v *Validator) checkClaims(w *WIT) error {
	if err := v.checkTimes(w, v.now()); err != nil {
		return err
	}
	if len(v.issuers) > 0 && !contains(v.issuers, w.Claims.Iss) {
		return errcode.New(errcode.IssuerMismatch, "iss %q is not an accepted issuer", errcode.Cut(w.Claims.Iss))
	}
	key, err := ConfirmationKey(w.Claims.Cnf, v.cnfAlgs)
	if err != nil {
		return err
	}
	w.Key = key
	return nil
}

// ConfirmationKey validates cnf.jwk (creds-02 section 5.1: REQUIRED, with an alg that is
// not none, not symmetric, not encryption, and fits the key) and returns it.
func ConfirmationKey(cnf *Confirmation, allowed []string) (*keys.PublicKey, error) {
	if cnf == nil || len(bytes.TrimSpace(cnf.JWK)) == 0 || string(bytes.TrimSpace(cnf.JWK)) == "null" {
		return nil, errcode.New(errcode.MissingClaim, "cnf.jwk is required")
	}
	key, err := keys.ParseConfirmationJWK(cnf.JWK)
	if err != nil {
		return nil, err
	}
	if len(allowed) > 0 && !contains(allowed, key.Alg()) {
		return nil, errcode.New(errcode.UnsupportedConfirmationAlg, "cnf.jwk alg %q is not allowed here", key.Alg())
	}
	return key, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
