package oauth

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// Bounds of a token request. A token request is small: a subject token or an assertion
// of a few KiB and two JSON objects of context. The bounds stop a caller from making
// the endpoint parse megabytes, and the nesting bound stops a deep JSON bomb.
const (
	DefaultMaxBodySize   = 64 << 10
	MaxSubjectTokenSize  = 16 << 10
	MaxContextSize       = 8 << 10
	MaxContextDepth      = 8
	MaxScopeSize         = 1 << 10
	MaxParamSize         = 1 << 10 // every other parameter
	MaxDialogLength      = 128     // the Dialog-Context dlg limit (dialog.MaxDLGLength)
	MaxClientAssertion   = 8 << 10
	MaxContextMembers    = 64
	maxParams            = 64
	maxContextMemberName = 128
)

// dialogMember is the request_details member that names the dialog (dialog-binding
// section 10).
const dialogMember = "dlg"

// TokenRequest is a parsed token request (RFC 6749 section 3.2; RFC 8693 section 2.1;
// RFC 7523 section 2.1; oauth.md 1.3). Parsing checks syntax and bounds only; what the
// values mean, and which parameters a grant requires or refuses, is decided by the
// grant's handler.
type TokenRequest struct {
	GrantType          string
	RequestedTokenType string
	Audience           string
	// Resource is RFC 8707's resource (identity chaining; a TTS refuses it).
	Resource         string
	Scope            []string
	SubjectToken     string
	SubjectTokenType string
	// Assertion is RFC 7523's JWT authorization grant (jwt-bearer).
	Assertion string
	// RequestContext and RequestDetails are the members of the JSON objects of
	// request_context and request_details (nil when absent, and until DecodeContext).
	// Each value is kept as the JSON text the client sent, so that it enters tctx or
	// rctx exactly as sent (no float rounding of large numbers) and is decoded only as
	// far as needed.
	RequestContext map[string]json.RawMessage
	RequestDetails map[string]json.RawMessage

	ClientID            string
	ClientAssertion     string
	ClientAssertionType string

	dialog  string
	present uint32 // 1<<p for every parameter p of paramNames that was sent
	vals    [nParams]string
	// unknown summarises the parameters no grant reads, for CheckBounds.
	unknown struct {
		longestName, longestValue string // the longest name; the name of the longest value
		valueLen                  int
		notText                   string // the first whose value is not UTF-8 text
		undecodable               string // the first whose value is not form-encoded
	}
	bodySize int
}

// Dialog returns request_details.dlg ("" when absent or before DecodeContext).
func (r *TokenRequest) Dialog() string { return r.dialog }

// Has reports whether the request carried the parameter name (one of the parameters
// this package knows: those of RFC 6749, RFC 7523, RFC 8693, RFC 8707 and oauth.md
// 1.3).
func (r *TokenRequest) Has(name string) bool {
	i := paramIndex(name)
	return i >= 0 && r.present&(1<<i) != 0
}

// BodySize is the length of the body the request was parsed from.
func (r *TokenRequest) BodySize() int { return r.bodySize }

// Parameters every token endpoint grant understands; any other parameter is ignored
// (RFC 6749 section 3.2: "the authorization server MUST ignore unrecognized request
// parameters"). The ones after pClientAssertionType are loose: bounded and checked by
// the grants that read them (CheckBounds), as other parameters are.
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
	pResource
	pAssertion
	pActorToken
	pActorTokenType
	nParams
	nStrict = pResource
)

var paramNames = [nParams]string{"grant_type", "requested_token_type", "audience", "scope", "subject_token",
	"subject_token_type", "request_context", "request_details", "client_id", "client_assertion", "client_assertion_type",
	"resource", "assertion", "actor_token", "actor_token_type"}

var paramMax = [nStrict]int{MaxParamSize, MaxParamSize, MaxParamSize, MaxScopeSize, MaxSubjectTokenSize,
	MaxParamSize, MaxContextSize, MaxContextSize, MaxParamSize, MaxClientAssertion, MaxParamSize}

func paramIndex(name string) int {
	for i, n := range paramNames {
		if n == name {
			return i
		}
	}
	return -1
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
	r := new(TokenRequest)
	if err := parseInto(r, rest); err != nil {
		return nil, err
	}
	return r, nil
}

