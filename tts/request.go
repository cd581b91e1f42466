package tts

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Bounds of a token request. A Txn-Token request is small: a subject token of a few
// KiB and two JSON objects of context. The bounds stop a caller from making the TTS
// parse megabytes, and the nesting bound stops a deep JSON bomb.
const (
	DefaultMaxBodySize   = 64 << 10
	MaxSubjectTokenSize  = 16 << 10
	MaxContextSize       = 8 << 10
	MaxContextDepth      = 8
	MaxScopeSize         = 1 << 10
	MaxParamSize         = 1 << 10 // every other parameter
	MaxDialogLength      = 256
	maxParams            = 64
	maxClientAssertion   = 8 << 10
	maxContextMembers    = 64
	maxContextMemberName = 128
)

// TokenRequest is a parsed token request (oauth.md 1.3). Parsing checks syntax and
// bounds only; what the values mean is decided by the Server.
type TokenRequest struct {
	GrantType          string
	RequestedTokenType string
	Audience           string
	Scope              []string
	SubjectToken       string
	SubjectTokenType   string
	// RequestContext and RequestDetails are the members of the JSON objects of
	// request_context and request_details (nil when absent). Each value is kept as the
	// JSON text the client sent, so that it enters tctx or rctx exactly as sent (no
	// float rounding of large numbers) and is decoded only as far as needed.
	RequestContext map[string]json.RawMessage
	RequestDetails map[string]json.RawMessage

	ClientID            string
	ClientAssertion     string
	ClientAssertionType string

	dialog string
}

// Dialog returns request_details.dlg ("" when absent).
func (r *TokenRequest) Dialog() string { return r.dialog }

// params the TTS understands; any other parameter is ignored (RFC 6749 section 3.2:
// "the authorization server MUST ignore unrecognized request parameters"), except the
// ones in refused, which would change the meaning of the request if ignored.
const (
	pGrantType = iota
	pRequestedTokenType
	pAudience
	pScope
	pSubjectToken
	pSubjectTokenType
	pRequestContext
	pRequestDetails
	pClientID
	pClientAssertion
	pClientAssertionType
	nParams
)

var paramNames = [nParams]string{"grant_type", "requested_token_type", "audience", "scope", "subject_token",
	"subject_token_type", "request_context", "request_details", "client_id", "client_assertion", "client_assertion_type"}

var paramMax = [nParams]int{MaxParamSize, MaxParamSize, MaxParamSize, MaxScopeSize, MaxSubjectTokenSize,
	MaxParamSize, MaxContextSize, MaxContextSize, MaxParamSize, maxClientAssertion, MaxParamSize}

func paramIndex(name string) int {
	for i, n := range paramNames {
		if n == name {
			return i
		}
	}
	return -1
}

// refused are RFC 8693 parameters a TTS does not use (oauth.md 1.3): a caller that sends
// them expects an effect (an actor, a resource restriction) the token would not have.
var refused = map[string]string{
	"actor_token":      "actor_token was removed from Transaction Tokens and is not accepted",
	"actor_token_type": "actor_token was removed from Transaction Tokens and is not accepted",
	"resource":         "resource is not used by a Transaction Token Service; name the trust domain in audience",
}

// ParseTokenRequest parses a form-encoded token request body (RFC 6749 Appendix B).
// Every rejection is an *errcode.Error with code invalid_request (body_too_large for
// an oversized body). A parameter given twice is refused (RFC 6749 section 3.2), so one
// party cannot read one value and another party the other.
//
// It is one pass over the body without an intermediate map: token requests are parsed
// on every issuance, and url.ParseQuery's map of slices costs more than the rest of the
// parse.
func ParseTokenRequest(body []byte) (*TokenRequest, error) {
	if len(body) > DefaultMaxBodySize {
		return nil, errcode.New(errcode.BodyTooLarge, "request body over %d octets", DefaultMaxBodySize)
	}
	// The body is copied once, as a whole (the caller's buffer is never retained).
	return parseTokenRequest(string(body))
}

