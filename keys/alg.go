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
)

// Family is the signature scheme behind one or more algorithm names.
type Family int

const (
	FamilyNone Family = iota
	FamilyES256
	FamilyEd25519
)

// FamilyOf maps an algorithm name to its family, FamilyNone when unsupported.
func FamilyOf(alg string) Family {
	switch alg {
	case ES256:
		return FamilyES256
	case EdDSA, Ed25519:
		return FamilyEd25519
	}
	return FamilyNone
}

// CheckSignatureAlg classifies an algorithm name for use as a proof-of-possession or
// token signing algorithm: nil when supported; ForbiddenConfirmationAlg-style callers
// can use IsForbiddenAlg to separate "never allowed" from "legal but unsupported".
func CheckSignatureAlg(alg string) error {
	if FamilyOf(alg) != FamilyNone {
		return nil
	}
	return errcode.New(errcode.UnsupportedAlg, "algorithm %q is not supported", alg)
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
