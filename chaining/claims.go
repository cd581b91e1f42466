package chaining

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"

	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// URNs and media types of identity chaining (oauth.md sections 2-4).
const (
	// GrantTypeJWTBearer is the RFC 7523 grant (AS B).
	GrantTypeJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// TokenTypeJWT is the requested and issued token type of a JWT authorization grant
	// (RFC 8693 section 3; the identity chaining example, oauth.md 2.2).
	TokenTypeJWT = "urn:ietf:params:oauth:token-type:jwt"

	// GrantTyp is the JOSE typ of the JWT authorization grants this AS issues: the
	// Txn-Token-JAG's of draft-fletcher-oauth-txn-token-chaining-profile-00 (section
	// 6.1.1), the profile of identity chaining whose subject token is a Txn-Token, which
	// is what AS A takes. The identity chaining draft leaves typing open (oauth.md 2.3,
	// Q10); explicit typing (RFC 8725 section 3.11) keeps a grant from being taken for
	// another JWT signed by the same key (a Txn-Token, an access token) or for an ID-JAG
	// (oauth-id-jag+jwt), which the profile says an AS tells apart by typ. AS B accepts a
	// configured list of typs per peer, by default exactly this one. (Up to issue 28
	// dialogtrust's own name, oauth-chain-grant+jwt, was used; a peer still sending it
	// is admitted by listing it in that peer's typs.)
	GrantTyp = "txn-chain+jwt"
	// TokenTypeIDJAG is the requested and issued token type of an Identity Assertion
	// JWT Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant section
	// 9.2), IDJAGTyp its JOSE typ (section 3.1: MUST), GrantProfileIDJAG the profile AS B
	// names in authorization_grant_profiles_supported (section 7).
	TokenTypeIDJAG    = "urn:ietf:params:oauth:token-type:id-jag"
	IDJAGTyp          = "oauth-id-jag+jwt"
	GrantProfileIDJAG = "urn:ietf:params:oauth:grant-profile:id-jag"
	// TokenTypeIDToken is the subject_token_type of an OpenID Connect ID token
	// (RFC 8693 section 3), the identity assertion an ID-JAG may be issued on.
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"

	// AccessTokenTyp is the JOSE typ of the access tokens AS B issues (RFC 9068).
	AccessTokenTyp = "at+jwt"
)

// Confirmation is the cnf (RFC 7800) or requested_cnf (identity chaining App. B.3)
// member: the RFC 7638 SHA-256 thumbprint of the workload's WIT confirmation key.
type Confirmation struct {
	JKT string `json:"jkt"`
}

// GrantClaims are the claims of a JWT authorization grant, in the order AS A writes
// them (oauth.md 2.3; RFC 7523 section 3): iss, sub, aud, iat, nbf, exp (embedded),
// then jti, scope, requested_cnf and resource. They never contain tctx, tctx.dlg, txn
// or the subject Txn-Token or its hash: nothing of the original domain's transaction
// crosses the trust boundary (dialog-binding section 13, domain separation). Resource is
// the protected resource of the peer's domain the request named (Txn-Token chaining
// profile section 6.1.2; fletcher.go), one string; AS B's access token is then for it.
//
// An ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant section 3.1) is the same
// claims with client_id, resource (one or more) and, bound to the client's WIT key, cnf
// in place of requested_cnf (the draft's section 8.6.1 binding); authorization_details
// is read only, to be refused when it is not a JSON array (section 4.4.1).
type GrantClaims struct {
	jose.RegisteredClaims
	Jti                  string          `json:"jti,omitempty"`
	Scope                *string         `json:"scope,omitempty"`
	RequestedCnf         *Confirmation   `json:"requested_cnf,omitempty"`
	ClientID             string          `json:"client_id,omitempty"`
	Resource             jose.Audience   `json:"resource,omitempty"`
	Cnf                  *Confirmation   `json:"cnf,omitempty"`
	AuthorizationDetails json.RawMessage `json:"authorization_details,omitempty"`

	// isIDJAG is set by AS B when the grant's typ is oauth-id-jag+jwt; typ is the
	// grant's typ header (its peer's conditions read it).
	isIDJAG bool
	typ     string
}

// AccessTokenClaims are the claims of an RFC 9068 access token issued by AS B, in the
// order it writes them. cnf.jkt binds the token to the WIT key of the client that
// redeemed the grant: a resource server checks it against the key that proved the
// request (CheckHolder).
type AccessTokenClaims struct {
	Iss      string            `json:"iss"`
	Sub      string            `json:"sub"`
	Aud      jose.Audience     `json:"aud"`
	ClientID string            `json:"client_id"`
	Scope    string            `json:"scope"`
	Iat      *jose.NumericDate `json:"iat"`
	Exp      *jose.NumericDate `json:"exp"`
	Jti      string            `json:"jti"`
	Cnf      *Confirmation     `json:"cnf,omitempty"`
}

// Thumbprint returns the RFC 7638 SHA-256 thumbprint (base64url) of k, computed from
// the required members only ({"crv","kty","x","y"} for P-256, {"crv","kty","x"} for
// Ed25519, in lexicographic order, no whitespace). It equals k.Thumbprint() (jwx), a
// test checks that, but costs no JWK conversion: it runs on every grant and redemption.
func Thumbprint(k *keys.PublicKey) string {
	if k == nil {
		return ""
	}
	enc := base64.RawURLEncoding
	var b []byte
	switch pk := k.Crypto().(type) {
	case *ecdsa.PublicKey:
		// Uncompressed point: 0x04 || X || Y, 32 octets each for P-256.
		raw, err := pk.Bytes()
		if err != nil || len(raw) != 65 {
			return ""
		}
		b = make([]byte, 0, 128)
		b = append(b, `{"crv":"P-256","kty":"EC","x":"`...)
		b = enc.AppendEncode(b, raw[1:33])
		b = append(b, `","y":"`...)
		b = enc.AppendEncode(b, raw[33:])
		b = append(b, `"}`...)
	case ed25519.PublicKey:
		b = make([]byte, 0, 96)
		b = append(b, `{"crv":"Ed25519","kty":"OKP","x":"`...)
		b = enc.AppendEncode(b, pk)
		b = append(b, `"}`...)
	default:
		return ""
	}
	h := sha256.Sum256(b)
	return enc.EncodeToString(h[:])
}

// RingKeySet lets a key ring's published keys serve as a keys.KeySet, read live on
// every lookup, so that a rotated-in key is found at once. The TTS binary uses it for
// the access tokens its own AS B issues (the TTS accepts them as subject tokens) and
// the grants its AS A issues are verified by peers through the same JWKS.
func RingKeySet(r *keys.Ring) keys.KeySet { return ringSet{r} }

type ringSet struct{ r *keys.Ring }

func (s ringSet) LookupKey(ctx context.Context, kid string) (*keys.PublicKey, error) {
	if a := s.r.Active(); a != nil && kid != "" && a.KID() == kid {
		return a.Public(), nil
	}
	return s.r.KeySet().LookupKey(ctx, kid)
}
