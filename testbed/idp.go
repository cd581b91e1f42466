package testbed

import (
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/dialogtrust/dialogtrust/httpserver"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// PathIdPJWKS is where an IdP publishes its keys, under its Issuer.
const PathIdPJWKS = "/jwks"

// IdP is a.example's OpenID provider in a World started WithIdP: it signs ID tokens
// that name a workload as their audience (the workload is its client) on behalf of a
// user, and publishes its public key (JWKS) for AS A, which trusts its ID tokens as the
// subject of ID-JAG requests (draft-ietf-oauth-identity-assertion-authz-grant section
// 4.3). The user's sign-in that would precede an ID token is not played: IDToken is
// its outcome.
type IdP struct {
	// Issuer is the IdP's base URL: the iss of its ID tokens.
	Issuer string

	key *keys.PrivateKey
	hs  *httptest.Server
	now func() time.Time
}

// startIdP starts the IdP's JWKS server with a fresh ES256 key.
func startIdP(cfg *config) (*IdP, error) {
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, err
	}
	set, err := keys.NewStaticSet(k.Public())
	if err != nil {
		return nil, err
	}
	jwks, err := set.MarshalJSON()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathIdPJWKS, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(jwks)
	})
	p := &IdP{key: k, hs: httptest.NewUnstartedServer(mux), now: cfg.now}
	httpserver.SetDefaults(p.hs.Config)
	p.hs.Start()
	p.Issuer = p.hs.URL
	return p, nil
}

// idTokenClaims are the claims of the IdP's ID tokens (OpenID Connect Core section 2).
type idTokenClaims struct {
	Iss   string `json:"iss"`
	Sub   string `json:"sub"`
	Aud   string `json:"aud"`
	Iat   int64  `json:"iat"`
	Exp   int64  `json:"exp"`
	Email string `json:"email"`
}

// IDToken is an ID token of user (its sub; email user@a.example) issued to client,
// valid for five minutes on the World's clock.
func (p *IdP) IDToken(client Workload, user string) (string, error) {
	now := p.now()
	return jose.SignClaims("JWT", p.key, true, idTokenClaims{Iss: p.Issuer, Sub: user, Aud: client.ID.String(),
		Iat: now.Unix(), Exp: now.Add(5 * time.Minute).Unix(), Email: user + "@a.example"})
}

func (p *IdP) close() {
	if p != nil {
		p.hs.Close()
	}
}
