package witissuer

import (
	"bytes"
	"crypto/rand"
	"strconv"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Wire constants of POST /v1/wit (docs/wit-issuer.md, "API").
const (
	// RequestType is the typ of the request JWS that proves possession of the key.
	RequestType = "wit-request+jwt"
	// AssertionType is the typ of a client assertion (draft-ietf-oauth-rfc7523bis
	// explicit typing; a plain "JWT" is refused): oauth.ClientAssertionType.
	AssertionType = oauth.ClientAssertionType
	// ClientAssertionTypeJWTBearer is the only accepted client_assertion_type:
	// oauth.ClientAssertionTypeJWTBearer.
	ClientAssertionTypeJWTBearer = oauth.ClientAssertionTypeJWTBearer

	PathWIT      = "/v1/wit"
	PathJWKS     = service.PathJWKS
	PathMetadata = "/.well-known/wit-issuer"
	PathHealthz  = service.PathHealthz
	PathReadyz   = service.PathReadyz
	PathMetrics  = service.PathMetrics

	// DefaultMaxBodySize bounds the request body.
	DefaultMaxBodySize = 64 << 10
	// MaxTokenSize bounds the request JWS and the client assertion
	// (oauth.MaxClientAssertion).
	MaxTokenSize = oauth.MaxClientAssertion
	// MaxJTILength bounds a jti: it becomes part of a replay-store key
	// (oauth.MaxAssertionJTI).
	MaxJTILength = oauth.MaxAssertionJTI
)

// RequestBody is the JSON body of POST /v1/wit.
type RequestBody struct {
	// Request is the compact request JWS (typ wit-request+jwt).
	Request string `json:"request"`
	// ClientAssertionType and ClientAssertion carry the assertion method's JWT.
	ClientAssertionType string `json:"client_assertion_type,omitempty"`
	ClientAssertion     string `json:"client_assertion,omitempty"`
}

// Response is the JSON body of a successful POST /v1/wit.
type Response struct {
	WIT       string `json:"wit"`
	ExpiresAt int64  `json:"expires_at"`
	Sub       string `json:"sub"`
}

// RequestClaims is the payload of the request JWS.
type RequestClaims struct {
	Aud jose.Audience     `json:"aud"`
	Iat *jose.NumericDate `json:"iat"`
	Jti string            `json:"jti"`
	Cnf *wit.Confirmation `json:"cnf"`
	Sub string            `json:"sub,omitempty"`
	TTL *Seconds          `json:"ttl,omitempty"`
}

// Seconds is a positive whole number of seconds in JSON.
type Seconds int64

// UnmarshalJSON accepts only a positive JSON integer (no fraction, no exponent, no sign):
// a lifetime of "3600.5" or "1e3" is refused rather than rounded.
func (s *Seconds) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n <= 0 || b[0] == '0' {
		return errcode.New(errcode.InvalidClaim, "ttl must be a positive integer number of seconds")
	}
	*s = Seconds(n)
	return nil
}

// Duration converts to time.Duration, saturating instead of overflowing.
func (s Seconds) Duration() time.Duration {
	if int64(s) > int64(1<<62)/int64(time.Second) {
		return time.Duration(1 << 62)
	}
	return time.Duration(s) * time.Second
}

// ParseBody decodes a request body. It is strict: unknown members, trailing data, a
// missing or oversized request, and an oversized assertion are invalid_request.
func ParseBody(b []byte) (*RequestBody, error) {
	if len(b) > DefaultMaxBodySize {
		return nil, errcode.New(errcode.BodyTooLarge, "body of %d octets, limit %d", len(b), DefaultMaxBodySize)
	}
	var body RequestBody
	n, err := netjson.DecodeOnlyKnown(b, &body)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "body is not the expected JSON object")
	}
	if len(bytes.TrimSpace(b[n:])) != 0 {
		return nil, errcode.New(errcode.InvalidRequest, "trailing data after the JSON body")
	}
	if body.Request == "" {
		return nil, errcode.New(errcode.InvalidRequest, `"request" (the request JWS) is required`)
	}
	if len(body.Request) > MaxTokenSize || len(body.ClientAssertion) > MaxTokenSize {
		return nil, errcode.New(errcode.TokenTooLong, "request JWS or client assertion over %d octets", MaxTokenSize)
	}
	return &body, nil
}

// RequestParams are the inputs of NewRequestJWS.
type RequestParams struct {
	// Audience is the issuer identifier (required).
	Audience string
	// Subject is the identifier to certify; empty asks for the authenticated identity.
	Subject string
	// TTL is the requested lifetime; zero asks for the issuer's default.
	TTL time.Duration
	// Now is the iat; zero means time.Now().
	Now time.Time
	// JTI is the request's unique id; empty means 128 random bits.
	JTI string
}

// NewRequestJWS builds the request JWS: the public half of key in cnf.jwk, signed with
// key itself, which is what proves possession.
func NewRequestJWS(key *keys.PrivateKey, p RequestParams) (string, error) {
	if key == nil || p.Audience == "" {
		return "", errcode.New(errcode.InvalidRequest, "a key and the issuer's identifier are required")
	}
	cnf, err := key.Public().ConfirmationJSON()
	if err != nil {
		return "", err
	}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	iat := jose.NumericDate(now.Unix())
	c := RequestClaims{Aud: jose.Audience{p.Audience}, Iat: &iat, Jti: p.JTI, Cnf: &wit.Confirmation{JWK: cnf}, Sub: p.Subject}
	if c.Jti == "" {
		c.Jti = rand.Text()
	}
	if p.TTL > 0 {
		secs := Seconds((p.TTL + time.Second - 1) / time.Second)
		c.TTL = &secs
	}
	return jose.SignClaims(RequestType, key, false, c)
}
