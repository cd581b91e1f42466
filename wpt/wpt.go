package wpt

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sort"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tokenhash"
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

// boundHash is the hash a WPT claim binds a field value by: over the value without the
// spaces and tabs around it (RFC 9110 section 5.5).
func boundHash(value string) string { return tokenhash.Of(strings.Trim(value, " \t")) }

// Bound is what a proof binds, besides the WIT: the values as carried in the request.
// A nil pointer means the field is absent.
type Bound struct {
	TxnToken      *string
	DialogContext *string
	// AccessToken is the bearer token a wpt-01 proof binds through ath.
	AccessToken *string
	// Other maps lower-case field names of further context tokens to their values.
	Other map[string]string
	// Request is the request the proof is for (VerifyRequest fills it in; nil for
	// Verify): New binds it through oth, and the verifier checks the request keys oth
	// names against it (request.go).
	Request *RequestBinding
}

// MintOption configures New (and SignRequest).
type MintOption interface{ applyMint(*minter) }

// mintOption is an option of New only: passing it to NewVerifier is a compile error
// instead of an option quietly ignored.
type mintOption func(*minter)

func (o mintOption) applyMint(m *minter) { o(m) }

// ClockOption is the clock WithClock sets; it serves New (exp) and NewVerifier, so that
// a test hands the same clock to both.
type ClockOption func() time.Time

func (now ClockOption) applyMint(m *minter)       { m.now = now }
func (now ClockOption) applyVerifier(v *Verifier) { v.now = now }

// WithClock sets the clock of New or NewVerifier (default time.Now for minting, the
// WIT validator's for verifying). Time is an input: tests move it instead of sleeping.
// A nil clock keeps the default.
func WithClock(now func() time.Time) ClockOption { return ClockOption(now) }

var (
	_ MintOption = ClockOption(nil)
	_ Option     = ClockOption(nil)
)

type minter struct {
	ttl time.Duration
	now func() time.Time
	jti string
}

// WithTTL sets the proof lifetime (default 60s).
func WithTTL(d time.Duration) MintOption { return mintOption(func(m *minter) { m.ttl = d }) }

// WithJTI fixes the jti (tests and vectors only; the default is 128 random bits).
func WithJTI(jti string) MintOption { return mintOption(func(m *minter) { m.jti = jti }) }