// parseInto is parseTokenRequest into *r, which must be zero (the endpoint allocates
// it with the request's Record).
func parseInto(r *TokenRequest, rest string) error {
	parses.Add(1)
	if len(rest) > DefaultMaxBodySize {
		return errcode.New(errcode.BodyTooLarge, "request body over %d octets", DefaultMaxBodySize)
	}
	r.bodySize = len(rest)
	var others []string
	for n := 0; rest != ""; n++ {
		if n >= maxParams {
			return invalid("more than %d parameters", maxParams)
		}
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if pair == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(pair, "=")
		name, err := unescape(rawName)
		if err != nil {
			return errcode.Wrap(errcode.InvalidRequest, err, "the body is not application/x-www-form-urlencoded")
		}
		i := paramIndex(name)
		if i < 0 || i >= nStrict {
			// A loose or unknown parameter: only its repetition is refused here.
			if i >= 0 && r.present&(1<<i) != 0 || i < 0 && slices.Contains(others, name) {
				return invalid("parameter %q appears more than once", errcode.Cut(name))
			}
			if i < 0 {
				others = append(others, name)
				r.noteUnknown(name, rawValue)
				continue
			}
			v, err := unescape(rawValue)
			if err != nil {
				r.unknown.undecodable = name
				v = ""
			}
			r.vals[i], r.present = v, r.present|1<<i
			continue
		}
		if r.present&(1<<i) != 0 {
			return invalid("parameter %s appears more than once", name)
		}
		if len(rawValue) > 3*paramMax[i] {
			return invalid("parameter %s is over %d octets", name, paramMax[i])
		}
		v, err := unescape(rawValue)
		if err != nil {
			return errcode.Wrap(errcode.InvalidRequest, err, "the body is not application/x-www-form-urlencoded")
		}
		if len(v) > paramMax[i] {
			return invalid("parameter %s is over %d octets", name, paramMax[i])
		}
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return invalid("parameter %s is not valid UTF-8 text", name)
		}
		r.vals[i], r.present = v, r.present|1<<i
	}
	v := &r.vals
	r.GrantType, r.RequestedTokenType, r.Audience, r.Resource = v[pGrantType], v[pRequestedTokenType], v[pAudience], v[pResource]
	r.SubjectToken, r.SubjectTokenType, r.Assertion, r.ClientID = v[pSubjectToken], v[pSubjectTokenType], v[pAssertion], v[pClientID]
	r.ClientAssertion, r.ClientAssertionType = v[pClientAssertion], v[pClientAssertionType]
	if r.present&(1<<pScope) != 0 {
		var err error
		if r.Scope, err = ParseScope(v[pScope]); err != nil {
			return err
		}
	}
	return nil
}

// noteUnknown keeps what CheckBounds needs to know of a parameter no grant reads.
func (r *TokenRequest) noteUnknown(name, rawValue string) {
	u := &r.unknown
	if len(name) > len(u.longestName) {
		u.longestName = name
	}
	v, err := unescape(rawValue)
	if err != nil {
		if u.undecodable == "" {
			u.undecodable = name
		}
		return
	}
	if len(v) > u.valueLen || u.longestValue == "" {
		u.longestValue, u.valueLen = name, len(v)
	}
	if u.notText == "" && (!utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0) {
		u.notText = name
	}
}

// CheckBounds applies a grant's own bounds to every parameter of the request, read by
// the grant or not: a value must be form-encoded UTF-8 text without NUL within
// limits[name] octets (other octets for a parameter not in limits), and a name at most
// other octets. Identity chaining's handlers use it (their requests carry one JWT and a
// handful of short parameters).
func (r *TokenRequest) CheckBounds(limits map[string]int, other int) error {
	limit := func(name string) int {
		if l, ok := limits[name]; ok {
			return l
		}
		return other
	}
	for i, name := range paramNames {
		if r.present&(1<<i) == 0 {
			continue
		}
		v := r.vals[i]
		if i >= nStrict && r.unknown.undecodable == name {
			return invalid("parameter %s is not application/x-www-form-urlencoded", name)
		}
		if l := limit(name); len(v) > l {
			return invalid("parameter %s is over %d octets", name, l)
		}
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return invalid("parameter %s is not valid UTF-8 text", name)
		}
	}
	u := &r.unknown
	switch {
	case len(u.longestName) > other:
		return invalid("a parameter name is over %d octets", other)
	case u.undecodable != "" && paramIndex(u.undecodable) < 0:
		return invalid("parameter %s is not application/x-www-form-urlencoded", errcode.Cut(u.undecodable))
	case u.longestValue != "" && u.valueLen > limit(u.longestValue):
		return invalid("parameter %s is over %d octets", errcode.Cut(u.longestValue), limit(u.longestValue))
	case u.notText != "":
		return invalid("parameter %s is not valid UTF-8 text", errcode.Cut(u.notText))
	}
	return nil
}