// parseTokenRequest is ParseTokenRequest of a body the request may keep: a value
// without escapes is a substring of it, one with escapes is unescaped into a string of
// its own.
func parseTokenRequest(rest string) (*TokenRequest, error) {
	if len(rest) > DefaultMaxBodySize {
		return nil, errcode.New(errcode.BodyTooLarge, "request body over %d octets", DefaultMaxBodySize)
	}
	var (
		vals    [nParams]string
		present [nParams]bool
		others  []string
	)
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
		name, err := unescape(rawName)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "the body is not application/x-www-form-urlencoded")
		}
		i := paramIndex(name)
		if i < 0 {
			if why, bad := refused[name]; bad {
				return nil, invalid("%s", why)
			}
			for _, o := range others {
				if o == name {
					return nil, invalid("parameter %q appears more than once", truncate(name))
				}
			}
			others = append(others, name)
			continue
		}
		if present[i] {
			return nil, invalid("parameter %s appears more than once", name)
		}
		if len(rawValue) > 3*paramMax[i] {
			return nil, invalid("parameter %s is over %d octets", name, paramMax[i])
		}
		v, err := unescape(rawValue)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "the body is not application/x-www-form-urlencoded")
		}
		if len(v) > paramMax[i] {
			return nil, invalid("parameter %s is over %d octets", name, paramMax[i])
		}
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return nil, invalid("parameter %s is not valid UTF-8 text", name)
		}
		vals[i], present[i] = v, true
	}
	r := &TokenRequest{
		GrantType: vals[pGrantType], RequestedTokenType: vals[pRequestedTokenType], Audience: vals[pAudience],
		SubjectToken: vals[pSubjectToken], SubjectTokenType: vals[pSubjectTokenType], ClientID: vals[pClientID],
		ClientAssertion: vals[pClientAssertion], ClientAssertionType: vals[pClientAssertionType],
	}
	var err error
	if present[pScope] {
		if r.Scope, err = ParseScope(vals[pScope]); err != nil {
			return nil, err
		}
	}
	if present[pRequestContext] {
		if r.RequestContext, err = contextParam(vals[pRequestContext], "request_context"); err != nil {
			return nil, err
		}
	}
	if present[pRequestDetails] {
		if r.RequestDetails, err = contextParam(vals[pRequestDetails], "request_details"); err != nil {
			return nil, err
		}
	}
	if d, ok := r.RequestDetails[txntoken.DialogMember]; ok {
		if !decodeDialog(d, &r.dialog) || !validDialog(r.dialog) {
			return nil, invalid("request_details.dlg must be a string of 1 to %d printable ASCII characters", MaxDialogLength)
		}
	}
	return r, nil
}

// unescape is url.QueryUnescape; s itself when it has nothing to unescape, and the
// constant when s is the escaped form of one of the URNs in escapedURNs.
func unescape(s string) (string, error) {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s, nil
	}
	if u, ok := escapedURNs[s]; ok {
		return u, nil
	}
	return url.QueryUnescape(s)
}

// escapedURNs maps the text url.QueryEscape (and so url.Values.Encode) writes for each
// URN of this profile back to the URN: grant_type, requested_token_type and
// subject_token_type arrive in this form on every request, and the table spares each
// of them an unescaped copy. QueryUnescape(QueryEscape(u)) is u, so the answer is the
// one QueryUnescape would give (TestEscapedURNs); any other spelling takes that path.
var escapedURNs = func() map[string]string {
	m := map[string]string{}
	for _, u := range []string{GrantTypeTokenExchange, TokenTypeTxnToken, TokenTypeTxnToken08, TokenTypeAccessToken,
		TokenTypeIDToken, TokenTypeJWT, TokenTypeRefreshToken, TokenTypeSAML1, TokenTypeSAML2, TokenTypeSelfSigned,
		TokenTypeUnsignedJSON, ClientAssertionTypeJWTBearer} {
		m[url.QueryEscape(u)] = u
	}
	return m
}()

// CheckRequired applies the REQUIRED rules of oauth.md 1.3 in a fixed order, so that
// the error a client sees does not depend on map iteration: first the grant type
// (unsupported_grant_type), then the requested token type, then the other parameters.
func (r *TokenRequest) CheckRequired() error {
	switch {
	case r.GrantType == "":
		return invalid("grant_type is required")
	case r.GrantType != GrantTypeTokenExchange:
		return errcode.New(errcode.UnsupportedGrantType, "grant_type must be %s", GrantTypeTokenExchange)
	case r.RequestedTokenType == "":
		return invalid("requested_token_type is required")
	case r.RequestedTokenType != TokenTypeTxnToken && r.RequestedTokenType != TokenTypeTxnToken08:
		return errcode.New(errcode.UnsupportedTokenType, "requested_token_type must be %s", TokenTypeTxnToken)
	case r.Audience == "":
		return invalid("audience is required: the trust domain")
	case len(r.Scope) == 0:
		return invalid("scope is required and must not be empty")
	case r.SubjectToken == "":
		return invalid("subject_token is required")
	case r.SubjectTokenType == "":
		return invalid("subject_token_type is required")
	}
	return nil
}

