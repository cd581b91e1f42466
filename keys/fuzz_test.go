package keys_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/keys"
)

// FuzzParseJWKS: JWK sets arrive over the network (JWKS URLs). Whatever the input, the
// parsers do not panic, every key they return is pinned to one supported algorithm (its
// alg, or the one its type admits when it has none), and RSA keys come only from the
// RSA-opened parser, within the size bounds.
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
	// Keys without alg (pinned by type, or refused) and a key whose alg does not fit.
	noAlg := func(j []byte) string { return strings.Replace(string(j), `"alg":"`+keys.ES256+`",`, "", 1) }
	f.Add([]byte(`{"keys":[` + noAlg(ecj) + `,{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`))
	f.Add(jwks(f, rsaJWK(f, rk, "r3", "", "")))
	f.Add([]byte(`{"keys":[` + strings.Replace(string(ecj), `"alg":"ES256"`, `"alg":"EdDSA"`, 1) + `]}`))
	f.Add([]byte(`{"keys":[` + noAlg(ecj)[:len(noAlg(ecj))-1] + `,"use":"enc"}]}`))
	// pinnedToOne: the key's one algorithm is a name of its family, and one the set
	// may hold (ES256 or Ed25519 everywhere; RS256 or PS256 only with RSA).
	pinnedToOne := func(t *testing.T, where string, k *keys.PublicKey, rsaOpen bool) {
		t.Helper()
		fam := k.Family()
		switch {
		case fam == keys.FamilyNone || keys.FamilyOf(k.Alg()) != fam:
			t.Fatalf("%s: key %q pinned to %q (%v)", where, k.KID(), k.Alg(), fam)
		case fam.IsRSA() && !rsaOpen:
			t.Fatalf("%s returned a %v key", where, fam)
		case !fam.IsRSA() && keys.CheckSignatureAlg(k.Alg()) != nil:
			t.Fatalf("%s: key %q pinned to unsupported %q", where, k.KID(), k.Alg())
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if set, err := keys.ParseJWKS(b); err == nil {
			for _, k := range set.Keys() {
				pinnedToOne(t, "ParseJWKS", k, false)
			}
		}
		if k, err := keys.ParsePublicJWK(b); err == nil {
			pinnedToOne(t, "ParsePublicJWK", k, false)
		}
		if set, err := keys.ParseJWKSWithRSA(b, keys.RSAPolicy{DefaultAlg: keys.RS256}); err == nil {
			for _, k := range set.Keys() {
				pinnedToOne(t, "ParseJWKSWithRSA", k, true)
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