// DecodeContext decodes request_context and request_details (oauth.md 1.3: plain JSON
// text of one object each, bounded in size, depth and member count) and
// request_details.dlg, the dialog identifier (dialog-binding section 10). The
// Transaction Token Service calls it; other grants ignore both parameters.
func (r *TokenRequest) DecodeContext() error {
	var err error
	if r.present&(1<<pRequestContext) != 0 {
		if r.RequestContext, err = contextParam(r.vals[pRequestContext], "request_context"); err != nil {
			return err
		}
	}
	if r.present&(1<<pRequestDetails) != 0 {
		if r.RequestDetails, err = contextParam(r.vals[pRequestDetails], "request_details"); err != nil {
			return err
		}
	}
	if d, ok := r.RequestDetails[dialogMember]; ok {
		if r.dialog, err = netjson.DecodeString(d); err != nil || !ValidDialog(r.dialog) {
			return invalid("request_details.dlg must be a string of 1 to %d characters of [A-Za-z0-9._~:-] (a Dialog-Context dlg)", MaxDialogLength)
		}
	}
	return nil
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
	for _, u := range []string{GrantTypeTokenExchange, GrantTypeJWTBearer, TokenTypeTxnToken, TokenTypeTxnToken08,
		TokenTypeAccessToken, TokenTypeIDToken, TokenTypeJWT, TokenTypeRefreshToken, TokenTypeSAML1, TokenTypeSAML2,
		TokenTypeSelfSigned, TokenTypeUnsignedJSON, ClientAssertionTypeJWTBearer} {
		m[url.QueryEscape(u)] = u
	}
	return m
}()

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
	if err := CheckDepth(raw, MaxContextDepth); err != nil {
		return nil, invalid("%s: %v", name, err)
	}
	// encoding/json keeps the last of a repeated member, another reader of the same text
	// may keep the first: a repetition at any depth is refused, not resolved.
	m, err := netjson.DecodeMembers(raw)
	if err != nil {
		var dup *netjson.DuplicateError
		if errors.As(err, &dup) {
			return nil, invalid("%s names member %q twice in one object", name, dup.Name)
		}
		return nil, invalid("%s must be a JSON object", name)
	}
	if len(m) > MaxContextMembers {
		return nil, invalid("%s has more than %d members", name, MaxContextMembers)
	}
	for k := range m {
		if k == "" || len(k) > maxContextMemberName {
			return nil, invalid("%s has a member name that is empty or over %d octets", name, maxContextMemberName)
		}
	}
	return m, nil
}

// CheckDepth refuses JSON nested deeper than max, before it is decoded. Brackets inside
// strings are skipped.
func CheckDepth(s string, max int) error {
	if netjson.DeeperThan(s, max) {
		return errcode.New(errcode.InvalidRequest, "JSON nested deeper than %d", max)
	}
	return nil
}

// ValidDialog: a dialog identifier is opaque to the TTS (dialog-binding section 4), but
// it is compared octet for octet with the dlg of a Dialog-Context field, so it must be
// one that field can carry: the grammar of package dialog, 1 to MaxDialogLength
// characters of [A-Za-z0-9._~:-] (enough for UUIDs, ULIDs and URNs, and nothing that
// needs escaping where it is logged or stored). TestValidDialogIsDialogGrammar holds
// the two equal; package dialog imports this one, so the grammar cannot live there.
func ValidDialog(s string) bool {
	if s == "" || len(s) > MaxDialogLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '~' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

func invalid(format string, args ...any) *errcode.Error {
	return errcode.New(errcode.InvalidRequest, format, args...)
}
