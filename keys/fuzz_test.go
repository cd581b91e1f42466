package keys_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"testing"

	"github.com/dialogtrust/dialogtrust/keys"
)

// FuzzParseJWKS: JWK sets arrive over the network (JWKS URLs). Whatever the input, the
// parsers do not panic, every key they return is pinned to one supported algorithm, and
// RSA keys come only from the RSA-opened parser, within the size bounds.
func FuzzParseJWKS(f *testing.F) {
	ec, _ := keys.Generate(keys.ES256)
	ed, _ := keys.Generate(keys.EdDSA)
	ecj, _ := json.Marshal(ec.Public())
	edj, _ := json.Marshal(ed.Public())
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	f.Add([]byte(`{"keys":[` + string(ecj) + `,` + string(edj) + `]}`))
	f.Add(jwks(f, rsaJWK(f, rk, "r1", keys.RS256, "sig"), rsaJWK(f, rk, "r2", "", "enc")))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","alg":"RS256"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","alg":"HS256"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if set, err := keys.ParseJWKS(b); err == nil {
			for _, k := range set.Keys() {
				if fam := k.Family(); fam != keys.FamilyES256 && fam != keys.FamilyEd25519 {
					t.Fatalf("ParseJWKS returned a %v key", fam)
				}
			}
		}
		if set, err := keys.ParseJWKSWithRSA(b, keys.RSAPolicy{DefaultAlg: keys.RS256}); err == nil {
			for _, k := range set.Keys() {
				if keys.FamilyOf(k.Alg()) != k.Family() || k.Family() == keys.FamilyNone {
					t.Fatalf("key %s pinned to %q", k.KID(), k.Alg())
				}
				if pub, ok := k.Crypto().(*rsa.PublicKey); ok {
					if n := pub.N.BitLen(); n < keys.MinRSABits || n > keys.MaxRSABits {
						t.Fatalf("RSA key of %d bits", n)
					}
				}
			}
		}
		if k, err := keys.ParseConfirmationJWK(b); err == nil {
			if fam := k.Family(); fam != keys.FamilyES256 && fam != keys.FamilyEd25519 {
				t.Fatalf("cnf.jwk of family %v", fam)
			}
		}
	})
}
