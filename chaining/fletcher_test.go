package chaining_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// The Transaction Token JWT Authorization Grant profile of identity chaining
// (draft-fletcher-oauth-txn-token-chaining-profile-00; chaining/fletcher.go). The
// profile's names are written out literally here, so that a change of GrantTyp or of
// the metadata fails these tests rather than following along.
const (
	fletcherTyp   = "txn-chain+jwt"
	idJAGTyp      = "oauth-id-jag+jwt"
	oldGrantTyp   = "oauth-chain-grant+jwt"
	txnTokenURN   = "urn:ietf:params:oauth:token-type:txn_token"
	jwtTokenURN   = "urn:ietf:params:oauth:token-type:jwt"
	refreshURN    = "refresh_token"
	grantTypeJWTB = "urn:ietf:params:oauth:grant-type:jwt-bearer"
)

// Section 6.1.1: the Txn-Token-JAG's typ is txn-chain+jwt; section 5.2 step 1: AS B
// validates it. The profile's relationship section has an AS that serves ID-JAGs too
// tell the two apart by typ: a grant of AS A's typed oauth-id-jag+jwt is not redeemed as
// a Txn-Token-JAG (wrong_type), nor is one under dialogtrust's earlier typ unless the
// peer's typs list it.
func TestFletcher6_1_1_GrantTypIsTxnChain(t *testing.T) {
	e := newEnv(t, envOpts{})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	g, err := e.grant(a2, e.txnToken(a2, "trip.read", "D1"), "")
	if err != nil {
		t.Fatal(err)
	}
	if h := header(t, g.AccessToken); h["typ"] != fletcherTyp {
		t.Fatalf("grant typ %v, want %s", h["typ"], fletcherTyp)
	}
	if _, err := e.redeem(a2, g.AccessToken, ""); err != nil {
		t.Fatalf("AS B refused AS A's Txn-Token-JAG: %v", err)
	}
	claims := fletcherClaims(e, a2.Key.Public())
	for _, typ := range []string{idJAGTyp, oldGrantTyp} {
		_, err := e.redeem(a2, signGrant(t, typ, e.a.ring.Active(), claims()), "")
		wantRefusal(t, err, "invalid_grant", errcode.WrongType)
	}

	// A peer still on the earlier typ is admitted by naming it.
	e2 := newEnv(t, envOpts{bearerPeer: func(p *chaining.BearerPeer) { p.Typs = []string{fletcherTyp, oldGrantTyp} }})
	b2 := e2.a.dom.Workload(t, "/agent/a2", keys.ES256)
	if _, err := e2.redeem(b2, signGrant(t, oldGrantTyp, e2.a.ring.Active(), fletcherClaims(e2, b2.Key.Public())()), ""); err != nil {
		t.Fatalf("a peer listing %s: %v", oldGrantTyp, err)
	}
}

// fletcherClaims are the claims of a valid grant from A to B for the holder key.
func fletcherClaims(e *env, holder *keys.PublicKey) func() chaining.GrantClaims {
	n := 0
	return func() chaining.GrantClaims {
		n++
		now := e.clock.Now()
		iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(time.Minute).Unix())
		scope := "trip.read"
		return chaining.GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: e.a.url, Sub: "alice@a.example", Aud: jose.Audience{e.b.url}, Iat: &iat, Exp: &exp},
			Jti: "fletcher-" + string(rune('a'+n)), Scope: &scope, RequestedCnf: &chaining.Confirmation{JKT: chaining.Thumbprint(holder)}}
	}
}

// Section 8: an AS that supports the profile includes txn_token in
// identity_chaining_requested_token_types_supported; identity chaining section 3 has it
// list the requested token type of a grant request, ...:jwt. AS A publishes both; AS B,
// which takes no token exchange for chaining, and a TTS without AS A publish neither.
func TestFletcher8_MetadataListsTxnToken(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx := context.Background()
	mdA, err := oauth.Discover(ctx, nil, e.a.url)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{txnTokenURN, jwtTokenURN} {
		if !slices.Contains(mdA.IdentityChainingRequestedTokenTypesSupported, want) {
			t.Errorf("AS A identity_chaining_requested_token_types_supported %v lacks %s", mdA.IdentityChainingRequestedTokenTypesSupported, want)
		}
	}
	mdB, err := oauth.Discover(ctx, nil, e.b.url)
	if err != nil {
		t.Fatal(err)
	}
	if len(mdB.IdentityChainingRequestedTokenTypesSupported) != 0 {
		t.Errorf("AS B publishes identity_chaining_requested_token_types_supported %v", mdB.IdentityChainingRequestedTokenTypesSupported)
	}
	var md oauth.Metadata
	chaining.MetadataFunc(false, true)(&md)
	if len(md.IdentityChainingRequestedTokenTypesSupported) != 0 {
		t.Errorf("AS B's amendment adds %v", md.IdentityChainingRequestedTokenTypesSupported)
	}
	chaining.MetadataFunc(true, false)(&md)
	chaining.MetadataFunc(true, false)(&md)
	if got := md.IdentityChainingRequestedTokenTypesSupported; len(got) != 2 {
		t.Errorf("AS A's amendment, applied twice: %v (each type once)", got)
	}
}

