package jose

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// NumericDate is an RFC 7519 NumericDate. Fractions are truncated.
type NumericDate int64

// UnmarshalJSON accepts a JSON number only. (encoding/json hands over a syntactically
// valid value, so a number parses with strconv; a string or object does not.)
func (d *NumericDate) UnmarshalJSON(b []byte) error {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || len(b) == 0 || b[0] == '+' || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1<<53 {
		return errcode.New(errcode.InvalidClaim, "NumericDate is not a non-negative number")
	}
	*d = NumericDate(int64(f))
	return nil
}

// PlainJSONForm tells package netjson's fast path that UnmarshalJSON stores a plain
// integer (digits only, at most 15 of them: below 2^53, exact through the float) as that
// integer, so that it may read one without the float.
func (NumericDate) PlainJSONForm() netjson.PlainForm { return netjson.PlainInteger }

// Time converts to time.Time.
func (d NumericDate) Time() time.Time { return time.Unix(int64(d), 0) }

// Audience is an RFC 7519 aud: one string or an array of strings.
type Audience []string

// UnmarshalJSON accepts a string or an array of strings.
func (a *Audience) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		s, err := netjson.DecodeString(b)
		if err != nil {
			return errcode.New(errcode.InvalidClaim, "aud is not a string")
		}
		*a = Audience{s}
		return nil
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return errcode.New(errcode.InvalidClaim, "aud is neither a string nor an array of strings")
	}
	*a = ss
	return nil
}

// PlainJSONForm tells package netjson's fast path that UnmarshalJSON stores a plain
// string (printable ASCII, no escape) as a one-element list.
func (Audience) PlainJSONForm() netjson.PlainForm { return netjson.PlainStringOrList }

// MarshalJSON writes a single audience as a string (as most peers expect).
func (a Audience) MarshalJSON() ([]byte, error) {
	if len(a) == 1 {
		return json.Marshal(a[0])
	}
	return json.Marshal([]string(a))
}

// Contains reports whether s is one of the audiences.
func (a Audience) Contains(s string) bool {
	for _, v := range a {
		if v == s {
			return true
		}
	}
	return false
}

// RegisteredClaims are the RFC 7519 section 4.1 claims that a grant AS A issues and a
// subject token the TTS reads have in common: iss, sub, aud and the three times.
// Embedded (not named) in a claims type, they are written in this order, at the place
// of the embedding, exactly as if the fields were the type's own, and decoded the same
// way (package netjson matches promoted fields like direct ones).
//
// jti (section 4.1.7) is not among them: a type whose reader checks it declares it
// itself, next to the embedding. A reader that does not check jti (the TTS's subject
// token handler) must not refuse a token over it, as it would over a jti that is not a
// string, or named twice, if the field were there.
type RegisteredClaims struct {
	Iss string       `json:"iss"`
	Sub string       `json:"sub"`
	Aud Audience     `json:"aud"`
	Iat *NumericDate `json:"iat,omitempty"`
	Nbf *NumericDate `json:"nbf,omitempty"`
	// Exp is written even when nil ("exp":null): every writer sets it, and a reader
	// requires it (CheckTimes with RequireExp).
	Exp *NumericDate `json:"exp"`
}

// TimeRules configures CheckTimes.
type TimeRules struct {
	Now  time.Time
	Skew time.Duration
	// RequireExp makes a missing exp a MissingClaim error.
	RequireExp bool
	// MaxLifetime, when positive, refuses tokens whose exp lies further than this past
	// now (LifetimeTooLong): a proof or token "valid for a year" is refused, not trusted.
	MaxLifetime time.Duration
}

// CheckTimes validates exp, nbf and iat (RFC 7519 sections 4.1.4-4.1.6). The current time
// must be before exp (plus skew); iat and nbf must not be after now (plus skew).
func CheckTimes(r TimeRules, exp, nbf, iat *NumericDate) error {
	now := r.Now
	if exp == nil {
		if r.RequireExp {
			return errcode.New(errcode.MissingClaim, "exp is required")
		}
	} else if !now.Before(exp.Time().Add(r.Skew)) {
		return errcode.New(errcode.Expired, "expired at %d, now %d", int64(*exp), now.Unix())
	}
	if iat != nil && iat.Time().After(now.Add(r.Skew)) {
		return errcode.New(errcode.IssuedInFuture, "iat %d is after now %d", int64(*iat), now.Unix())
	}
	if nbf != nil && nbf.Time().After(now.Add(r.Skew)) {
		return errcode.New(errcode.NotYetValid, "nbf %d is after now %d", int64(*nbf), now.Unix())
	}
	if exp != nil && r.MaxLifetime > 0 && exp.Time().Sub(now) > r.MaxLifetime+r.Skew {
		return errcode.New(errcode.LifetimeTooLong, "expires %s from now, limit %s", exp.Time().Sub(now), r.MaxLifetime)
	}
	return nil
}
