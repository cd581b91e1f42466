package handoff

import (
	"bytes"
	"encoding/base64"
	"strings"

	"github.com/veraison/go-cose"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tokenhash"
)

// Form is the signed form of an element (section 3).
type Form int

// Forms.
const (
	// JWS: JWS Compact Serialization over the JSON form (section 3.1).
	JWS Form = iota + 1
	// COSE: tagged COSE_Sign1 over the CBOR form (section 3.2).
	COSE
)

func (f Form) String() string {
	switch f {
	case JWS:
		return "jws"
	case COSE:
		return "cose"
	}
	return "unknown"
}

// DefaultMaxElementSize bounds one signed handoff (section 8.8): a JWS or an encoded
// COSE_Sign1, as octets.
const DefaultMaxElementSize = 16 << 10

// Signed is a signed handoff: its octets exactly as sent, and their form. The octets
// are never re-encoded: they are hashed (section 3.3) and forwarded as they are.
type Signed struct {
	Form   Form
	Octets []byte
}

// Digest returns the handoff digest (section 3.3): SHA-256 over the octets as sent.
func (s Signed) Digest() Digest { return SHA256Digest(s.Octets) }

// Text returns the JSON carriage form (section 3.2): the JWS itself, or the COSE
// message in base64url, which never contains a period.
func (s Signed) Text() string {
	if s.Form == COSE {
		return base64.RawURLEncoding.EncodeToString(s.Octets)
	}
	return string(s.Octets)
}

// Equal reports whether two signed handoffs are the same octets in the same form.
func (s Signed) Equal(o Signed) bool { return s.Form == o.Form && bytes.Equal(s.Octets, o.Octets) }

// ParseSignedText reads the JSON carriage form: a JwsCompact, or base64url text of a
// COSE message (SignedHandoffJson).
func ParseSignedText(t string) (Signed, error) {
	if strings.IndexByte(t, '.') >= 0 {
		if !isJWSCompact(t) {
			return Signed{}, errcode.New(errcode.InvalidEncoding, "not a JWS compact serialization")
		}
		return Signed{Form: JWS, Octets: []byte(t)}, nil
	}
	if !isB64u(t) {
		return Signed{}, errcode.New(errcode.InvalidEncoding, "neither a JWS nor base64url")
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(t)
	if err != nil {
		return Signed{}, errcode.Wrap(errcode.InvalidEncoding, err, "COSE signed handoff is not base64url")
	}
	return Signed{Form: COSE, Octets: b}, nil
}

// SHA256Digest returns the sha-256 Digest of b.
func SHA256Digest(b []byte) Digest { return Digest{Alg: SHA256, Val: tokenhash.Of(b)} }

// digestMatches reports whether d names b. ok is false when the alg is not
// implemented: section 2 says what that means for each use.
func digestMatches(d Digest, b []byte) (match, ok bool) {
	if d.Alg != SHA256 {
		return false, false
	}
	return SHA256Digest(b).Val == d.Val, true
}

// coseAlgEd25519 is "Ed25519", the fully-specified COSE algorithm of EdDSA over
// Ed25519 (RFC 9864 section 2.2), which go-cose v1.3.0 does not know: its
// AlgorithmEd25519 is the polymorphic EdDSA (-8).
const coseAlgEd25519 cose.Algorithm = -19

// COSE algorithms accepted and the JOSE names of the same algorithms. A key is pinned to
// one algorithm, which may have two names: for an Ed25519 key EdDSA (-8, RFC 9053) and
// Ed25519 (-19, RFC 9864), as jose's rule has it for JWS ("EdDSA", "Ed25519").
var coseAlgs = map[cose.Algorithm]string{cose.AlgorithmES256: keys.ES256, cose.AlgorithmEdDSA: keys.EdDSA, coseAlgEd25519: keys.Ed25519}

// coseAlgFor is the COSE algorithm a key signs with: ES256 (-7) for a P-256 key, EdDSA
// (-8) for an Ed25519 key whichever name it is pinned to, since -8 is what every COSE
// implementation (go-cose among them) verifies.
func coseAlgFor(family keys.Family) (cose.Algorithm, bool) {
	switch family {
	case keys.FamilyES256:
		return cose.AlgorithmES256, true
	case keys.FamilyEd25519:
		return cose.AlgorithmEdDSA, true
	}
	return 0, false
}
