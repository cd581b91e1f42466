package keys

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"fmt"
	"math/big"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// NewExternalKey wraps a signer whose private key stays where it is (a PKCS#11 token,
// keys/pkcs11) as a PrivateKey pinned to alg. Only ES256 over P-256 is accepted: the
// signer's Sign gets the SHA-256 digest and returns an ASN.1 ECDSA signature, which Sign
// turns into the JWS form. The kid is the public key's RFC 7638 thumbprint. Such a key
// cannot be marshalled as a private JWK (MarshalJSON refuses), so a key state holding it
// can never be written to a file or a store.
func NewExternalKey(s crypto.Signer, alg string) (*PrivateKey, error) {
	if s == nil {
		return nil, errcode.New(errcode.InvalidKey, "no signer")
	}
	if FamilyOf(alg) != FamilyES256 {
		return nil, errcode.New(errcode.UnsupportedAlg, "a key held outside the process signs ES256 only, not %q", errcode.Cut(alg))
	}
	pub, ok := s.Public().(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errcode.New(errcode.UnsupportedAlg, "ES256 needs an EC P-256 key, the signer holds %T", s.Public())
	}
	k := &PrivateKey{ext: s, pub: PublicKey{alg: alg, family: FamilyES256, ec: pub}}
	k.pub.kid = k.pub.Thumbprint()
	return k, nil
}

// External reports whether the key is held outside the process (NewExternalKey).
func (k *PrivateKey) External() bool { return k.ext != nil }

// signExternal signs msg through the external signer and returns raw r||s. The
// signature is checked against the public key before it leaves: a token that answers
// with a wrong signature must not issue a token no one can verify.
func (k *PrivateKey) signExternal(msg []byte) ([]byte, error) {
	h := sha256.Sum256(msg)
	der, err := k.ext.Sign(rand.Reader, h[:], crypto.SHA256)
	if err != nil {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, err, "signing with key %s", k.pub.kid)
	}
	var rs struct{ R, S *big.Int }
	if rest, err := asn1.Unmarshal(der, &rs); err != nil || len(rest) != 0 || rs.R == nil || rs.S == nil || rs.R.Sign() <= 0 || rs.S.Sign() <= 0 {
		return nil, errcode.New(errcode.InvalidSignature, "the signer of key %s returned no ECDSA signature", k.pub.kid)
	}
	if rs.R.BitLen() > 256 || rs.S.BitLen() > 256 {
		return nil, errcode.New(errcode.InvalidSignature, "the signer of key %s returned an oversized signature", k.pub.kid)
	}
	sig := make([]byte, 64)
	rs.R.FillBytes(sig[:32])
	rs.S.FillBytes(sig[32:])
	if !k.pub.Verify(msg, sig) {
		return nil, errcode.New(errcode.InvalidSignature, "the signer of key %s returned a signature its public key does not verify", k.pub.kid)
	}
	return sig, nil
}

func errExternalKeyJSON(kid string) error {
	return fmt.Errorf("keys: key %s is held outside the process and has no private JWK", kid)
}
