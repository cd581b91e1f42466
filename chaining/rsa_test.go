package chaining_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
)

// rsaPeerKey is an identity provider's RSA signing key, published with alg and kid.
type rsaPeerKey struct {
	kid, alg string
	key      *rsa.PrivateKey
}

func newRSAPeerKey(t testing.TB, kid, alg string, bits int) rsaPeerKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return rsaPeerKey{kid: kid, alg: alg, key: k}
}

func (k rsaPeerKey) jwk() map[string]any {
	enc := base64.RawURLEncoding.EncodeToString
	return map[string]any{"kty": "RSA", "kid": k.kid, "alg": k.alg, "use": "sig",
		"n": enc(k.key.N.Bytes()), "e": enc(big.NewInt(int64(k.key.E)).Bytes())}
}

// sign makes a JWS with header typ (none when empty) and the claims.
func (k rsaPeerKey) sign(t testing.TB, typ string, claims any) string {
	t.Helper()
	h := map[string]any{"alg": k.alg, "kid": k.kid}
	if typ != "" {
		h["typ"] = typ
	}
	hb, _ := json.Marshal(h)
	pb, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(hb) + "." + enc(pb)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	if k.alg == keys.PS256 {
		sig, err = rsa.SignPSS(rand.Reader, k.key, crypto.SHA256, sum[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	} else {
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.key, crypto.SHA256, sum[:])
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

func rsaSet(t testing.TB, ks ...rsaPeerKey) keys.KeySet {
	t.Helper()
	var jwks []map[string]any
	for _, k := range ks {
		jwks = append(jwks, k.jwk())
	}
	b, _ := json.Marshal(map[string]any{"keys": jwks})
	set, err := keys.ParseJWKSWithRSA(b, keys.RSAPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// RSA grants and untyped grants at AS B (RFC 7523 section 3: RS256 is the algorithm
// every implementation supports; identity-chaining does not require a typ): accepted
// only from a peer opened to RSA, or allowing untyped grants, each refusal naming its
// reason.
func TestChaining4_2_RSAAndUntypedGrants(t *testing.T) {
	rs := newRSAPeerKey(t, "idp-rs", keys.RS256, 2048)
	ps := newRSAPeerKey(t, "idp-ps", keys.PS256, 2048)
	set := rsaSet(t, rs, ps)
	type peerOpts struct {
		rsa, untyped bool
		audiences    []string
	}
	setUp := func(o peerOpts) (*env, func(aud string) chaining.GrantClaims) {
		e := newEnv(t, envOpts{quiet: true, bearerPeer: func(p *chaining.BearerPeer) {
			p.Keys, p.RSA, p.AllowUntyped, p.Audiences = set, o.rsa, o.untyped, o.audiences
		}})
		return e, func(aud string) chaining.GrantClaims {
			now := e.clock.Now()
			nd := func(d time.Duration) *jose.NumericDate { n := jose.NumericDate(now.Add(d).Unix()); return &n }
			scope := "trip.read"
			return chaining.GrantClaims{Iss: e.a.url, Sub: "alice", Aud: jose.Audience{aud}, Iat: nd(0), Exp: nd(time.Minute),
				Jti: "j-" + time.Now().Format("150405.000000000"), Scope: &scope}
		}
	}
	bind := func(_ *env, g chaining.GrantClaims, w interface{ Public() *keys.PublicKey }) chaining.GrantClaims {
		g.RequestedCnf = &chaining.Confirmation{JKT: chaining.Thumbprint(w.Public())}
		return g
	}

	t.Run("RSA peer", func(t *testing.T) {
		e, base := setUp(peerOpts{rsa: true})
		w := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
		for _, k := range []rsaPeerKey{rs, ps} {
			res, err := e.redeem(w, k.sign(t, chaining.GrantTyp, bind(e, base(e.b.url), w.Key)), "")
			if err != nil {
				t.Fatalf("%s grant: %v", k.alg, err)
			}
			if payload(t, res.AccessToken)["sub"] != "a.example:alice" {
				t.Fatalf("%s: access token %v", k.alg, payload(t, res.AccessToken))
			}
		}
		_, err := e.redeem(w, rs.sign(t, "", bind(e, base(e.b.url), w.Key)), "")
		wantRefusal(t, err, "invalid_grant", errcode.WrongType)
	})
	t.Run("peer not opened to RSA", func(t *testing.T) {
		e, base := setUp(peerOpts{})
		w := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
		for _, k := range []rsaPeerKey{rs, ps} {
			_, err := e.redeem(w, k.sign(t, chaining.GrantTyp, bind(e, base(e.b.url), w.Key)), "")
			wantRefusal(t, err, "invalid_grant", errcode.UnsupportedAlg)
		}
	})
	t.Run("untyped allowed", func(t *testing.T) {
		e, base := setUp(peerOpts{rsa: true, untyped: true, audiences: []string{"https://as.b.example/chaining"}})
		w := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
		if _, err := e.redeem(w, rs.sign(t, "", bind(e, base("https://as.b.example/chaining"), w.Key)), ""); err != nil {
			t.Fatalf("untyped grant: %v", err)
		}
		// A typ that is present is still checked.
		_, err := e.redeem(w, rs.sign(t, "JWT", bind(e, base("https://as.b.example/chaining"), w.Key)), "")
		wantRefusal(t, err, "invalid_grant", errcode.WrongType)
		// The audiences replace the issuer identifier: a grant naming it is not for this peer's way in.
		_, err = e.redeem(w, rs.sign(t, "", bind(e, base(e.b.url), w.Key)), "")
		wantRefusal(t, err, "invalid_grant", errcode.AudienceMismatch)
	})
}

// A peer's configuration: untyped grants need audiences, RSA algorithms in algs need RSA.
func TestChaining4_2_RSAPeerConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer func(*chaining.BearerPeer)
		want string
	}{
		{"untyped without audiences", func(p *chaining.BearerPeer) { p.AllowUntyped = true }, "untyped"},
		{"RS256 allowed without RSA", func(p *chaining.BearerPeer) { p.Algs = []string{keys.RS256} }, "RS256"},
		{"RS256 allowed with RSA", func(p *chaining.BearerPeer) { p.Algs, p.RSA = []string{keys.RS256, keys.PS256}, true }, ""},
		{"HS256 with RSA", func(p *chaining.BearerPeer) { p.Algs, p.RSA = []string{"HS256"}, true }, "HS256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := keys.Generate(keys.ES256)
			if err != nil {
				t.Fatal(err)
			}
			ring := keys.NewRing(k, nil)
			p := chaining.BearerPeer{Issuer: "https://as.a.example", Keys: chaining.RingKeySet(ring), Scopes: []string{"s"}}
			tc.peer(&p)
			_, err = chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: "https://as.b.example", Keys: ring,
				Authenticators: []oauth.Authenticator{nil}, Replay: store.NewMemory(), Peers: []chaining.BearerPeer{p}, Audiences: []string{"b.example"}})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
