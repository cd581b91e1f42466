package txntoken

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Verifier validates Txn-Tokens at a receiver (oauth.md 1.10): the JWS signature with
// the key the TTS JWKS names by kid (a keys.RemoteSet refetches on an unknown kid, rate
// limited), typ txntoken+jwt, alg on the allow-list and the key's one algorithm, aud
// equal to the receiver's trust domain, exp not passed, and the claims the format
// requires (oauth.md 1.7) present. It never takes a key from the token. Safe for
// concurrent use.
type Verifier struct {
	keys         keys.KeySet
	trustDomains []string
	issuer       string
	now          func() time.Time
	skew         time.Duration
	maxLifetime  time.Duration
	maxSize      int
	algs         []string
}

// VerifierOption configures a Verifier.
type VerifierOption func(*Verifier)

// WithIssuer also requires iss to equal iss (the TTS's issuer identifier).
func WithIssuer(iss string) VerifierOption { return func(v *Verifier) { v.issuer = iss } }

// WithClock sets the clock of NewVerifier (default time.Now). Time is an input: tests
// move it instead of sleeping. A nil clock keeps the default.
func WithClock(now func() time.Time) VerifierOption {
	return func(v *Verifier) { v.now = now }
}

// WithSkew sets the allowed clock skew (default DefaultSkew).
func WithSkew(d time.Duration) VerifierOption { return func(v *Verifier) { v.skew = d } }

// WithMaxLifetime refuses a token whose exp lies further than d ahead (default one
// hour: Txn-Tokens live minutes, oauth.md 1.8).
func WithMaxLifetime(d time.Duration) VerifierOption { return func(v *Verifier) { v.maxLifetime = d } }

// WithAlgorithms restricts the signing algorithms (default: all that package keys
// supports; never none, never a MAC).
func WithAlgorithms(algs ...string) VerifierOption {
	return func(v *Verifier) { v.algs = append(v.algs, algs...) }
}

// WithTrustDomains also accepts an aud equal to one of tds, besides the trust domain
// given to NewVerifier: a TTS serving several trust domains replaces the Txn-Tokens of
// each (oauth.md 1.8). A token still names exactly one trust domain.
func WithTrustDomains(tds ...string) VerifierOption {
	return func(v *Verifier) { v.trustDomains = append(v.trustDomains, tds...) }
}

// Defaults of a Verifier.
const (
	DefaultMaxLifetime  = time.Hour
	DefaultMaxTokenSize = 16 << 10
	DefaultSkew         = 30 * time.Second
)

// NewVerifier returns a Verifier for the receiver's trust domain, with the TTS's keys.
func NewVerifier(ks keys.KeySet, trustDomain string, opts ...VerifierOption) *Verifier {
	v := &Verifier{keys: ks, trustDomains: []string{trustDomain}, now: time.Now, skew: DefaultSkew, maxLifetime: DefaultMaxLifetime, maxSize: DefaultMaxTokenSize}
	for _, o := range opts {
		o(v)
	}
	if v.now == nil {
		v.now = time.Now
	}
	return v
}

// Verify validates raw and returns its claims. Numbers in tctx and rctx are
// json.Number, exactly as the TTS wrote them. Every rejection is an *errcode.Error.
func (v *Verifier) Verify(ctx context.Context, raw string) (*Claims, error) {
	if v.keys == nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, nil, "verifier has no keys")
	}
	t, err := jose.Verify(ctx, raw, jose.Options{Typ: Type, Algs: v.algs, MaxSize: v.maxSize}, v.keys)
	if err != nil {
		return nil, err
	}
	var c Claims
	// Claim names match exactly and are named once (RFC 7519 section 4): encoding/json
	// alone would read "AUD" as aud.
	if err := netjson.DecodeKeepingNumbers(t.Payload, &c); err != nil {
		if code := errcode.CodeOf(err); code != errcode.Unmapped {
			return nil, err
		}
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "Txn-Token claims are not the expected JSON")
	}
	switch {
	case c.Iat == nil:
		return nil, errcode.New(errcode.MissingClaim, "iat is required")
	case c.Exp == nil:
		return nil, errcode.New(errcode.MissingClaim, "exp is required")
	case len(c.Aud) == 0:
		return nil, errcode.New(errcode.MissingClaim, "aud is required")
	case c.Txn == "":
		return nil, errcode.New(errcode.MissingClaim, "txn is required")
	case c.Sub == "":
		return nil, errcode.New(errcode.MissingClaim, "sub is required")
	case c.Scope == "":
		return nil, errcode.New(errcode.MissingClaim, "scope is required")
	case c.ReqWL == "":
		return nil, errcode.New(errcode.MissingClaim, "req_wl is required")
	}
	// One trust domain per token (Q12), and it must be ours: a token is never accepted
	// outside its trust domain (oauth.md 1.7, 1.10 b).
	if len(c.Aud) != 1 || !slices.Contains(v.trustDomains, c.Aud[0]) {
		return nil, errcode.New(errcode.AudienceMismatch, "aud %q is not this trust domain", errcode.Cut(strings.Join(c.Aud, " ")))
	}
	if err := jose.CheckTimes(jose.TimeRules{Now: v.now(), Skew: v.skew, RequireExp: true, MaxLifetime: v.maxLifetime}, c.Exp, nil, c.Iat); err != nil {
		return nil, err
	}
	if v.issuer != "" && c.Iss != v.issuer {
		return nil, errcode.New(errcode.IssuerMismatch, "iss %q is not the configured TTS", errcode.Cut(c.Iss))
	}
	return &c, nil
}

// VerifyRequest validates the Txn-Token of a received request: the Txn-Token field must
// occur exactly once (oauth.md 1.10 item 1).
func (v *Verifier) VerifyRequest(ctx context.Context, r *http.Request) (*Claims, error) {
	vals := r.Header.Values(HeaderName)
	switch len(vals) {
	case 0:
		return nil, errcode.New(errcode.MissingCredential, "no Txn-Token field")
	case 1:
	default:
		return nil, errcode.New(errcode.DuplicateField, "more than one Txn-Token field")
	}
	raw := strings.TrimSpace(vals[0])
	if strings.Contains(raw, ",") {
		return nil, errcode.New(errcode.DuplicateField, "the Txn-Token field holds more than one token")
	}
	return v.Verify(ctx, raw)
}

// DialogMatches checks that the token records the dialog dlg in tctx.dlg
// (dialog-binding section 10): dialog_mismatch when it records another dialog, or none.
// The comparison is exact.
func DialogMatches(c *Claims, dlg string) error {
	if dlg == "" {
		return errcode.New(errcode.DialogMismatch, "no dialog to compare with")
	}
	got := c.Dialog()
	if got == "" {
		return errcode.New(errcode.DialogMismatch, "the Txn-Token records no dialog (tctx.dlg)")
	}
	if got != dlg {
		return errcode.New(errcode.DialogMismatch, "the Txn-Token was issued for another dialog")
	}
	return nil
}
