package testkit

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/dialogtrust/dialogtrust/keys"
)

// RSAKey is an identity provider's or a peer authorization server's RSA signing key,
// published with Alg and KID. Package keys verifies RSA signatures but makes none, so
// the tests sign here.
type RSAKey struct {
	KID, Alg string // Alg: keys.RS256 or keys.PS256
	Key      *rsa.PrivateKey
}

// NewRSAKey generates a key of bits bits.
func NewRSAKey(t testing.TB, kid, alg string, bits int) RSAKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return RSAKey{KID: kid, Alg: alg, Key: k}
}

// JWK is the public key as a JWKS member.
func (k RSAKey) JWK() map[string]any {
	enc := base64.RawURLEncoding.EncodeToString
	return map[string]any{"kty": "RSA", "kid": k.KID, "alg": k.Alg, "use": "sig",
		"n": enc(k.Key.N.Bytes()), "e": enc(big.NewInt(int64(k.Key.E)).Bytes())}
}

// Sign makes a compact JWS of claims (JSON) with the header alg, kid and typ (none
// when empty); PS256 signs with RSASSA-PSS, anything else with RSASSA-PKCS1-v1_5.
func (k RSAKey) Sign(t testing.TB, typ string, claims any) string {
	t.Helper()
	h := map[string]any{"alg": k.Alg, "kid": k.KID}
	if typ != "" {
		h["typ"] = typ
	}
	hb, _ := json.Marshal(h)
	pb, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(hb) + "." + enc(pb)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	if k.Alg == keys.PS256 {
		sig, err = rsa.SignPSS(rand.Reader, k.Key, crypto.SHA256, sum[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	} else {
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.Key, crypto.SHA256, sum[:])
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

// RSASet is the key set that publishes ks, as a verifier opened to RSA parses it.
func RSASet(t testing.TB, ks ...RSAKey) keys.KeySet {
	t.Helper()
	var jwks []map[string]any
	for _, k := range ks {
		jwks = append(jwks, k.JWK())
	}
	b, _ := json.Marshal(map[string]any{"keys": jwks})
	set, err := keys.ParseJWKSWithRSA(b, keys.RSAPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}
