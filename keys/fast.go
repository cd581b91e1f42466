package keys

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// jwkMembers are the members of a public ES256 or Ed25519 JWK.
type jwkMembers struct {
	Kty string          `json:"kty"`
	Crv string          `json:"crv"`
	X   string          `json:"x"`
	Y   string          `json:"y"`
	Alg string          `json:"alg"`
	Kid string          `json:"kid"`
	D   json.RawMessage `json:"d"`
	K   json.RawMessage `json:"k"`
}

// ParseConfirmationJWK parses the public JWK of a cnf claim (RFC 7800 section 3.2;
// workload-creds-02 section 5.1): EC P-256 or OKP Ed25519 with an alg of the same
// family. Its errors use the confirmation codes: missing_confirmation_alg when alg is
// absent, forbidden_confirmation_alg for none, MAC, encryption or symmetric keys,
// unsupported_confirmation_alg for any other alg this project does not sign with or an
// alg that does not fit the key, invalid_key for a malformed or private key. It is the hot path of every WIT validation, so it
// decodes the few members itself and lets the standard library check the point
// (ecdsa.ParseUncompressedPublicKey rejects points off the curve); jwx's generic
// jwk.ParseKey costs as much as a third of a signature verification here.
// TestConfirmationJWKAgreesWithJWX keeps this parser and jwx in step.
func ParseConfirmationJWK(b []byte) (*PublicKey, error) {
	var m jwkMembers
	if err := netjson.DecodeObject(b, &m); err != nil {
		return nil, errcode.Wrap(errcode.InvalidKey, err, "JWK is not a JSON object")
	}
	switch {
	case m.Alg == "":
		return nil, errcode.New(errcode.MissingConfirmationAlg, "cnf.jwk has no alg")
	case IsForbiddenAlg(m.Alg) || m.K != nil || m.Kty == "oct":
		return nil, errcode.New(errcode.ForbiddenConfirmationAlg, "cnf.jwk alg %q cannot prove possession", errcode.Cut(m.Alg))
	case CheckSignatureAlg(m.Alg) != nil: // ES256 and EdDSA only: never RSA
		return nil, errcode.New(errcode.UnsupportedConfirmationAlg, "cnf.jwk alg %q is not supported", errcode.Cut(m.Alg))
	case m.D != nil:
		return nil, errcode.New(errcode.InvalidKey, "cnf.jwk carries a private key")
	}
	dec := base64.RawURLEncoding.Strict()
	switch {
	case m.Kty == "EC" && m.Crv == "P-256":
		if FamilyOf(m.Alg) != FamilyES256 {
			return nil, errcode.New(errcode.UnsupportedConfirmationAlg, "alg %q does not fit an EC P-256 key", errcode.Cut(m.Alg))
		}
		x, errX := dec.DecodeString(m.X)
		y, errY := dec.DecodeString(m.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			return nil, errcode.New(errcode.InvalidKey, "EC x and y must be 32 octets of base64url")
		}
		point := make([]byte, 0, 65)
		point = append(append(append(point, 4), x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidKey, err, "EC point")
		}
		return &PublicKey{kid: m.Kid, alg: m.Alg, family: FamilyES256, ec: pub}, nil
	case m.Kty == "OKP" && m.Crv == "Ed25519":
		if FamilyOf(m.Alg) != FamilyEd25519 {
			return nil, errcode.New(errcode.UnsupportedConfirmationAlg, "alg %q does not fit an Ed25519 key", errcode.Cut(m.Alg))
		}
		x, err := dec.DecodeString(m.X)
		if err != nil || len(x) != ed25519.PublicKeySize || m.Y != "" {
			return nil, errcode.New(errcode.InvalidKey, "Ed25519 x must be 32 octets of base64url")
		}
		return &PublicKey{kid: m.Kid, alg: m.Alg, family: FamilyEd25519, ed: ed25519.PublicKey(x)}, nil
	}
	return nil, errcode.New(errcode.UnsupportedConfirmationAlg, "cnf.jwk is neither EC P-256 nor OKP Ed25519 (kty %q, crv %q)", errcode.Cut(m.Kty), errcode.Cut(m.Crv))
}
