package witissuer

import (
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

// DefaultProofWindow is how far a request's iat may lie from the issuer's clock.
const DefaultProofWindow = 60 * time.Second

// Request is a request whose proof of possession has verified: Key is the key to
// certify, and the request JWS was signed with it.
type Request struct {
	Body   *RequestBody
	Claims RequestClaims
	// Key is the confirmation key (cnf.jwk), proven by the request's signature.
	Key *keys.PublicKey
	// Sub is the requested subject, zero when the request names none.
	Sub identifier.ID
	// TTL is the requested lifetime, zero when the request names none.
	TTL time.Duration
}

// proofRules are what checkProof needs from the server's configuration.
type proofRules struct {
	issuer string
	window time.Duration
	now    time.Time
}

// checkProof verifies the request JWS of body. Order and codes:
//
//  1. compact JWS, typ wit-request+jwt, no crit, no key-selecting header and no kid, a
//     signature algorithm (jose: malformed_token, wrong_type, forbidden_header,
//     unsupported_alg...);
//  2. claims decode (invalid_encoding, invalid_claim); cnf.jwk present with an alg
//     (missing_claim, *_confirmation_alg, invalid_key);
//  3. the signature verifies under cnf.jwk, and the header alg string-equals
//     cnf.jwk.alg (unsupported_alg, invalid_signature): proof of possession;
//  4. aud is exactly the issuer (audience_mismatch);
//  5. iat present (missing_claim), not after now+window (issued_in_future), not before
//     now-window (too_old);
//  6. jti present and at most MaxJTILength octets (missing_claim, invalid_claim);
//  7. sub, if present, a canonical workload identifier (the identifier codes).
//
// Nothing is claimed in the replay store here; the handler does that last.
func checkProof(body *RequestBody, rules proofRules) (*Request, error) {
	t, err := jose.Parse(body.Request, MaxTokenSize)
	if err != nil {
		return nil, err
	}
	if err := t.CheckHeader(jose.Options{Typ: RequestType}); err != nil {
		return nil, err
	}
	// The request is verified with the key it carries in cnf.jwk and nothing else: a
	// kid would name a key the issuer never looks up, and invites a verifier that does.
	if _, ok := t.HeaderMember("kid"); ok {
		return nil, errcode.New(errcode.ForbiddenHeader, "header \"kid\" is refused: the request is verified with its own cnf.jwk")
	}
	req := &Request{Body: body}
	if err := netjson.DecodeClaims(t.Payload, &req.Claims); err != nil {
		return nil, err
	}
	key, err := wit.ConfirmationKey(req.Claims.Cnf, nil)
	if err != nil {
		return nil, err
	}
	// The key to certify is the only key that may verify its own request: a request
	// signed by any other key proves nothing about this one.
	if err := t.VerifyWith(key, true); err != nil {
		return nil, err
	}
	req.Key = key
	c := &req.Claims
	if len(c.Aud) != 1 || c.Aud[0] != rules.issuer {
		return nil, errcode.New(errcode.AudienceMismatch, "aud must be exactly this issuer's identifier")
	}
	if c.Iat == nil {
		return nil, errcode.New(errcode.MissingClaim, "iat is required")
	}
	iat := c.Iat.Time()
	switch {
	case iat.After(rules.now.Add(rules.window)):
		return nil, errcode.New(errcode.IssuedInFuture, "iat %d is more than %s after now %d", int64(*c.Iat), rules.window, rules.now.Unix())
	case iat.Before(rules.now.Add(-rules.window)):
		return nil, errcode.New(errcode.TooOld, "iat %d is more than %s before now %d", int64(*c.Iat), rules.window, rules.now.Unix())
	}
	if c.Jti == "" {
		return nil, errcode.New(errcode.MissingClaim, "jti is required")
	}
	if len(c.Jti) > MaxJTILength {
		return nil, errcode.New(errcode.InvalidClaim, "jti longer than %d octets", MaxJTILength)
	}
	if c.Sub != "" {
		if req.Sub, err = identifier.Parse(c.Sub); err != nil {
			return nil, err
		}
	}
	if c.TTL != nil {
		req.TTL = c.TTL.Duration()
	}
	return req, nil
}
