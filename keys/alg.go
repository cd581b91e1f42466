package keys

import (
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// JWS algorithm names accepted for signatures.
const (
	ES256   = "ES256"
	EdDSA   = "EdDSA"
	Ed25519 = "Ed25519" // RFC 9864 fully-specified name for EdDSA over Ed25519
	// RS256 and PS256 (RFC 7518 sections 3.3 and 3.5) verify the tokens of third-party
	// issuers whose JWKS a configuration opens to RSA (RSAPolicy): an IdP's ID and access
	// tokens. This project never signs with them, and no WIMSE credential uses them.
	RS256 = "RS256"
	PS256 = "PS256"
)

// Family is the signature scheme behind one or more algorithm names.
type Family int

const (
	FamilyNone Family = iota
	FamilyES256
	FamilyEd25519
	FamilyRS256 // RSASSA-PKCS1-v1_5 with SHA-256: verification only
	FamilyPS256 // RSASSA-PSS with SHA-256 and MGF1, salt of 32 octets: verification only
)

// IsRSA reports the RSA families, which only keys from an RSAPolicy set carry.
func (f Family) IsRSA() bool { return f == FamilyRS256 || f == FamilyPS256 }

// FamilyOf maps an algorithm name to its family, FamilyNone when unsupported.
func FamilyOf(alg string) Family {
	switch alg {
	case ES256:
		return FamilyES256
	case EdDSA, Ed25519:
		return FamilyEd25519
	case RS256:
		return FamilyRS256
	case PS256:
		return FamilyPS256
	}
	return FamilyNone
}

// CheckSignatureAlg classifies an algorithm name for use as a proof-of-possession or
// token signing algorithm: nil when supported; ForbiddenConfirmationAlg-style callers
// can use IsForbiddenAlg to separate "never allowed" from "legal but unsupported".
// Only ES256 and EdDSA qualify: the RSA families verify third-party tokens only.
func CheckSignatureAlg(alg string) error {
	if f := FamilyOf(alg); f == FamilyES256 || f == FamilyEd25519 {
		return nil
	}
	return errcode.New(errcode.UnsupportedAlg, "algorithm %q is not supported", errcode.Cut(alg))
}

// IsForbiddenAlg reports algorithm names that can never prove possession: "none",
// MACs (HS*) and JWE key-management or content-encryption algorithms.
func IsForbiddenAlg(alg string) bool {
	if alg == "" || strings.EqualFold(alg, "none") {
		return true
	}
	u := strings.ToUpper(alg)
	for _, p := range []string{"HS", "RSA1_5", "RSA-OAEP", "A128", "A192", "A256", "DIR", "ECDH-ES", "PBES2"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}
