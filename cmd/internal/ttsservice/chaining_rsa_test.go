package ttsservice

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"math/big"
	"strings"
	"testing"
)

// rsaJWKSFile writes a JWKS with one RSA key of bits (kid idp-1, no alg, as Entra ID
// publishes them).
func rsaJWKSFile(t *testing.T, bits int) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]any{{"kty": "RSA", "kid": "idp-1", "use": "sig",
		"n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())}}})
	return testkit.WriteTemp(t, "peer.jwks", string(doc))
}

// chaining.peers[].rsa opens an AS B peer's keys to RSA (RS256, PS256 grants), as
// subject_tokens.jwt_issuers[].rsa does for subject-token issuers; as_b.peers[]
// allow_untyped needs audiences. --check-config refuses what cannot work, and a key
// below 2048 bits is refused when the keys are read.
func TestChainingRSAPeerConfig(t *testing.T) {
	conf := func(jwks, rsaPart, asbPart string) string {
		return chainingBaseYAML + "chaining:\n  peers: [{issuer: https://idp.example, jwks_file: " + jwks + rsaPart + "}]\n" +
			"  as_b: {peers: [{issuer: https://idp.example, scopes: [x]" + asbPart + "}]}\n"
	}
	for _, tc := range []struct{ rsaPart, asbPart, want string }{
		{"", ", allow_untyped: true", "allow_untyped needs audiences"},
		{", rsa: {default_alg: RS512}", "", "chaining.peers[https://idp.example].rsa"},
	} {
		if err := checkConfig(t, conf("/x", tc.rsaPart, tc.asbPart)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%q %q: got %v, want %q", tc.rsaPart, tc.asbPart, err, tc.want)
		}
	}
	if err := checkConfig(t, conf("/x", ", rsa: {default_alg: PS256}", ", allow_untyped: true, audiences: [https://as.b.example]")); err != nil {
		t.Fatal(err)
	}

	prepare := func(yaml string) (*chainingSetup, error) {
		cfg, _, err := configSpec.Load([]string{"--config", testkit.WriteTemp(t, "tts.yaml", yaml)}, nil, &testkit.SyncBuffer{})
		if err != nil {
			t.Fatal(err)
		}
		return prepareChaining(t.Context(), cfg, "https://as.b.example", "https://as.b.example/token", nil, nil, nil)
	}
	good := rsaJWKSFile(t, 2048)
	c, err := prepare(conf(good, ", rsa: {default_alg: RS256}", ", allow_untyped: true, audiences: [https://as.b.example]"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.asB[0]
	if !p.RSA || !p.AllowUntyped || len(p.Audiences) != 1 {
		t.Fatalf("peer %+v", p)
	}
	if k, err := p.Keys.LookupKey(t.Context(), "idp-1"); err != nil || k.Alg() != "RS256" {
		t.Fatalf("RSA key: %v %v", k, err)
	}
	if _, err := prepare(conf(good, "", "")); err == nil {
		t.Fatal("an RSA key accepted from a peer without an rsa section")
	}
	if _, err := prepare(conf(rsaJWKSFile(t, 1024), ", rsa: {default_alg: RS256}", "")); err == nil || !strings.Contains(err.Error(), "1024 bits") {
		t.Fatalf("a 1024-bit RSA key: %v", err)
	}
}
