package keys_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

func rsaJWK(t testing.TB, k *rsa.PrivateKey, kid, alg, use string) map[string]any {
	t.Helper()
	m := map[string]any{"kty": "RSA", "kid": kid,
		"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes())}
	if alg != "" {
		m["alg"] = alg
	}
	if use != "" {
		m["use"] = use
	}
	return m
}

func jwks(t testing.TB, ks ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"keys": ks})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustRSA(t *testing.T, bits int) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// RSA keys are for third-party issuers only: a JWKS holding one is refused unless it is
// read with an RSAPolicy, and RSA is never a WIMSE algorithm.
func TestRSAKeysOnlyWithPolicy(t *testing.T) {
	k := mustRSA(t, 2048)
	doc := jwks(t, rsaJWK(t, k, "r1", keys.RS256, "sig"))
	if _, err := keys.ParseJWKS(doc); err == nil {
		t.Fatal("ParseJWKS took an RSA key without a policy")
	}
	set, err := keys.ParseJWKSWithRSA(doc, keys.RSAPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := set.LookupKey(context.Background(), "r1")
	if err != nil || pub.Alg() != keys.RS256 || pub.Family() != keys.FamilyRS256 {
		t.Fatalf("key %v, %v", pub, err)
	}
	msg := []byte("header.payload")
	h := sha256.Sum256(msg)
	sig, _ := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, h[:])
	if !pub.Verify(msg, sig) {
		t.Fatal("RS256 signature does not verify")
	}
	if pub.Verify([]byte("header.other"), sig) {
		t.Fatal("RS256 signature verifies over another message")
	}
	pss, _ := rsa.SignPSS(rand.Reader, k, crypto.SHA256, h[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	if pub.Verify(msg, pss) {
		t.Fatal("a PSS signature verifies with a key pinned to RS256")
	}
	psSet, err := keys.ParseJWKSWithRSA(jwks(t, rsaJWK(t, k, "p1", keys.PS256, "")), keys.RSAPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	psKey, _ := psSet.LookupKey(context.Background(), "p1")
	if !psKey.Verify(msg, pss) || psKey.Verify(msg, sig) {
		t.Fatal("PS256 key: want the PSS signature and not the PKCS#1 v1.5 one")
	}
	for _, alg := range []string{keys.RS256, keys.PS256} {
		if keys.CheckSignatureAlg(alg) == nil {
			t.Errorf("%s is accepted as a WIMSE signature algorithm", alg)
		}
	}
	cnf, _ := json.Marshal(rsaJWK(t, k, "", keys.RS256, ""))
	if _, err := keys.ParseConfirmationJWK(cnf); errcode.CodeOf(err) != errcode.UnsupportedConfirmationAlg {
		t.Fatalf("an RSA cnf.jwk: %v", err)
	}
	if b, err := json.Marshal(pub); err != nil || json.Unmarshal(b, &map[string]any{}) != nil {
		t.Fatalf("MarshalJSON: %s %v", b, err)
	}
}

func TestRSAPolicyBounds(t *testing.T) {
	small := mustRSA(t, 1024)
	k := mustRSA(t, 2048)
	for _, tc := range []struct {
		name string
		doc  []byte
		p    keys.RSAPolicy
		want errcode.Code
	}{
		{"1024 bits", jwks(t, rsaJWK(t, small, "s", keys.RS256, "")), keys.RSAPolicy{}, errcode.InvalidKey},
		{"no alg, no default", jwks(t, rsaJWK(t, k, "n", "", "")), keys.RSAPolicy{}, errcode.InvalidKey},
		{"RS512", jwks(t, rsaJWK(t, k, "x", "RS512", "")), keys.RSAPolicy{}, errcode.UnsupportedAlg},
		{"RSA alg on an EC key's name", jwks(t, rsaJWK(t, k, "x", keys.ES256, "")), keys.RSAPolicy{}, errcode.UnsupportedAlg},
		{"bad default", jwks(t, rsaJWK(t, k, "d", "", "")), keys.RSAPolicy{DefaultAlg: "HS256"}, errcode.UnsupportedAlg},
	} {
		if _, err := keys.ParseJWKSWithRSA(tc.doc, tc.p); errcode.CodeOf(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
	// A key without alg takes the default; an encryption key beside it is skipped.
	set, err := keys.ParseJWKSWithRSA(jwks(t, rsaJWK(t, k, "d", "", "sig"), rsaJWK(t, k, "e", "RSA-OAEP", "enc")), keys.RSAPolicy{DefaultAlg: keys.RS256})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := set.LookupKey(context.Background(), "d"); err != nil || d.Alg() != keys.RS256 {
		t.Fatalf("defaulted key: %v %v", d, err)
	}
	if _, err := set.LookupKey(context.Background(), "e"); err == nil {
		t.Fatal("the encryption key is in the set")
	}
}

func TestRemoteSetWithRSA(t *testing.T) {
	k := mustRSA(t, 2048)
	doc := jwks(t, rsaJWK(t, k, "r1", keys.RS256, ""))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	defer srv.Close()
	if _, err := keys.NewRemoteSet(t.Context(), srv.URL); err == nil {
		t.Fatal("a RemoteSet without WithRSA took an RSA key")
	}
	rs, err := keys.NewRemoteSet(t.Context(), srv.URL, keys.WithRSA(keys.RSAPolicy{}))
	if err != nil {
		t.Fatal(err)
	}
	if key, err := rs.LookupKey(context.Background(), "r1"); err != nil || key.Family() != keys.FamilyRS256 {
		t.Fatalf("%v %v", key, err)
	}
}
