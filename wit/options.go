package wit

import "time"

// The options of this package's three constructors read as every package of this
// module spells them (With..., WithClock taking func() time.Time): an option that makes
// sense for more than one constructor is one value that serves each of them, so that
// a test hands the same clock to its issuer, its validator and its source. An option
// of one constructor only is a compile error when passed to another, never an option
// quietly ignored.

// ValidatorOption configures NewValidator.
type ValidatorOption interface{ applyValidator(*Validator) }

// IssuerOption configures NewIssuer.
type IssuerOption interface{ applyIssuer(*Issuer) }

// SourceOption configures NewRefreshingSource.
type SourceOption interface{ applySource(*RefreshingSource) }

type validatorOption func(*Validator)

func (o validatorOption) applyValidator(v *Validator) { o(v) }

type sourceOption func(*RefreshingSource)

func (o sourceOption) applySource(s *RefreshingSource) { o(s) }

// ClockOption is the clock WithClock sets; it serves NewValidator, NewIssuer and
// NewRefreshingSource.
type ClockOption func() time.Time

func (now ClockOption) applyValidator(v *Validator)     { v.now = now }
func (now ClockOption) applyIssuer(i *Issuer)           { i.now = now }
func (now ClockOption) applySource(s *RefreshingSource) { s.now = now }

// WithClock sets the clock of NewValidator, NewIssuer or NewRefreshingSource (default
// time.Now). Time is an input: tests move it instead of sleeping. A nil clock keeps
// the default.
func WithClock(now func() time.Time) ClockOption { return ClockOption(now) }

// MaxLifetimeOption is the cap WithMaxLifetime sets; it serves NewValidator and
// NewIssuer, so that an issuer can be held to what its validators accept.
type MaxLifetimeOption time.Duration

func (d MaxLifetimeOption) applyValidator(v *Validator) { v.maxLifetime = time.Duration(d) }
func (d MaxLifetimeOption) applyIssuer(i *Issuer)       { i.maxLifetime = time.Duration(d) }

// WithMaxLifetime caps the lifetime of a WIT (default DefaultMaxLifetime, 24h): a
// Validator refuses one whose exp lies further ahead, an Issuer refuses a request for
// a longer one (never trimming it silently).
func WithMaxLifetime(d time.Duration) MaxLifetimeOption { return MaxLifetimeOption(d) }

var (
	_ ValidatorOption = ClockOption(nil)
	_ IssuerOption    = ClockOption(nil)
	_ SourceOption    = ClockOption(nil)
	_ ValidatorOption = MaxLifetimeOption(0)
	_ IssuerOption    = MaxLifetimeOption(0)
)

// WithSkew sets the allowed clock skew (default DefaultSkew, 30s; the conformance
// runner uses 0).
func WithSkew(d time.Duration) ValidatorOption {
	return validatorOption(func(v *Validator) { v.skew = d })
}

// WithIssuers requires iss to be one of these (wimse.md 2.5 step 8, creds §9.1).
func WithIssuers(iss ...string) ValidatorOption {
	return validatorOption(func(v *Validator) { v.issuers = append(v.issuers, iss...) })
}

// WithAlgorithms restricts the issuer's signing algorithms (default: all supported).
func WithAlgorithms(algs ...string) ValidatorOption {
	return validatorOption(func(v *Validator) { v.algs = append(v.algs, algs...) })
}

// WithConfirmationAlgorithms restricts cnf.jwk.alg (default: all supported).
func WithConfirmationAlgorithms(algs ...string) ValidatorOption {
	return validatorOption(func(v *Validator) { v.cnfAlgs = append(v.cnfAlgs, algs...) })
}

// WithCache keeps up to maxEntries validated WITs, each for at most maxAge (and never
// past its exp), so that a WIT seen again skips its signature verification. Time rules
// are still applied on every use. maxEntries <= 0 disables the cache (the default).
func WithCache(maxEntries int, maxAge time.Duration) ValidatorOption {
	return validatorOption(func(v *Validator) {
		if maxEntries > 0 {
			v.cache = newCache(maxEntries, maxAge)
		}
	})
}

// WithMaxSize bounds the token size (default 8 KiB).
func WithMaxSize(n int) ValidatorOption {
	return validatorOption(func(v *Validator) { v.maxSize = n })
}

// WithKeyAlgorithm sets the algorithm of the keys a RefreshingSource generates, one per
// WIT (default ES256).
func WithKeyAlgorithm(alg string) SourceOption {
	return sourceOption(func(s *RefreshingSource) { s.alg = alg })
}

// WithRefreshAt sets when a RefreshingSource refreshes its credential: after fraction
// of its lifetime (default DefaultRefreshFraction, 0.8) or margin before its expiry
// (default DefaultRefreshMargin, 30s), whichever comes first.
func WithRefreshAt(fraction float64, margin time.Duration) SourceOption {
	return sourceOption(func(s *RefreshingSource) { s.fraction, s.margin = fraction, margin })
}

// WithRetryInterval bounds how often a RefreshingSource retries a failing refresh while
// its current credential is still valid (default DefaultRetryInterval, 5s), so that an
// unreachable issuer is not hit on every call.
func WithRetryInterval(d time.Duration) SourceOption {
	return sourceOption(func(s *RefreshingSource) { s.retry = d })
}

// WithFetchTimeout bounds one fetch of a RefreshingSource (default DefaultFetchTimeout,
// 30s). The fetch does not stop when the caller that started it gives up, since other
// callers may be waiting for it.
func WithFetchTimeout(d time.Duration) SourceOption {
	return sourceOption(func(s *RefreshingSource) { s.fetchTimeout = d })
}
