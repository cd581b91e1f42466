package chaining

import (
	"net/url"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// Bounds of a chaining token request: one JWT (a subject Txn-Token or an assertion) of
// a few KiB and a handful of short parameters. The body bound is the token endpoint's
// (package oauth), which the TTS shares.
const (
	MaxBodySize     = oauth.DefaultMaxBodySize
	MaxAssertion    = 8 << 10
	MaxSubjectToken = oauth.MaxSubjectTokenSize
	maxParam        = 1 << 10
)

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
}

// bearerSizes bound every parameter of a jwt-bearer request (maxParam for any other).
var bearerSizes = map[string]int{"assertion": MaxAssertion, "client_assertion": MaxAssertion, "scope": oauth.MaxScopeSize}

// ParseJWTBearerRequest parses a jwt-bearer token request body: oauth.ParseTokenRequest,
// then the checks of checkBearerRequest.
func ParseJWTBearerRequest(body []byte) (*JWTBearerRequest, error) {
	tr, err := parseChecked(body, checkBearerRequest)
	if err != nil {
		return nil, err
	}
	return &JWTBearerRequest{Assertion: tr.Assertion, Resource: tr.Resource, ClientID: tr.ClientID, Scope: tr.Scope}, nil
}

// parseChecked parses a token request body (oauth.ParseTokenRequest) and applies a
// grant's checks to it: what the GrantIssuer's and the JWTBearer's Check apply at the
// token endpoint.
func parseChecked(body []byte, check func(*oauth.TokenRequest) error) (*oauth.TokenRequest, error) {
	tr, err := oauth.ParseTokenRequest(body)
	if err == nil {
		err = check(tr)
	}
	if err != nil {
		return nil, err
	}
	return tr, nil
}

// checkBearerRequest checks a parsed request as a jwt-bearer request: syntax and
// bounds only: grant_type (unsupported_grant_type), one assertion, scope syntax, one
// resource. Every rejection is an *errcode.Error (invalid_request,
// unsupported_grant_type).
func checkBearerRequest(tr *oauth.TokenRequest) error {
	if err := tr.CheckBounds(bearerSizes, maxParam); err != nil {
		return err
	}
	switch gt := tr.GrantType; {
	case gt == "":
		return invalid("grant_type is required")
	case gt != GrantTypeJWTBearer:
		return errcode.New(errcode.UnsupportedGrantType, "grant_type must be %s", GrantTypeJWTBearer)
	}
	if tr.Assertion == "" {
		return invalid("assertion is required: one JWT authorization grant")
	}
	if strings.Count(tr.Assertion, ".") != 2 {
		return invalid("assertion is not one compact JWS")
	}
	if tr.Has("resource") {
		return checkResource(tr.Resource)
	}
	return nil
}

// GrantRequest is a parsed token exchange request for a JWT authorization grant
// (oauth.md 2.2; RFC 8693 section 2.1).
type GrantRequest struct {
	// RequestedTokenType is "", TokenTypeJWT or TokenTypeIDJAG.
	RequestedTokenType string
	SubjectToken       string
	SubjectTokenType   string
	// Audience and Resource name the peer AS; at least one is present.
	Audience string
	Resource string
	// Scope is the requested scope (nil: not requested).
	Scope []string
}

// grantSizes bound every parameter of a grant request (maxParam for any other).
var grantSizes = map[string]int{"subject_token": MaxSubjectToken, "client_assertion": MaxAssertion, "scope": oauth.MaxScopeSize}

// grantRefused are RFC 8693 parameters AS A does not use; ignoring them would give the
// caller less than it asked for.
var grantRefused = []string{"actor_token", "actor_token_type"}

// ParseGrantRequest parses a token exchange request for a JWT authorization grant:
// oauth.ParseTokenRequest, then the checks of checkGrantRequest.
func ParseGrantRequest(body []byte) (*GrantRequest, error) {
	tr, err := parseChecked(body, checkGrantRequest)
	if err != nil {
		return nil, err
	}
	return &GrantRequest{RequestedTokenType: tr.RequestedTokenType, SubjectToken: tr.SubjectToken,
		SubjectTokenType: tr.SubjectTokenType, Audience: tr.Audience, Resource: tr.Resource, Scope: tr.Scope}, nil
}

// checkGrantRequest checks a parsed request as a grant request: bounds and the
// REQUIRED parameters; what they mean is decided by the GrantIssuer. One audience or
// resource, each at most once: a grant names one AS.
func checkGrantRequest(tr *oauth.TokenRequest) error {
	if err := tr.CheckBounds(grantSizes, maxParam); err != nil {
		return err
	}
	switch gt := tr.GrantType; {
	case gt == "":
		return invalid("grant_type is required")
	case gt != oauth.GrantTypeTokenExchange:
		return errcode.New(errcode.UnsupportedGrantType, "grant_type must be %s", oauth.GrantTypeTokenExchange)
	}
	for _, p := range grantRefused {
		if tr.Has(p) {
			return invalid("%s is not accepted: a JWT authorization grant carries no actor", p)
		}
	}
	switch {
	case tr.RequestedTokenType != "" && tr.RequestedTokenType != TokenTypeJWT && tr.RequestedTokenType != TokenTypeIDJAG:
		return errcode.New(errcode.UnsupportedTokenType, "requested_token_type must be %s (a JWT authorization grant) or %s", TokenTypeJWT, TokenTypeIDJAG)
	case tr.RequestedTokenType == TokenTypeIDJAG && tr.Audience == "":
		// ID-JAG draft section 4.3: audience is REQUIRED, and names the AS; resource
		// names the protected resource, never the AS.
		return invalid("audience is required for an ID-JAG: the resource authorization server")
	case tr.SubjectToken == "":
		return invalid("subject_token is required")
	case tr.SubjectTokenType == "":
		return invalid("subject_token_type is required")
	case tr.Audience == "" && tr.Resource == "":
		return invalid("audience or resource is required: the peer authorization server")
	}
	if tr.Has("resource") {
		return checkResource(tr.Resource)
	}
	return nil
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