// Identity chaining section 5.4 and the profile's section 9.8: AS B SHOULD NOT issue
// refresh tokens, and dialogtrust's never does: not in its response, not as a grant
// type in its metadata. The profile's section 4.3.4 says the same of AS A's response.
func TestIC17Sec5_4_NoRefreshTokens(t *testing.T) {
	e := newEnv(t, envOpts{})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read", "D1")
	st, _, body := rawPost(t, e, e.a, a2, url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {jwtTokenURN},
		"subject_token": {txn}, "subject_token_type": {txnTokenURN}, "audience": {e.b.url}})
	if st != http.StatusOK || body["issued_token_type"] != jwtTokenURN || body["token_type"] != "N_A" {
		t.Fatalf("AS A: %d %v", st, body)
	}
	if _, ok := body[refreshURN]; ok {
		t.Fatalf("AS A's grant response carries a refresh_token: %v", body)
	}
	st, _, body = rawPost(t, e, e.b, a2, url.Values{"grant_type": {grantTypeJWTB}, "assertion": {body["access_token"].(string)}})
	if st != http.StatusOK || body["token_type"] != "Bearer" {
		t.Fatalf("AS B: %d %v", st, body)
	}
	if _, ok := body[refreshURN]; ok {
		t.Fatalf("AS B's access token response carries a refresh_token: %v", body)
	}
	mdB, err := oauth.Discover(context.Background(), nil, e.b.url)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(mdB.GrantTypesSupported, refreshURN) || !slices.Contains(mdB.GrantTypesSupported, grantTypeJWTB) {
		t.Fatalf("AS B grant_types_supported %v", mdB.GrantTypesSupported)
	}
}

// Sections 4.3.1, 5.1 step 6 and 6.1.2: with audience naming AS B, resource names a
// protected resource of B's domain; AS A checks it against the peer's resources and
// writes it as the grant's resource claim. Section 5.2 step 7: AS B issues the access
// token for that resource, which must be one it serves, and a request may not name
// another. A resource the peer does not list, or any resource when it lists none, is
// refused (unknown_peer), as is a grant for a resource AS B does not serve.
func TestFletcher4_3_1_ResourceIsTheProtectedResource(t *testing.T) {
	const api, other = "https://api.b.example/trips", "https://api.b.example/other"
	e := newEnv(t, envOpts{
		grantPeer: func(p *chaining.GrantPeer) { p.Resources = []string{"https://api.b.example/"} },
		bearer:    func(c *chaining.JWTBearerConfig) { c.Audiences = []string{"b.example", api, other} },
	})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read", "D1")
	ask := func(resource string) (*chaining.GrantResponse, error) {
		return e.client(a2).Grant(context.Background(), chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Audience: e.b.url, Resource: resource})
	}
	g, err := ask(api)
	if err != nil {
		t.Fatal(err)
	}
	if c := payload(t, g.AccessToken); c["resource"] != api || c["aud"] != e.b.url {
		t.Fatalf("grant claims %v: resource %s, aud AS B", c, api)
	}
	_, err = ask("https://evil.example/trips")
	wantRefusal(t, err, "invalid_target", errcode.UnknownPeer)

	redeem := func(grant, resource string) (int, map[string]any) {
		form := url.Values{"grant_type": {grantTypeJWTB}, "assertion": {grant}}
		if resource != "" {
			form.Set("resource", resource)
		}
		st, _, body := rawPost(t, e, e.b, a2, form)
		return st, body
	}
	if st, body := redeem(g.AccessToken, other); st != http.StatusBadRequest || body["error"] != "invalid_target" || body["code"] != string(errcode.AudienceNotServed) {
		t.Fatalf("a request for another resource than the grant's: %d %v", st, body)
	}
	st, body := redeem(g.AccessToken, "")
	if st != http.StatusOK {
		t.Fatalf("redeem: %d %v", st, body)
	}
	if c := payload(t, body["access_token"].(string)); c["aud"] != api {
		t.Fatalf("access token aud %v, want the grant's resource %s", c["aud"], api)
	}

	// A grant (signed by AS A's key) for a resource AS B does not serve.
	claims := fletcherClaims(e, a2.Key.Public())()
	claims.Resource = jose.Audience{"https://api.b.example/unserved"}
	if st, body := redeem(signGrant(t, fletcherTyp, e.a.ring.Active(), claims), ""); st != http.StatusBadRequest || body["code"] != string(errcode.AudienceNotServed) {
		t.Fatalf("a grant for an unserved resource: %d %v", st, body)
	}

	// A peer that lists no resources: a resource beside the audience is refused.
	e2 := newEnv(t, envOpts{})
	b2 := e2.a.dom.Workload(t, "/agent/a2", keys.ES256)
	_, err = e2.client(b2).Grant(context.Background(), chaining.GrantParams{TokenEndpoint: e2.a.endpoint(), TxnToken: e2.txnToken(b2, "trip.read", "D1"),
		Audience: e2.b.url, Resource: api})
	wantRefusal(t, err, "invalid_target", errcode.UnknownPeer)
}

// A peer's resources must be absolute URIs without fragment (or prefixes of such):
// anything else is a configuration error, found when the grant issuer is built.
func TestFletcher4_3_1_PeerResourcesChecked(t *testing.T) {
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	build := func(r string) error {
		_, err := chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: "https://as.a.example", Keys: keys.NewRing(k, nil),
			Authenticators: []oauth.Authenticator{nil}, TxnTokens: noTxnTokens{},
			Peers: []chaining.GrantPeer{{Issuer: "https://as.b.example", Resources: []string{r}}}})
		return err
	}
	for _, r := range []string{"api.b.example", "/trips", "https://api.b.example/#x", ""} {
		if build(r) == nil {
			t.Errorf("resource %q accepted in a peer's configuration", r)
		}
	}
	for _, r := range []string{"https://api.b.example/trips", "https://api.b.example/", "urn:example:trips"} {
		if err := build(r); err != nil {
			t.Errorf("resource %q: %v", r, err)
		}
	}
}

// noTxnTokens is a Txn-Token verifier for configurations that are never served.
type noTxnTokens struct{}

func (noTxnTokens) Verify(context.Context, string) (*txntoken.Claims, error) {
	return nil, errcode.New(errcode.Internal, "not served")
}
