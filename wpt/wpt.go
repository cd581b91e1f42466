package wpt

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"sort"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Type is the JOSE typ of a WPT.
const Type = "wpt+jwt"

// Field names.
const (
	AuthScheme          = "WPT"                  // Authorization: WPT <jwt> (wpt-02)
	LegacyHeader        = "Workload-Proof-Token" // wpt-01 carriage
	TxnTokenHeader      = "Txn-Token"
	DialogContextHeader = "Dialog-Context"
)

// Defaults.
const (
	DefaultTTL         = 60 * time.Second
	DefaultMaxLifetime = 5 * time.Minute
	DefaultMaxSize     = 8 << 10
)

// Claims are the WPT claims in the order dialogtrust writes them.
type Claims struct {
	Aud jose.Audience     `json:"aud"`
	Exp *jose.NumericDate `json:"exp"`
	Jti string            `json:"jti"`
	Wth string            `json:"wth"`
	Ath string            `json:"ath,omitempty"`
	Tth string            `json:"tth,omitempty"`
	Oth map[string]string `json:"oth,omitempty"`
	Dth string            `json:"dth,omitempty"`
}

// Hash returns base64url(SHA-256(value trimmed of spaces and tabs)).
func Hash(value string) string {
	h := sha256.Sum256([]byte(strings.Trim(value, " \t")))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// Bound is what a proof binds, besides the WIT: the values as carried in the request.
// A nil pointer means the field is absent.
type Bound struct {
	TxnToken      *string
	DialogContext *string
	// AccessToken is the bearer token a wpt-01 proof binds through ath.
	AccessToken *string
	// Other maps lower-case field names of further context tokens to their values.
	Other map[string]string
}

// MintOption configures New.
type MintOption func(*minter)

type minter struct {
	ttl time.Duration
	now func() time.Time
	jti string
}

// WithTTL sets the proof lifetime (default 60s).
func WithTTL(d time.Duration) MintOption { return func(m *minter) { m.ttl = d } }

// WithMintClock injects the clock.
func WithMintClock(now func() time.Time) MintOption { return func(m *minter) { m.now = now } }

// WithJTI fixes the jti (tests and vectors only; the default is 128 random bits).
func WithJTI(jti string) MintOption { return func(m *minter) { m.jti = jti } }

// New mints a WPT for a request to audience, signed by key (the WIT's key), binding
// the WIT as carried and the fields in b.
func New(key *keys.PrivateKey, witRaw, audience string, b Bound, opts ...MintOption) (string, error) {
	m := minter{ttl: DefaultTTL, now: time.Now}
	for _, o := range opts {
		o(&m)
	}
	if audience == "" {
		return "", errcode.New(errcode.InvalidRequest, "audience is required")
	}
	if m.jti == "" {
		var r [16]byte
		_, _ = rand.Read(r[:])
		m.jti = base64.RawURLEncoding.EncodeToString(r[:])
	}
	exp := jose.NumericDate(m.now().Add(m.ttl).Unix())
	c := Claims{Aud: jose.Audience{audience}, Exp: &exp, Jti: m.jti, Wth: wit.Hash(witRaw)}
	if b.AccessToken != nil {
		c.Ath = Hash(*b.AccessToken)
	}
	if b.TxnToken != nil {
		c.Tth = Hash(*b.TxnToken)
	}
	if b.DialogContext != nil {
		c.Dth = Hash(*b.DialogContext)
	}
	if len(b.Other) > 0 {
		c.Oth = make(map[string]string, len(b.Other))
		for name, v := range b.Other {
			c.Oth[strings.ToLower(name)] = Hash(v)
		}
	}
	// The JWS header carries no kid: the key is the WIT's cnf key.
	return jose.SignClaims(Type, key, false, c)
}

// Verifier validates WPTs.
type Verifier struct {
	wits        *wit.Validator
	audiences   []string
	replay      store.Replay
	now         func() time.Time
	skew        time.Duration
	maxLifetime time.Duration
	maxSize     int
}

// Option configures a Verifier.
type Option func(*Verifier)

// WithAudiences sets the accepted aud values (exact match, from trusted configuration).
func WithAudiences(aud ...string) Option {
	return func(v *Verifier) { v.audiences = append(v.audiences, aud...) }
}

// WithReplay sets the store that claims each jti once. Without one, jti replay is not
// checked (only the conformance runner and tests should do that).
func WithReplay(r store.Replay) Option { return func(v *Verifier) { v.replay = r } }

// WithClock overrides the clock (default: the WIT validator's).
func WithClock(now func() time.Time) Option { return func(v *Verifier) { v.now = now } }

// WithSkew overrides the skew (default: the WIT validator's).
func WithSkew(d time.Duration) Option { return func(v *Verifier) { v.skew = d } }

// WithMaxLifetime caps exp - now (default 5 minutes).
func WithMaxLifetime(d time.Duration) Option { return func(v *Verifier) { v.maxLifetime = d } }

// NewVerifier returns a Verifier that validates WITs with wits.
func NewVerifier(wits *wit.Validator, opts ...Option) *Verifier {
	v := &Verifier{wits: wits, now: wits.Now, skew: wits.Skew(), maxLifetime: DefaultMaxLifetime, maxSize: DefaultMaxSize}
	for _, o := range opts {
		o(v)
	}
	return v
}

// Result is a verified proof and the WIT it was made with.
type Result struct {
	WIT    *wit.WIT
	Claims Claims
}

// Verify validates the WIT, then the proof made with its key.
func (v *Verifier) Verify(ctx context.Context, witRaw, proof string, b Bound) (*Result, error) {
	w, err := v.wits.Validate(ctx, witRaw)
	if err != nil {
		return nil, err
	}
	c, err := v.verifyProof(proof, w.Key, w.Hash(), b)
	if err != nil {
		return nil, err
	}
	if v.replay != nil {
		// Scoped to the sender (wpt-02 section 3.1): one workload cannot burn another's jti.
		ttl := c.Exp.Time().Sub(v.now()) + v.skew
		if err := v.replay.Claim(ctx, "wpt:jti:"+w.Subject.String()+"\x00"+c.Jti, ttl); err != nil {
			return nil, err
		}
	}
	return &Result{WIT: w, Claims: *c}, nil
}

// VerifyProof checks a proof against an already validated WIT key (steps 2-6). It does
// not claim the jti.
func (v *Verifier) VerifyProof(ctx context.Context, proof string, key *keys.PublicKey, witRaw string, b Bound) (*Claims, error) {
	return v.verifyProof(proof, key, wit.Hash(witRaw), b)
}

// verifyProof is VerifyProof with the WIT's hash (its wth) already computed.
func (v *Verifier) verifyProof(proof string, key *keys.PublicKey, wth string, b Bound) (*Claims, error) {
	opts := jose.Options{Typ: Type, MaxSize: v.maxSize, ExactAlg: true}
	t, err := jose.Parse(proof, opts.MaxSize)
	if err != nil {
		return nil, err
	}
	if err := t.CheckHeader(opts); err != nil {
		return nil, err
	}
	if err := t.VerifyWith(key, true); err != nil {
		return nil, err
	}
	var c Claims
	if err := jose.DecodeClaims(t.Payload, &c); err != nil {
		return nil, err
	}
	if err := jose.CheckTimes(jose.TimeRules{Now: v.now(), Skew: v.skew, RequireExp: true, MaxLifetime: v.maxLifetime}, c.Exp, nil, nil); err != nil {
		return nil, err
	}
	if c.Jti == "" {
		return nil, errcode.New(errcode.MissingClaim, "jti is required")
	}
	if len(c.Aud) != 1 || !contains(v.audiences, c.Aud[0]) {
		return nil, errcode.New(errcode.AudienceMismatch, "aud is not this recipient")
	}
	if c.Wth == "" || c.Wth != wth {
		return nil, errcode.New(errcode.WITBindingMismatch, "wth does not match the WIT")
	}
	if err := checkBinding(c.Ath, b.AccessToken, errcode.OtherTokenBindingMismatch, "ath", "access token"); err != nil {
		return nil, err
	}
	if err := checkBinding(c.Tth, b.TxnToken, errcode.TxnTokenBindingMismatch, "tth", "Txn-Token"); err != nil {
		return nil, err
	}
	if err := checkOther(c.Oth, b.Other); err != nil {
		return nil, err
	}
	if err := checkBinding(c.Dth, b.DialogContext, errcode.DialogContextBindingMismatch, "dth", "Dialog-Context"); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkBinding: the claim is present exactly when the field is, and matches its hash.
func checkBinding(claim string, field *string, code errcode.Code, name, what string) error {
	switch {
	case field == nil && claim != "":
		return errcode.New(code, "%s is present but the request carries no %s", name, what)
	case field != nil && claim == "":
		return errcode.New(code, "the request carries %s but the proof has no %s", what, name)
	case field != nil && claim != Hash(*field):
		return errcode.New(code, "%s does not match the %s", name, what)
	}
	return nil
}

// checkOther: every oth entry must be understood (a field present with that hash), and
// every context token in the request must be covered (WPT-9).
func checkOther(oth map[string]string, other map[string]string) error {
	names := make([]string, 0, len(oth))
	for n := range oth {
		names = append(names, n)
	}
	sort.Strings(names)
	lower := make(map[string]string, len(other))
	for n, val := range other {
		lower[strings.ToLower(n)] = val
	}
	for _, n := range names {
		val, ok := lower[n]
		if !ok {
			return errcode.New(errcode.OtherTokenBindingMismatch, "oth names %q, which the request does not carry", n)
		}
		if oth[n] != Hash(val) {
			return errcode.New(errcode.OtherTokenBindingMismatch, "oth[%q] does not match the field", n)
		}
	}
	for n := range lower {
		if _, ok := oth[n]; !ok {
			return errcode.New(errcode.OtherTokenBindingMismatch, "context token %q is not covered by oth", n)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
