package chaining_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
)

// RSA grants and untyped grants at AS B (RFC 7523 section 3: RS256 is the algorithm
// every implementation supports; identity-chaining does not require a typ): accepted
// only from a peer opened to RSA, or allowing untyped grants, each refusal naming its
// reason.
func TestChaining4_2_RSAAndUntypedGrants(t *testing.T) {
	rs := testkit.NewRSAKey(t, "idp-rs", keys.RS256, 2048)
	ps := testkit.NewRSAKey(t, "idp-ps", keys.PS256, 2048)
	set := testkit.RSASet(t, rs, ps)
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
			return chaining.GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: e.a.url, Sub: "alice", Aud: jose.Audience{aud}, Iat: nd(0), Exp: nd(time.Minute)},
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
		for _, k := range []testkit.RSAKey{rs, ps} {
			res, err := e.redeem(w, k.Sign(t, chaining.GrantTyp, bind(e, base(e.b.url), w.Key)), "")
			if err != nil {
				t.Fatalf("%s grant: %v", k.Alg, err)
			}
			if payload(t, res.AccessToken)["sub"] != "a.example:alice" {
				t.Fatalf("%s: access token %v", k.Alg, payload(t, res.AccessToken))
			}
		}
		_, err := e.redeem(w, rs.Sign(t, "", bind(e, base(e.b.url), w.Key)), "")
		wantRefusal(t, err, "invalid_grant", errcode.WrongType)
	})
	t.Run("peer not opened to RSA", func(t *testing.T) {
		e, base := setUp(peerOpts{})
		w := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
		for _, k := range []testkit.RSAKey{rs, ps} {
			_, err := e.redeem(w, k.Sign(t, chaining.GrantTyp, bind(e, base(e.b.url), w.Key)), "")
			wantRefusal(t, err, "invalid_grant", errcode.UnsupportedAlg)
		}
	})
	t.Run("untyped allowed", func(t *testing.T) {
		e, base := setUp(peerOpts{rsa: true, untyped: true, audiences: []string{"https://as.b.example/chaining"}})
		w := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
		if _, err := e.redeem(w, rs.Sign(t, "", bind(e, base("https://as.b.example/chaining"), w.Key)), ""); err != nil {
			t.Fatalf("untyped grant: %v", err)
		}
		// A typ that is present is still checked.
		_, err := e.redeem(w, rs.Sign(t, "JWT", bind(e, base("https://as.b.example/chaining"), w.Key)), "")
		wantRefusal(t, err, "invalid_grant", errcode.WrongType)
		// The audiences replace the issuer identifier: a grant naming it is not for this peer's way in.
		_, err = e.redeem(w, rs.Sign(t, "", bind(e, base(e.b.url), w.Key)), "")
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
