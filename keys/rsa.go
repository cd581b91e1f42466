package keys

import (
	"os"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Bounds on the RSA keys an RSAPolicy accepts: below 2048 bits is too weak (RFC 7518
// section 3.3 says 2048 or larger), and beyond 8192 bits a verification costs more than
// any issuer needs.
const (
	MinRSABits = 2048
	MaxRSABits = 8192
)

// RSAPolicy opens a JWKS to RSA keys, for the keys of third-party token issuers (an
// identity provider's ID and access tokens presented to the TTS as subject tokens). WIMSE
// credentials never use RSA: every other set refuses RSA keys, so an RSA key cannot
// reach the WIT, WPT, HTTP-signature, Txn-Token or handoff paths.
//
// An RSA key is accepted with alg RS256 or PS256 and a modulus of MinRSABits to
// MaxRSABits. An RSA key admits several algorithms, so one without "alg" (Azure AD's
// JWKS carries none) is pinned to DefaultAlg; without DefaultAlg it is refused. Keys whose
// "use" is "enc" are skipped: a provider's JWKS may list encryption keys beside its
// signing keys.
type RSAPolicy struct {
	DefaultAlg string // RS256, PS256 or ""
}

// Check reports whether the policy itself is valid.
func (p RSAPolicy) Check() error {
	switch p.DefaultAlg {
	case "", RS256, PS256:
		return nil
	}
	return errcode.New(errcode.UnsupportedAlg, "default RSA alg %q: RS256 or PS256", p.DefaultAlg)
}

// ParseJWKSWithRSA is ParseJWKS for a set that may also hold RSA keys (p).
func ParseJWKSWithRSA(b []byte, p RSAPolicy) (*StaticSet, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if len(b) > 1<<20 {
		return nil, errcode.New(errcode.InvalidKey, "JWKS larger than 1 MiB")
	}
	set, err := jwk.Parse(b)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidKey, err, "JWKS")
	}
	return fromJWKSetPolicy(set, &p)
}

// LoadJWKSFileWithRSA reads a JWKS file that may also hold RSA keys (p).
func LoadJWKSFileWithRSA(path string, p RSAPolicy) (*StaticSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidKey, err, "JWKS file")
	}
	return ParseJWKSWithRSA(b, p)
}

// WithRSA opens a RemoteSet to RSA keys (p). An invalid policy makes every fetch fail.
func WithRSA(p RSAPolicy) RemoteOption {
	return func(r *RemoteSet, _ *[]jwk.RegisterOption) { r.rsa = &p }
}

// fromJWKSetPolicy converts a set, pinning every key to one algorithm (externalKey);
// with p, RSA keys are taken as p says and RSA encryption keys are skipped.
func fromJWKSetPolicy(set jwk.Set, p *RSAPolicy) (*StaticSet, error) {
	if p != nil {
		if err := p.Check(); err != nil {
			return nil, err
		}
	}
	ks := make([]*PublicKey, 0, set.Len())
	for i := 0; i < set.Len(); i++ {
		j, _ := set.Key(i)
		if p != nil && j.KeyType() == jwa.RSA && j.KeyUsage() == string(jwk.ForEncryption) {
			continue
		}
		k, err := externalKey(j, p)
		if err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	return NewStaticSet(ks...)
}