// New mints a WPT for a request to audience, signed by key (the WIT's key), binding
// the WIT as carried and the fields in b.
func New(key *keys.PrivateKey, witRaw, audience string, b Bound, opts ...MintOption) (string, error) {
	m := minter{ttl: DefaultTTL, now: time.Now}
	for _, o := range opts {
		o.applyMint(&m)
	}
	if m.now == nil {
		m.now = time.Now
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
	c := Claims{Aud: jose.Audience{audience}, Exp: &exp, Jti: m.jti, Wth: tokenhash.Of(witRaw)}
	if b.AccessToken != nil {
		c.Ath = boundHash(*b.AccessToken)
	}
	if b.TxnToken != nil {
		c.Tth = boundHash(*b.TxnToken)
	}
	if b.DialogContext != nil {
		c.Dth = boundHash(*b.DialogContext)
	}
	if len(b.Other) > 0 || b.Request != nil {
		c.Oth = make(map[string]string, len(b.Other)+4)
		for name, v := range b.Other {
			c.Oth[strings.ToLower(name)] = boundHash(v)
		}
		if b.Request != nil {
			for name, v := range b.Request.values() {
				c.Oth[name] = boundHash(v)
			}
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
	maxBody     int64
}

// Option configures a Verifier.
type Option interface{ applyVerifier(*Verifier) }

// verifierOption is an option of NewVerifier only (see mintOption).
type verifierOption func(*Verifier)

func (o verifierOption) applyVerifier(v *Verifier) { o(v) }

// WithAudiences sets the accepted aud values (exact match, from trusted configuration).
func WithAudiences(aud ...string) Option {
	return verifierOption(func(v *Verifier) { v.audiences = append(v.audiences, aud...) })
}

// WithReplay sets the store that claims each jti once. Without one, jti replay is not
// checked (only the conformance runner and tests should do that).
func WithReplay(r store.Replay) Option { return verifierOption(func(v *Verifier) { v.replay = r }) }

// WithSkew overrides the skew (default: the WIT validator's).
func WithSkew(d time.Duration) Option { return verifierOption(func(v *Verifier) { v.skew = d }) }

// WithMaxLifetime caps exp - now (default 5 minutes).
func WithMaxLifetime(d time.Duration) Option {
	return verifierOption(func(v *Verifier) { v.maxLifetime = d })
}

// WithMaxBodySize bounds the body read to check a Content-Digest the proof binds
// (default httpsig.DefaultMaxBodySize); a longer one is body_too_large.
func WithMaxBodySize(n int64) Option {
	return verifierOption(func(v *Verifier) {
		if n > 0 {
			v.maxBody = n
		}
	})
}

// NewVerifier returns a Verifier that validates WITs with wits.
func NewVerifier(wits *wit.Validator, opts ...Option) *Verifier {
	v := &Verifier{wits: wits, now: wits.Now, skew: wits.Skew(), maxLifetime: DefaultMaxLifetime, maxSize: DefaultMaxSize, maxBody: httpsig.DefaultMaxBodySize}
	for _, o := range opts {
		o.applyVerifier(v)
	}
	if v.now == nil {
		v.now = wits.Now
	}
	return v
}

// Result is a verified proof and the WIT it was made with.
type Result struct {
	WIT    *wit.WIT
	Claims Claims
}

// Verify validates the WIT, then the proof made with its key, and claims its jti. It
// checks no body: a proof that binds Content-Digest is verified with VerifyRequest.
func (v *Verifier) Verify(ctx context.Context, witRaw, proof string, b Bound) (*Result, error) {
	res, err := v.verify(ctx, witRaw, proof, b)
	if err != nil {
		return nil, err
	}
	if err := v.claim(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}

// verify is Verify without the jti claim.
func (v *Verifier) verify(ctx context.Context, witRaw, proof string, b Bound) (*Result, error) {
	w, err := v.wits.Validate(ctx, witRaw)
	if err != nil {
		return nil, err
	}
	res := &Result{WIT: w}
	if err := v.verifyProof(&res.Claims, proof, w.Key, w.Hash(), b); err != nil {
		return nil, err
	}
	return res, nil
}

// claim claims the jti of a verified proof, last: only an authenticated request spends
// one.
func (v *Verifier) claim(ctx context.Context, res *Result) error {
	if v.replay == nil {
		return nil
	}
	// Scoped to the sender (wpt-02 section 3.1): one workload cannot burn another's jti.
	c := &res.Claims
	ttl := c.Exp.Time().Sub(v.now()) + v.skew
	return v.replay.Claim(ctx, "wpt:jti:"+res.WIT.SubjectString()+"\x00"+c.Jti, ttl)
}

// VerifyProof checks a proof against an already validated WIT key (steps 2-6). It does
// not claim the jti.
func (v *Verifier) VerifyProof(ctx context.Context, proof string, key *keys.PublicKey, witRaw string, b Bound) (*Claims, error) {
	var c Claims
	if err := v.verifyProof(&c, proof, key, tokenhash.Of(witRaw), b); err != nil {
		return nil, err
	}
	return &c, nil
}

// verifyProof is VerifyProof with the WIT's hash (its wth) already computed; the claims
// are decoded into *c, which the caller may use only when it returns nil.
func (v *Verifier) verifyProof(c *Claims, proof string, key *keys.PublicKey, wth string, b Bound) error {
	opts := jose.Options{Typ: Type, MaxSize: v.maxSize, ExactAlg: true}
	t, err := jose.Parse(proof, opts.MaxSize)
	if err != nil {
		return err
	}
	if err := t.CheckHeader(opts); err != nil {
		return err
	}
	if err := t.VerifyWith(key, true); err != nil {
		return err
	}
	if err := netjson.DecodeClaims(t.Payload, c); err != nil {
		return err
	}
	if err := jose.CheckTimes(jose.TimeRules{Now: v.now(), Skew: v.skew, RequireExp: true, MaxLifetime: v.maxLifetime}, c.Exp, nil, nil); err != nil {
		return err
	}
	if c.Jti == "" {
		return errcode.New(errcode.MissingClaim, "jti is required")
	}
	if len(c.Aud) != 1 || !contains(v.audiences, c.Aud[0]) {
		return errcode.New(errcode.AudienceMismatch, "aud is not this recipient")
	}
	if c.Wth == "" || c.Wth != wth {
		return errcode.New(errcode.WITBindingMismatch, "wth does not match the WIT")
	}
	if err := checkBinding(c.Ath, b.AccessToken, errcode.OtherTokenBindingMismatch, "ath", "access token"); err != nil {
		return err
	}
	if err := checkBinding(c.Tth, b.TxnToken, errcode.TxnTokenBindingMismatch, "tth", "Txn-Token"); err != nil {
		return err
	}
	if err := checkRequest(c.Oth, b.Request); err != nil {
		return err
	}
	if err := checkOther(c.Oth, b.Other); err != nil {
		return err
	}
	if err := checkBinding(c.Dth, b.DialogContext, errcode.DialogContextBindingMismatch, "dth", "Dialog-Context"); err != nil {
		return err
	}
	return nil
}

// checkBinding: the claim is present exactly when the field is, and matches its hash.
func checkBinding(claim string, field *string, code errcode.Code, name, what string) error {
	switch {
	case field == nil && claim != "":
		return errcode.New(code, "%s is present but the request carries no %s", name, what)
	case field != nil && claim == "":
		return errcode.New(code, "the request carries %s but the proof has no %s", what, name)
	case field != nil && claim != boundHash(*field):
		return errcode.New(code, "%s does not match the %s", name, what)
	}
	return nil
}

// checkOther: every oth entry must be understood (a field present with that hash), and
// every context token in the request must be covered (WPT-9).
func checkOther(oth map[string]string, other map[string]string) error {
	if len(oth) == 0 && len(other) == 0 {
		return nil // nothing claimed, nothing to cover
	}
	names := make([]string, 0, len(oth))
	for n := range oth {
		if !isRequestKey(n) { // checkRequest's
			names = append(names, n)
		}
	}
	sort.Strings(names)
	lower := make(map[string]string, len(other))
	for n, val := range other {
		lower[strings.ToLower(n)] = val
	}
	for _, n := range names {
		val, ok := lower[n]
		if !ok {
			return errcode.New(errcode.OtherTokenBindingMismatch, "oth names %q, which the request does not carry", errcode.Cut(n))
		}
		if oth[n] != boundHash(val) {
			return errcode.New(errcode.OtherTokenBindingMismatch, "oth[%q] does not match the field", errcode.Cut(n))
		}
	}
	for n := range lower {
		if _, ok := oth[n]; !ok && !isRequestKey(n) {
			return errcode.New(errcode.OtherTokenBindingMismatch, "context token %q is not covered by oth", errcode.Cut(n))
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
