package keys

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Pinning keys from trust configuration to one algorithm (RFC 8725 section 3.1;
// workload-creds-02 section 3; handoff-context-01 section 3.4: "accept each trusted key
// with exactly one algorithm"). Every opener of keys that come from outside, a JWKS
// file, a JWKS URL (RemoteSet, LazyRemoteSet), ParsePublicJWK for a handoff trust file
// or a registered workload key, goes through externalKey, so the rule lives here only:
//
//   - a key whose "alg" is present keeps it, if it is one this project verifies and it
//     fits the key's type; otherwise the key is refused (unsupported_alg);
//   - a key without "alg" is pinned to the one algorithm its type admits: EC P-256 to
//     ES256, OKP Ed25519 to EdDSA (RFC 8037 section 3.1). An RSA key admits several, so
//     it is pinned only in a set opened to RSA, to the RSAPolicy's DefaultAlg;
//   - a key without "alg" that says it is not for signatures ("use":"enc", or "key_ops"
//     without "verify" or "sign") is refused rather than pinned, as is one whose type
//     admits no supported algorithm (invalid_key).
//
// The public JWK of a WIT's cnf claim is not trust configuration: ParseConfirmationJWK
// keeps requiring its "alg" (workload-creds-02 section 5.1: cnf.jwk.alg is REQUIRED).

// Algorithms a key without "alg" is pinned to, by type.
const (
	impliedEC      = ES256 // EC P-256
	impliedEd25519 = EdDSA // OKP Ed25519: the name RFC 8037 registered
)

// externalKey converts a JWK from trust configuration into a PublicKey pinned to one
// algorithm. p opens the set to RSA keys; nil for every set that is not an identity
// provider's.
func externalKey(j jwk.Key, p *RSAPolicy) (*PublicKey, error) {
	declared := ""
	if a := j.Algorithm(); a != nil {
		declared = a.String()
	}
	if declared != "" {
		if err := checkDeclaredAlg(declared, p != nil); err != nil {
			return nil, err
		}
	}
	var raw any
	if err := j.Raw(&raw); err != nil {
		return nil, errcode.Wrap(errcode.InvalidKey, err, "JWK")
	}
	switch v := raw.(type) {
	case *ecdsa.PrivateKey:
		raw = &v.PublicKey
	case ed25519.PrivateKey:
		raw = v.Public().(ed25519.PublicKey)
	case *rsa.PrivateKey:
		raw = &v.PublicKey
	}
	alg := declared
	if alg == "" {
		var err error
		if alg, err = impliedAlg(j, raw, p); err != nil {
			return nil, err
		}
	}
	return pinnedKey(j.KeyID(), alg, raw, p)
}

// checkDeclaredAlg refuses a present "alg" that can never sign, that this project does
// not verify, or that names RSA in a set not opened to RSA.
func checkDeclaredAlg(alg string, rsaOpen bool) error {
	if IsForbiddenAlg(alg) {
		return errcode.New(errcode.UnsupportedAlg, "alg %q can never sign", alg)
	}
	f := FamilyOf(alg)
	switch {
	case f == FamilyNone:
		return errcode.New(errcode.UnsupportedAlg, "algorithm %q is not supported", alg)
	case f.IsRSA() && !rsaOpen:
		return errcode.New(errcode.UnsupportedAlg, "alg %q: RSA keys are accepted only in a key set opened to RSA (RSAPolicy)", alg)
	}
	return nil
}

// impliedAlg is the one algorithm the type of a key without "alg" admits.
func impliedAlg(j jwk.Key, pub any, p *RSAPolicy) (string, error) {
	kid := j.KeyID()
	if j.KeyUsage() == string(jwk.ForEncryption) {
		return "", errcode.New(errcode.InvalidKey, `JWK %q has no "alg" and its "use" is "enc": an encryption key is not pinned to a signature algorithm`, kid)
	}
	if ops := j.KeyOps(); len(ops) > 0 && !hasOp(ops, jwk.KeyOpVerify) && !hasOp(ops, jwk.KeyOpSign) {
		return "", errcode.New(errcode.InvalidKey, `JWK %q has no "alg" and its "key_ops" %v include neither "verify" nor "sign": not pinned to a signature algorithm`, kid, ops)
	}
	switch v := pub.(type) {
	case *ecdsa.PublicKey:
		if v.Curve == elliptic.P256() {
			return impliedEC, nil
		}
		return "", errcode.New(errcode.InvalidKey, `EC JWK %q on %s has no "alg": only a P-256 key is pinned by its type (ES256)`, kid, v.Curve.Params().Name)
	case ed25519.PublicKey:
		return impliedEd25519, nil
	case *rsa.PublicKey:
		if p == nil {
			return "", errcode.New(errcode.InvalidKey, `RSA JWK %q has no "alg", and RSA keys are accepted only in a key set opened to RSA (RSAPolicy)`, kid)
		}
		if p.DefaultAlg == "" {
			return "", errcode.New(errcode.InvalidKey, `RSA JWK %q has no "alg" and no default is configured: every key is pinned to one algorithm`, kid)
		}
		return p.DefaultAlg, nil
	}
	return "", errcode.New(errcode.InvalidKey, `JWK %q (%T) has no "alg", and its type admits no supported algorithm (EC P-256 or OKP Ed25519)`, kid, pub)
}

func hasOp(ops jwk.KeyOperationList, op jwk.KeyOperation) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// pinnedKey builds the PublicKey of pub pinned to alg, refusing an alg that does not fit
// the key's type and an RSA key outside a set opened to RSA or outside the size bounds.
func pinnedKey(kid, alg string, pub any, p *RSAPolicy) (*PublicKey, error) {
	k := &PublicKey{kid: kid, alg: alg}
	switch v := pub.(type) {
	case *ecdsa.PublicKey:
		if FamilyOf(alg) != FamilyES256 || v.Curve != elliptic.P256() {
			return nil, errcode.New(errcode.UnsupportedAlg, "alg %q does not fit an EC key on %s", alg, v.Curve.Params().Name)
		}
		k.family, k.ec = FamilyES256, v
	case ed25519.PublicKey:
		if FamilyOf(alg) != FamilyEd25519 {
			return nil, errcode.New(errcode.UnsupportedAlg, "alg %q does not fit an Ed25519 key", alg)
		}
		k.family, k.ed = FamilyEd25519, v
	case *rsa.PublicKey:
		if p == nil {
			return nil, errcode.New(errcode.InvalidKey, "RSA JWK %q: RSA keys are accepted only in a key set opened to RSA (RSAPolicy)", kid)
		}
		f := FamilyOf(alg)
		if !f.IsRSA() {
			return nil, errcode.New(errcode.UnsupportedAlg, "alg %q does not fit an RSA key (RS256 or PS256)", alg)
		}
		if n := v.N.BitLen(); n < MinRSABits || n > MaxRSABits {
			return nil, errcode.New(errcode.InvalidKey, "RSA key of %d bits: %d to %d are accepted", n, MinRSABits, MaxRSABits)
		}
		if v.E < 3 || v.E%2 == 0 {
			return nil, errcode.New(errcode.InvalidKey, "RSA public exponent %d", v.E)
		}
		k.family, k.rsa = f, v
	default:
		return nil, errcode.New(errcode.InvalidKey, "not an ES256 or Ed25519 JWK (%T)", pub)
	}
	return k, nil
}
