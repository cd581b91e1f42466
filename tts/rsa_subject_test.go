package tts

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

const rsaIdP = "https://login.idp.example"

// rsaAccessToken is an access token as an identity provider signs it: RS256 (or PS256)
// with its RSA key.
func rsaAccessToken(t *testing.T, k *rsa.PrivateKey, alg, kid, sub, scope string, now time.Time) string {
	t.Helper()
	hdr, _ := json.Marshal(map[string]string{"typ": "at+jwt", "alg": alg, "kid": kid})
	pl, _ := json.Marshal(map[string]any{"iss": rsaIdP, "sub": sub, "aud": "https://api.a.example", "scope": scope,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "client_id": "web"})
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(hdr) + "." + enc(pl)
	h := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	if alg == keys.PS256 {
		sig, err = rsa.SignPSS(rand.Reader, k, crypto.SHA256, h[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	} else {
		sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, h[:])
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

func rsaIdPSet(t *testing.T, k *rsa.PrivateKey, alg string) keys.KeySet {
	t.Helper()
	doc, _ := json.Marshal(map[string]any{"keys": []map[string]any{{"kty": "RSA", "kid": "idp-1", "alg": alg,
		"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes())}}})
	set, err := keys.ParseJWKSWithRSA(doc, keys.RSAPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// oauth.md 1.4: JWT access tokens from configured issuers. Identity providers sign with
// RSA, so an issuer can be opened to RS256 and PS256; a Txn-Token is then issued for
// their tokens, and their RSA signatures are checked like any other.
func TestTT1_4_RSASignedAccessTokenFromConfiguredIdP(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, alg := range []string{keys.RS256, keys.PS256} {
		t.Run(alg, func(t *testing.T) {
			set := rsaIdPSet(t, k, alg)
			e := newEnv(t, func(e *env, c *Config) {
				h, err := NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: rsaIdP, Keys: set, RSA: true}}, HandlerOptions{Now: e.clock.Now})
				if err != nil {
					t.Fatal(err)
				}
				c.SubjectHandlers = []SubjectTokenHandler{h}
			})
			w := e.dom.Workload(t, "/agent/a1", keys.ES256)
			tok := rsaAccessToken(t, k, alg, "idp-1", "alice", "trip.read trip.book", e.clock.Now())
			_, claims := e.mustRequest(w, Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeAccessToken})
			if claims.Sub != "alice" || claims.Scope != "trip.read" {
				t.Fatalf("claims %+v", claims)
			}
			// The signature is checked: one flipped octet and the token is refused.
			bad := []byte(tok)
			bad[len(bad)-5] ^= 'A' ^ 'B'
			if _, err := e.request(w, Request{Audience: tdA, Scope: "trip.read", SubjectToken: string(bad), SubjectTokenType: TokenTypeAccessToken}); err == nil {
				t.Fatal("a tampered RSA signature was accepted")
			}
		})
	}
}

// RSA is refused unless the issuer was opened to it, and a token's alg must be its
// key's one algorithm.
func TestTT1_4_RSAOnlyWhereConfigured(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	hopts := HandlerOptions{Now: func() time.Time { return now }}
	set := rsaIdPSet(t, k, keys.RS256)
	closed, _ := NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: rsaIdP, Keys: set}}, hopts)
	open, _ := NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: rsaIdP, Keys: set, RSA: true}}, hopts)
	tok := rsaAccessToken(t, k, keys.RS256, "idp-1", "alice", "trip.read", now)
	if _, err := closed.Validate(t.Context(), tok, nil); errcode.CodeOf(err) != errcode.UnsupportedAlg {
		t.Fatalf("RS256 at an issuer not opened to RSA: %v", err)
	}
	if _, err := open.Validate(t.Context(), tok, nil); err != nil {
		t.Fatal(err)
	}
	pss := rsaAccessToken(t, k, keys.PS256, "idp-1", "alice", "trip.read", now)
	if _, err := open.Validate(t.Context(), pss, nil); errcode.CodeOf(err) != errcode.UnsupportedAlg {
		t.Fatalf("PS256 with a key pinned to RS256: %v", err)
	}
}
