package chaining

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/tts"
)

// Bounds of a chaining token request: one JWT (a subject Txn-Token or an assertion) of
// a few KiB and a handful of short parameters. The body bound is the TTS's, since both
// share the token endpoint.
const (
	MaxBodySize     = tts.DefaultMaxBodySize
	MaxAssertion    = 8 << 10
	MaxSubjectToken = tts.MaxSubjectTokenSize
	maxParam        = 1 << 10
	maxParams       = 64
)

// form is a parsed application/x-www-form-urlencoded body (RFC 6749 Appendix B) in
// which every parameter occurs at most once (RFC 6749 section 3.2).
type form map[string]string

// parseForm decodes body strictly: a parameter given twice is refused (one party could
// read one value and another party the other), values must be UTF-8 text without NUL,
// each within its bound (sizes; maxParam for any other). Unknown parameters are kept
// and ignored by the callers (RFC 6749 section 3.2).
func parseForm(body []byte, sizes map[string]int) (form, error) {
	if len(body) > MaxBodySize {
		return nil, errcode.New(errcode.BodyTooLarge, "request body over %d octets", MaxBodySize)
	}
	f := form{}
	rest := string(body)
	for n := 0; rest != ""; n++ {
		if n >= maxParams {
			return nil, invalid("more than %d parameters", maxParams)
		}
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "the body is not application/x-www-form-urlencoded")
		}
		if len(name) > maxParam {
			return nil, invalid("a parameter name is over %d octets", maxParam)
		}
		if _, dup := f[name]; dup {
			return nil, invalid("parameter %q appears more than once", truncate(name))
		}
		limit, ok := sizes[name]
		if !ok {
			limit = maxParam
		}
		if len(rawValue) > 3*limit {
			return nil, invalid("parameter %s is over %d octets", truncate(name), limit)
		}
		v, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "the body is not application/x-www-form-urlencoded")
		}
		if len(v) > limit {
			return nil, invalid("parameter %s is over %d octets", truncate(name), limit)
		}
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return nil, invalid("parameter %s is not valid UTF-8 text", truncate(name))
		}
		f[name] = v
	}
	return f, nil
}

// tokenRequest is what the tts authenticators look at: client_id and the
// private_key_jwt parameters. The WIMSE methods (WIT + HTTP signature or WPT) read the
// HTTP request itself.
func (f form) tokenRequest() *tts.TokenRequest {
	return &tts.TokenRequest{GrantType: f["grant_type"], ClientID: f["client_id"],
		ClientAssertion: f["client_assertion"], ClientAssertionType: f["client_assertion_type"]}
}

// JWTBearerRequest is a parsed RFC 7523 section 2.1 request (oauth.md 2.4, 4.1).
type JWTBearerRequest struct {
	// Assertion is the JWT authorization grant.
	Assertion string
	// Scope is the requested scope (nil: not requested).
	Scope []string
	// Resource is the RFC 8707 resource ("" when absent).
	Resource string
	// ClientID, when sent, must name the authenticated workload.
	ClientID string

	form form
}

var bearerSizes = map[string]int{"assertion": MaxAssertion, "client_assertion": MaxAssertion, "scope": tts.MaxScopeSize}

// ParseJWTBearerRequest parses a jwt-bearer token request body. It checks syntax and
// bounds only: grant_type (unsupported_grant_type), one assertion, scope syntax, one
// resource. Every rejection is an *errcode.Error (invalid_request, body_too_large,
// unsupported_grant_type).
func ParseJWTBearerRequest(body []byte) (*JWTBearerRequest, error) {
	f, err := parseForm(body, bearerSizes)
	if err != nil {
		return nil, err
	}
	switch gt := f["grant_type"]; {
	case gt == "":
		return nil, invalid("grant_type is required")
	case gt != GrantTypeJWTBearer:
		return nil, errcode.New(errcode.UnsupportedGrantType, "grant_type must be %s", GrantTypeJWTBearer)
	}
	r := &JWTBearerRequest{Assertion: f["assertion"], Resource: f["resource"], ClientID: f["client_id"], form: f}
	if r.Assertion == "" {
		return nil, invalid("assertion is required: one JWT authorization grant")
	}
	if strings.Count(r.Assertion, ".") != 2 {
		return nil, invalid("assertion is not one compact JWS")
	}
	if s, ok := f["scope"]; ok {
		if r.Scope, err = tts.ParseScope(s); err != nil {
			return nil, err
		}
	}
	if _, ok := f["resource"]; ok {
		if err := checkResource(r.Resource); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// GrantRequest is a parsed token exchange request for a JWT authorization grant
// (oauth.md 2.2; RFC 8693 section 2.1).
type GrantRequest struct {
	// RequestedTokenType is "" or TokenTypeJWT.
	RequestedTokenType string
	SubjectToken       string
	SubjectTokenType   string
	// Audience and Resource name the peer AS; at least one is present.
	Audience string
	Resource string
	// Scope is the requested scope (nil: not requested).
	Scope []string

	form form
}

var grantSizes = map[string]int{"subject_token": MaxSubjectToken, "client_assertion": MaxAssertion, "scope": tts.MaxScopeSize}

// grantRefused are RFC 8693 parameters AS A does not use; ignoring them would give the
// caller less than it asked for.
var grantRefused = []string{"actor_token", "actor_token_type"}

// ParseGrantRequest parses a token exchange request for a JWT authorization grant. It
// checks syntax and bounds and the REQUIRED parameters; what they mean is decided by
// the GrantIssuer. One audience or resource, each at most once: a grant names one AS.
func ParseGrantRequest(body []byte) (*GrantRequest, error) {
	f, err := parseForm(body, grantSizes)
	if err != nil {
		return nil, err
	}
	switch gt := f["grant_type"]; {
	case gt == "":
		return nil, invalid("grant_type is required")
	case gt != tts.GrantTypeTokenExchange:
		return nil, errcode.New(errcode.UnsupportedGrantType, "grant_type must be %s", tts.GrantTypeTokenExchange)
	}
	for _, p := range grantRefused {
		if _, ok := f[p]; ok {
			return nil, invalid("%s is not accepted: a JWT authorization grant carries no actor", p)
		}
	}
	r := &GrantRequest{RequestedTokenType: f["requested_token_type"], SubjectToken: f["subject_token"],
		SubjectTokenType: f["subject_token_type"], Audience: f["audience"], Resource: f["resource"], form: f}
	switch {
	case r.RequestedTokenType != "" && r.RequestedTokenType != TokenTypeJWT:
		return nil, errcode.New(errcode.UnsupportedTokenType, "requested_token_type must be %s (a JWT authorization grant)", TokenTypeJWT)
	case r.SubjectToken == "":
		return nil, invalid("subject_token is required")
	case r.SubjectTokenType == "":
		return nil, invalid("subject_token_type is required")
	case r.Audience == "" && r.Resource == "":
		return nil, invalid("audience or resource is required: the peer authorization server")
	}
	if _, ok := f["resource"]; ok {
		if err := checkResource(r.Resource); err != nil {
			return nil, err
		}
	}
	if s, ok := f["scope"]; ok {
		if r.Scope, err = tts.ParseScope(s); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// checkResource: RFC 8707 section 2: an absolute URI without a fragment.
func checkResource(s string) error {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Fragment != "" || strings.Contains(s, "#") {
		return invalid("resource must be an absolute URI without a fragment")
	}
	return nil
}

func invalid(format string, args ...any) *errcode.Error {
	return errcode.New(errcode.InvalidRequest, format, args...)
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
