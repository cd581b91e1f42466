package ttsservice

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// subject_tokens.jwt_issuers[].rsa opens an issuer's JWKS to RSA keys; without it the
// same JWKS is refused, and a bad default_alg is a configuration error.
func TestJWTIssuerRSAConfig(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]any{{"kty": "RSA", "kid": "idp-1", "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes())}}})
	jwksFile := filepath.Join(dir, "idp.jwks")
	if err := os.WriteFile(jwksFile, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := func(rsaLine string) string {
		y := strings.Replace(string(defaultYAML), "subject_tokens:\n", "subject_tokens:\n  jwt_issuers:\n    - {issuer: https://login.idp.example, jwks_file: "+jwksFile+rsaLine+"}\n", 1)
		return testkit.WriteTemp(t, "tts.yaml", y)
	}
	load := func(f string) (*Config, error) {
		cfg, _, err := configSpec.Load([]string{"--config", f}, nil, io.Discard)
		if err != nil {
			return nil, err
		}
		return cfg, validate(cfg)
	}
	if _, err := load(conf(", rsa: {default_alg: RS512}")); err == nil || !strings.Contains(err.Error(), "rsa") {
		t.Fatalf("default_alg RS512: %v", err)
	}
	for _, tc := range []struct {
		rsaLine string
		ok      bool
	}{{"", false}, {", rsa: {}", false}, {", rsa: {default_alg: RS256}", true}} {
		cfg, err := load(conf(tc.rsaLine))
		if err != nil {
			t.Fatalf("%q: %v", tc.rsaLine, err)
		}
		_, _, err = buildSubjectHandlers(t.Context(), cfg, "http://127.0.0.1:1", "http://127.0.0.1:1/token")
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok=%v (the key has no alg)", tc.rsaLine, err, tc.ok)
		}
	}
}
