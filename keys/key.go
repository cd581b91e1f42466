package keys

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// PublicKey is a verification key pinned to one algorithm.
type PublicKey struct {
	kid    string
	alg    string
	family Family
	ec     *ecdsa.PublicKey
	ed     ed25519.PublicKey
	rsa    *rsa.PublicKey // only from an RSAPolicy set (rsa.go)
}

// KID returns the key identifier ("" when the key has none).
func (k *PublicKey) KID() string { return k.kid }

// Alg returns the one algorithm name this key is used with, as configured.
func (k *PublicKey) Alg() string { return k.alg }

// Family returns the key's signature scheme.
func (k *PublicKey) Family() Family { return k.family }

// Crypto returns the Go public key (*ecdsa.PublicKey, ed25519.PublicKey or, from an
// RSAPolicy set, *rsa.PublicKey).
func (k *PublicKey) Crypto() crypto.PublicKey {
	switch {
	case k.ec != nil:
		return k.ec
	case k.rsa != nil:
		return k.rsa
	}
	return k.ed
}

// Verify checks a JWS-format signature (ES256: raw r||s of 64 octets; Ed25519: 64 octets)
// over msg. The caller has already checked that the message's algorithm is this key's.
func (k *PublicKey) Verify(msg, sig []byte) bool {
	switch k.family {
	case FamilyES256:
		if len(sig) != 64 {
			return false
		}
		h := sha256.Sum256(msg)
		r := new(big.Int).SetBytes(sig[:32])
		s := new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(k.ec, h[:], r, s)
	case FamilyEd25519:
		return len(sig) == ed25519.SignatureSize && ed25519.Verify(k.ed, msg, sig)
	case FamilyRS256:
		h := sha256.Sum256(msg)
		return rsa.VerifyPKCS1v15(k.rsa, crypto.SHA256, h[:], sig) == nil
	case FamilyPS256:
		h := sha256.Sum256(msg)
		// RFC 7518 section 3.5: the salt is as long as the hash.
		return rsa.VerifyPSS(k.rsa, crypto.SHA256, h[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
	}
	return false
}

// Thumbprint returns the RFC 7638 SHA-256 thumbprint, base64url without padding.
func (k *PublicKey) Thumbprint() string {
	j, err := k.jwk()
	if err != nil {
		return ""
	}
	tp, err := j.Thumbprint(crypto.SHA256)
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(tp)
}

func (k *PublicKey) jwk() (jwk.Key, error) {
	j, err := jwk.FromRaw(k.Crypto())
	if err != nil {
		return nil, err
	}
	if k.kid != "" {
		_ = j.Set(jwk.KeyIDKey, k.kid)
	}
	_ = j.Set(jwk.AlgorithmKey, k.alg)
	return j, nil
}

// JWK returns the key as a jwx jwk.Key with kid and alg set.
func (k *PublicKey) JWK() (jwk.Key, error) { return k.jwk() }

// publicJWK is the member order dialogtrust writes (alg first, then the RFC 7638 members),
// the order the WIMSE conformance vectors use in cnf.jwk.
type publicJWK struct {
	Alg string `json:"alg"`
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Kid string `json:"kid,omitempty"`
}

// MarshalJSON writes the public JWK with alg, kty, crv, x, y and kid (if any).
func (k *PublicKey) MarshalJSON() ([]byte, error) { return json.Marshal(k.public(true)) }

// ConfirmationJSON writes the public JWK for a cnf claim: without kid, since the key is
// identified by the token that carries it.
func (k *PublicKey) ConfirmationJSON() ([]byte, error) { return json.Marshal(k.public(false)) }

func (k *PublicKey) public(withKID bool) publicJWK {
	p := publicJWK{Alg: k.alg}
	if withKID {
		p.Kid = k.kid
	}
	b64 := base64.RawURLEncoding.EncodeToString
	switch k.family {
	case FamilyES256:
		// Uncompressed point: 0x04 || X || Y, 32 octets each for P-256. A key that
		// reached here was validated on the curve, so Bytes cannot fail.
		raw, _ := k.ec.Bytes()
		if len(raw) == 65 {
			p.Kty, p.Crv, p.X, p.Y = "EC", "P-256", b64(raw[1:33]), b64(raw[33:])
		}
	case FamilyEd25519:
		p.Kty, p.Crv, p.X = "OKP", "Ed25519", b64(k.ed)
	case FamilyRS256, FamilyPS256:
		p.Kty, p.N, p.E = "RSA", b64(k.rsa.N.Bytes()), b64(big.NewInt(int64(k.rsa.E)).Bytes())
	}
	return p
}

// PrivateKey is a signing key pinned to one algorithm.
type PrivateKey struct {
	pub PublicKey
	ec  *ecdsa.PrivateKey
	ed  ed25519.PrivateKey
	// ext signs for a key held where it cannot be read out (a PKCS#11 token:
	// NewExternalKey); ec and ed are then nil.
	ext crypto.Signer
}

// Generate creates a fresh key for alg ("ES256", "EdDSA" or "Ed25519") whose kid is its
// RFC 7638 thumbprint.
func Generate(alg string) (*PrivateKey, error) {
	var k *PrivateKey
	switch FamilyOf(alg) {
	case FamilyES256:
		ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		k = &PrivateKey{ec: ec, pub: PublicKey{alg: alg, family: FamilyES256, ec: &ec.PublicKey}}
	case FamilyEd25519:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		k = &PrivateKey{ed: priv, pub: PublicKey{alg: alg, family: FamilyEd25519, ed: pub}}
	default:
		return nil, errcode.New(errcode.UnsupportedAlg, "cannot generate a key for %q (ES256, EdDSA or Ed25519)", alg)
	}
	k.pub.kid = k.pub.Thumbprint()
	return k, nil
}

// Public returns the public half (same kid and alg).
func (k *PrivateKey) Public() *PublicKey { return &k.pub }

// KID returns the key identifier.
func (k *PrivateKey) KID() string { return k.pub.kid }

// Alg returns the key's one algorithm.
func (k *PrivateKey) Alg() string { return k.pub.alg }

// WithKID returns a copy of k that carries a different kid.
func (k *PrivateKey) WithKID(kid string) *PrivateKey {
	c := *k
	c.pub.kid = kid
	return &c
}

// Signer returns the crypto.Signer behind the key (for TLS and x509 use).
func (k *PrivateKey) Signer() crypto.Signer {
	if k.ext != nil {
		return k.ext
	}
	if k.ec != nil {
		return k.ec
	}
	return k.ed
}

// Sign signs msg in JWS format: ES256 deterministic (RFC 6979) raw r||s, or Ed25519.
func (k *PrivateKey) Sign(msg []byte) ([]byte, error) {
	if k.ext != nil {
		return k.signExternal(msg)
	}
	switch k.pub.family {
	case FamilyES256:
		h := sha256.Sum256(msg)
		// A nil random source selects RFC 6979 deterministic signing (crypto/ecdsa,
		// Go 1.24+): reproducible output and no dependence on the RNG at sign time.
		r, s, err := ecdsaSignDeterministic(k.ec, h[:])
		if err != nil {
			return nil, err
		}
		sig := make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
		return sig, nil
	case FamilyEd25519:
		return ed25519.Sign(k.ed, msg), nil
	}
	return nil, errcode.New(errcode.UnsupportedAlg, "key has no usable algorithm")
}

// MarshalJSON writes the private JWK (with d), kid and alg, via jwx. A key held in a
// token (NewExternalKey) has no private JWK: it is refused, so that no key state with
// such a key can be written anywhere.
func (k *PrivateKey) MarshalJSON() ([]byte, error) {
	if k.ext != nil {
		return nil, errExternalKeyJSON(k.pub.kid)
	}
	var raw any = k.ec
	if k.ed != nil {
		raw = k.ed
	}
	j, err := jwk.FromRaw(raw)
	if err != nil {
		return nil, err
	}
	_ = j.Set(jwk.KeyIDKey, k.pub.kid)
	_ = j.Set(jwk.AlgorithmKey, k.pub.alg)
	return json.Marshal(j)
}

// ParsePrivateJWK loads a private JWK. It must carry "alg"; the kid is kept when present,
// else it is the thumbprint.
func ParsePrivateJWK(b []byte) (*PrivateKey, error) {
	j, alg, err := parseJWK(b)
	if err != nil {
		return nil, err
	}
	var raw any
	if err := j.Raw(&raw); err != nil {
		return nil, errcode.Wrap(errcode.InvalidKey, err, "JWK")
	}
	var k *PrivateKey
	switch v := raw.(type) {
	case *ecdsa.PrivateKey:
		if FamilyOf(alg) != FamilyES256 || v.Curve != elliptic.P256() {
			return nil, errcode.New(errcode.UnsupportedAlg, "alg %q does not fit an EC key on %s", errcode.Cut(alg), v.Curve.Params().Name)
		}
		k = &PrivateKey{ec: v, pub: PublicKey{alg: alg, family: FamilyES256, ec: &v.PublicKey}}
	case ed25519.PrivateKey:
		if FamilyOf(alg) != FamilyEd25519 {
			return nil, errcode.New(errcode.UnsupportedAlg, "alg %q does not fit an Ed25519 key", errcode.Cut(alg))
		}
		k = &PrivateKey{ed: v, pub: PublicKey{alg: alg, family: FamilyEd25519, ed: v.Public().(ed25519.PublicKey)}}
	default:
		return nil, errcode.New(errcode.InvalidKey, "not a private ES256 or Ed25519 JWK (%T)", raw)
	}
	k.pub.kid = j.KeyID()
	if k.pub.kid == "" {
		k.pub.kid = k.pub.Thumbprint()
	}
	return k, nil
}

// ParsePublicJWK loads a public JWK from trust configuration (private members, if
// present, are ignored) and pins it to one algorithm (pin.go): its "alg", or without one
// the one algorithm its type admits (EC P-256: ES256; OKP Ed25519: EdDSA). "none", MAC
// and encryption algorithms, RSA keys and an alg that does not fit the key are refused.
// The kid is kept as given ("" when absent).
func ParsePublicJWK(b []byte) (*PublicKey, error) {
	j, err := decodeJWK(b)
	if err != nil {
		return nil, err
	}
	return externalKey(j, nil)
}

// FromJWK converts a jwx key (public or private) from trust configuration into a
// PublicKey pinned to one algorithm, as ParsePublicJWK does.
func FromJWK(j jwk.Key) (*PublicKey, error) { return externalKey(j, nil) }

func decodeJWK(b []byte) (jwk.Key, error) {
	if len(b) > 16<<10 {
		return nil, errcode.New(errcode.InvalidKey, "JWK larger than 16 KiB")
	}
	j, err := jwk.ParseKey(b)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidKey, err, "JWK")
	}
	return j, nil
}

