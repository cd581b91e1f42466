package tts

import (
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

const rsaIdP = "https://login.idp.example"

// rsaAccessToken is an access token as an identity provider signs it: RS256 (or PS256,
// k.Alg) with its RSA key.
func rsaAccessToken(t *testing.T, k testkit.RSAKey, sub, scope string, now time.Time) string {
	t.Helper()
	return k.Sign(t, "at+jwt", map[string]any{"iss": rsaIdP, "sub": sub, "aud": "https://api.a.example", "scope": scope,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "client_id": "web"})
}

// oauth.md 1.4: JWT access tokens from configured issuers. Identity providers sign with
// RSA, so an issuer can be opened to RS256 and PS256; a Txn-Token is then issued for
// their tokens, and their RSA signatures are checked like any other.
func TestTT1_4_RSASignedAccessTokenFromConfiguredIdP(t *testing.T) {
	key := testkit.NewRSAKey(t, "idp-1", keys.RS256, 2048)
	for _, alg := range []string{keys.RS256, keys.PS256} {
		t.Run(alg, func(t *testing.T) {
			k := key
			k.Alg = alg
			set := testkit.RSASet(t, k)
			e := newEnv(t, func(e *env, c *Config) {
				h, err := NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: rsaIdP, Keys: set, RSA: true}}, HandlerOptions{Now: e.clock.Now})
				if err != nil {
					t.Fatal(err)
				}
				c.SubjectHandlers = []SubjectTokenHandler{h}
			})
			w := e.dom.Workload(t, "/agent/a1", keys.ES256)
			tok := rsaAccessToken(t, k, "alice", "trip.read trip.book", e.clock.Now())
			_, claims := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: tok, SubjectTokenType: TokenTypeAccessToken})
			if claims.Sub != "alice" || claims.Scope != "trip.read" {
				t.Fatalf("claims %+v", claims)
			}
			// The signature is checked: one flipped octet and the token is refused.
			bad := []byte(tok)
			bad[len(bad)-5] ^= 'A' ^ 'B'
			if _, err := e.request(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: string(bad), SubjectTokenType: TokenTypeAccessToken}); err == nil {
				t.Fatal("a tampered RSA signature was accepted")
			}
		})
	}
}

// RSA is refused unless the issuer was opened to it, and a token's alg must be its
// key's one algorithm.
func TestTT1_4_RSAOnlyWhereConfigured(t *testing.T) {
	k := testkit.NewRSAKey(t, "idp-1", keys.RS256, 2048)
	now := time.Unix(1_800_000_000, 0)
	hopts := HandlerOptions{Now: func() time.Time { return now }}
	set := testkit.RSASet(t, k)
	closed, _ := NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: rsaIdP, Keys: set}}, hopts)
	open, _ := NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: rsaIdP, Keys: set, RSA: true}}, hopts)
	tok := rsaAccessToken(t, k, "alice", "trip.read", now)
	if _, err := closed.Validate(t.Context(), tok, nil); errcode.CodeOf(err) != errcode.UnsupportedAlg {
		t.Fatalf("RS256 at an issuer not opened to RSA: %v", err)
	}
	if _, err := open.Validate(t.Context(), tok, nil); err != nil {
		t.Fatal(err)
	}
	k.Alg = keys.PS256
	pss := rsaAccessToken(t, k, "alice", "trip.read", now)
	if _, err := open.Validate(t.Context(), pss, nil); errcode.CodeOf(err) != errcode.UnsupportedAlg {
		t.Fatalf("PS256 with a key pinned to RS256: %v", err)
	}
}