// ParseScope splits a scope parameter (RFC 6749 section 3.3): scope tokens of
// %x21 / %x23-5B / %x5D-7E separated by single spaces. Repeated tokens are kept once.
func ParseScope(s string) ([]string, error) {
	if s == "" {
		return nil, invalid("scope is empty")
	}
	n := strings.Count(s, " ") + 1
	out := make([]string, 0, n)
	// A few tokens are checked for repeats by a scan of out; a map only for many.
	var seen map[string]bool
	if n > 16 {
		seen = make(map[string]bool, n)
	}
	for rest := s; ; {
		p, after, more := strings.Cut(rest, " ")
		if p == "" {
			return nil, invalid("scope has an empty scope token (two spaces, or a leading or trailing space)")
		}
		for i := 0; i < len(p); i++ {
			c := p[i]
			if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
				return nil, invalid("scope token has character %q, outside RFC 6749 section 3.3", c)
			}
		}
		switch {
		case seen == nil:
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		case !seen[p]:
			seen[p] = true
			out = append(out, p)
		}
		if !more {
			break
		}
		rest = after
	}
	return out, nil
}

// contextParam decodes request_context or request_details: plain JSON text of one
// object (oauth.md 1.3; the base64url step was removed in -07), bounded in size, depth
// and member count. Member values stay JSON text; they are validated JSON (the decoder
// checks them) and are decoded only when needed.
func contextParam(raw, name string) (map[string]json.RawMessage, error) {
	if err := checkDepth(raw, MaxContextDepth); err != nil {
		return nil, invalid("%s: %v", name, err)
	}
	m, ok := plainContext(raw)
	if !ok {
		var decoded map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &decoded); err != nil || decoded == nil {
			return nil, invalid("%s must be a JSON object", name)
		}
		m = decoded
	}
	if len(m) > maxContextMembers {
		return nil, invalid("%s has more than %d members", name, maxContextMembers)
	}
	for k := range m {
		if k == "" || len(k) > maxContextMemberName {
			return nil, invalid("%s has a member name that is empty or over %d octets", name, maxContextMemberName)
		}
	}
	return m, nil
}

// plainContext decodes a context object in the plain form of jose.ScanPlainObject
// (members with plain names and plain string or integer values, each name once) to
// what json.Unmarshal into a map[string]json.RawMessage gives: each value's JSON text.
// Anything else, a repeated name included, is left to encoding/json (ok false).
// FuzzPlainContext compares the two.
func plainContext(raw string) (map[string]json.RawMessage, bool) {
	var (
		m    map[string]json.RawMessage
		text []byte // the values' text, copied once; each value is a capped slice of it
	)
	ok := jose.ScanPlainObject(raw, func(ns, vs jose.Span) bool {
		if m == nil {
			m, text = make(map[string]json.RawMessage), []byte(raw)
		}
		name := raw[ns.Start:ns.End]
		if _, dup := m[name]; dup {
			return false
		}
		m[name] = json.RawMessage(text[vs.Start:vs.End:vs.End])
		return true
	})
	if ok && m == nil {
		m = map[string]json.RawMessage{} // {}
	}
	return m, ok
}

// checkDepth refuses JSON nested deeper than max, before it is decoded. Brackets inside
// strings are skipped.
func checkDepth(s string, max int) error {
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return errcode.New(errcode.InvalidRequest, "JSON nested deeper than %d", max)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// decodeDialog decodes the JSON string d into *dst. A dialog identifier is printable
// ASCII (validDialog), so the common case is a string literal without escapes, which
// decodes to the octets between its quotes; anything else is left to encoding/json.
func decodeDialog(d json.RawMessage, dst *string) bool {
	if len(d) >= 2 && d[0] == '"' && d[len(d)-1] == '"' {
		in := d[1 : len(d)-1]
		plain := true
		for _, c := range in {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				plain = false
				break
			}
		}
		if plain {
			*dst = string(in)
			return true
		}
	}
	return json.Unmarshal(d, dst) == nil
}

// validDialog: a dialog identifier is opaque to the TTS (dialog-binding section 4), but
// it is compared octet for octet with the Dialog-Context field, so it must be printable
// ASCII that survives an HTTP field unchanged.
func validDialog(s string) bool {
	if s == "" || len(s) > MaxDialogLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
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