// parseJWK decodes a signing key of this service's own: it must name its algorithm.
func parseJWK(b []byte) (jwk.Key, string, error) {
	j, err := decodeJWK(b)
	if err != nil {
		return nil, "", err
	}
	alg := ""
	if a := j.Algorithm(); a != nil {
		alg = a.String()
	}
	if err := checkKeyAlg(alg); err != nil {
		return nil, "", err
	}
	return j, alg, nil
}

// checkKeyAlg enforces "exactly one algorithm per key" for a signing key: the private
// JWK names it (a signing_key_file is the operator's statement of the algorithm), and it
// is one this project signs with.
func checkKeyAlg(alg string) error {
	if alg == "" {
		return errcode.New(errcode.InvalidKey, `private JWK has no "alg": a signing key names its one algorithm`)
	}
	if IsForbiddenAlg(alg) {
		return errcode.New(errcode.UnsupportedAlg, "alg %q can never sign", errcode.Cut(alg))
	}
	return CheckSignatureAlg(alg)
}

// LookupKey lets a single PublicKey serve as a KeySet that holds only itself: it answers
// any kid that matches, or no kid at all.
func (k *PublicKey) LookupKey(_ context.Context, kid string) (*PublicKey, error) {
	if kid == "" || kid == k.kid || k.kid == "" {
		return k, nil
	}
	return nil, errcode.New(errcode.UnknownKey, "kid %q is not trusted", errcode.Cut(kid))
}

func (k *PublicKey) String() string { return fmt.Sprintf("%s key %s", k.alg, k.kid) }
