package chaining_test

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// Tests of the Identity Assertion JWT Authorization Grant
// (draft-ietf-oauth-identity-assertion-authz-grant, the editor's copy of -04), named
// after the draft's sections: AS A issuing one (section 4.3), AS B redeeming one
// (section 4.4.1), the claims (section 3.1), metadata (section 7), cross-domain use
// (section 8.3).

// mcpResource is the protected resource of domain B the ID-JAGs of these tests name.
const mcpResource = "https://b.example/mcp"

// otherResource is another resource AS B issues access tokens for.
const otherResource = "https://b.example/files"

// idjagEnv is the two domains with ID-JAGs on: AS A issues them for B (naming
// mcpResource), AS B accepts them from A besides the generic grant and issues access
// tokens for b.example and mcpResource. idp, when set, is a trusted identity provider
// of AS A.
func idjagEnv(t *testing.T, idp *chaining.IDTokenIssuer, more ...func(*envOpts)) *env {
	o := envOpts{
		grantPeer: func(p *chaining.GrantPeer) { p.IDJAG = true; p.Resources = []string{mcpResource} },
		bearerPeer: func(p *chaining.BearerPeer) {
			p.Typs = []string{chaining.GrantTyp, chaining.IDJAGTyp}
		},
		bearer: func(c *chaining.JWTBearerConfig) { c.Audiences = []string{"b.example", mcpResource, otherResource} },
	}
	if idp != nil {
		o.issuer = func(c *chaining.GrantIssuerConfig) { c.IDTokens = []chaining.IDTokenIssuer{*idp} }
	}
	for _, f := range more {
		f(&o)
	}
	return newEnv(t, o)
}

func (e *env) idjag(w *testkit.Workload, p chaining.IDJAGParams) (*chaining.GrantResponse, error) {
	if p.TokenEndpoint == "" {
		p.TokenEndpoint = e.a.endpoint()
	}
	if p.Audience == "" {
		p.Audience = e.b.url
	}
	return e.client(w).IDJAG(context.Background(), p)
}

// Section 4.3 (token exchange), 4.3.4 (response), 3.1 (claims) and 4.4.1/4.4.2/4.4.3
// (redemption, response, no refresh token), end to end with a Txn-Token as the subject
// (the Fletcher profile): every claim the draft names, and nothing of the Txn-Token.
func TestIDJAG4_3_TxnTokenSubjectRoundTrip(t *testing.T) {
	e := idjagEnv(t, nil)
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read trip.book", "dlg-1")
	g, err := e.idjag(a2, chaining.IDJAGParams{SubjectToken: txn, SubjectTokenType: oauth.TokenTypeTxnToken, Resource: mcpResource, Scope: "trip.read"})
	if err != nil {
		t.Fatalf("ID-JAG: %v", err)
	}
	if g.IssuedTokenType != chaining.TokenTypeIDJAG || g.TokenType != "N_A" || g.ExpiresIn <= 0 || g.Scope != "trip.read" {
		t.Fatalf("response (section 4.3.4): %+v", g)
	}
	if h := header(t, g.AccessToken); h["typ"] != chaining.IDJAGTyp || h["kid"] == nil {
		t.Fatalf("header (section 3.1: typ MUST be oauth-id-jag+jwt): %v", h)
	}
	c := payload(t, g.AccessToken)
	want := map[string]any{"iss": e.a.url, "sub": "alice@a.example", "aud": e.b.url, "client_id": a2.ID.String(),
		"resource": mcpResource, "scope": "trip.read"}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("claim %s = %v, want %v", k, c[k], v)
		}
	}
	for _, k := range []string{"jti", "iat", "exp"} {
		if c[k] == nil {
			t.Errorf("claim %s is REQUIRED (section 3.1)", k)
		}
	}
	if cnf, _ := c["cnf"].(map[string]any); cnf["jkt"] != chaining.Thumbprint(a2.Key.Public()) {
		t.Errorf("cnf.jkt (section 8.6.1) = %v", c["cnf"])
	}
	for _, k := range []string{"tctx", "txn", "requested_cnf", "req_wl", "rctx"} {
		if _, ok := c[k]; ok {
			t.Errorf("the ID-JAG carries %s: nothing of the Txn-Token's transaction crosses", k)
		}
	}
	// Section 4.4: redeemed at AS B; the access token is for the resource granted.
	status, _, body := rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {g.AccessToken}})
	if status != 200 || body["token_type"] != "Bearer" || body["resource"] != mcpResource || body["scope"] != "trip.read" {
		t.Fatalf("redeem: %d %v", status, body)
	}
	if _, ok := body["refresh_token"]; ok {
		t.Fatal("section 4.4.3: no refresh token")
	}
	at := payload(t, body["access_token"].(string))
	if at["aud"] != mcpResource || at["client_id"] != a2.ID.String() || at["sub"] != "a.example:alice@a.example" {
		t.Fatalf("access token: %v", at)
	}
	// RFC 7523 section 3 item 7 / the draft's replay rule: once only.
	status, _, body = rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {g.AccessToken}})
	if status != 400 || body["error"] != "invalid_grant" || body["code"] != string(errcode.Replayed) {
		t.Fatalf("replayed ID-JAG: %d %v", status, body)
	}
}

// Section 4.3: the request rules of AS A.
func TestIDJAG4_3_RequestRefusals(t *testing.T) {
	e := idjagEnv(t, nil)
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read trip.book", "dlg-1")
	tx := oauth.TokenTypeTxnToken
	post := func(form url.Values) (int, map[string]any) {
		s, _, b := rawPost(t, e, e.a, a2, form)
		return s, b
	}
	base := func() url.Values {
		return url.Values{"grant_type": {oauth.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeIDJAG},
			"subject_token": {txn}, "subject_token_type": {tx}, "audience": {e.b.url}}
	}
	cases := []struct {
		name   string
		edit   func(url.Values)
		oauth  string
		code   errcode.Code
		status int
	}{
		{"audience REQUIRED, resource does not name the AS", func(f url.Values) { f.Del("audience"); f.Set("resource", e.b.url) }, "invalid_request", errcode.InvalidRequest, 400},
		{"audience names no peer", func(f url.Values) { f.Set("audience", "https://as.c.example") }, "invalid_target", errcode.UnknownPeer, 400},
		{"resource not allowed for the peer", func(f url.Values) { f.Set("resource", "https://b.example/other") }, "invalid_target", errcode.ResourceNotAllowed, 400},
		{"scope beyond the Txn-Token's", func(f url.Values) { f.Set("scope", "trip.cancel") }, "invalid_scope", errcode.ScopeTooBroad, 400},
		{"ID token subject without a trusted IdP", func(f url.Values) { f.Set("subject_token_type", chaining.TokenTypeIDToken) }, "invalid_request", errcode.UnsupportedTokenType, 400},
		{"an access token is no subject here", func(f url.Values) { f.Set("subject_token_type", oauth.TokenTypeAccessToken) }, "invalid_request", errcode.UnsupportedTokenType, 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := base()
			c.edit(f)
			status, body := post(f)
			if status != c.status || body["error"] != c.oauth || body["code"] != string(c.code) {
				t.Fatalf("got %d %v, want %d %s %s", status, body, c.status, c.oauth, c.code)
			}
		})
	}
	// A peer without IDJAG gets no ID-JAG: the operator opens each peer.
	off := newEnv(t, envOpts{})
	w := off.a.dom.Workload(t, "/agent/a2", keys.ES256)
	_, err := off.idjag(w, chaining.IDJAGParams{SubjectToken: off.txnToken(w, "trip.read", "d"), SubjectTokenType: tx})
	wantRefusal(t, err, "invalid_request", errcode.UnsupportedTokenType)
	// Lateral movement (as for the generic grant): a workload of another domain.
	c1 := testkit.NewDomain(t, "c.example", keys.ES256, e.clock).Workload(t, "/agent/c1", keys.ES256)
	_, err = e.idjag(c1, chaining.IDJAGParams{SubjectToken: txn, SubjectTokenType: tx})
	if err == nil {
		t.Fatal("a workload of another trust domain got an ID-JAG on domain A's Txn-Token")
	}
}

// Section 4.3.3: an ID token of a trusted IdP as the subject; the IdP (AS A) MUST
// validate it and MUST check its aud is the authenticated client.
func TestIDJAG4_3_3_IDTokenSubject(t *testing.T) {
	idpKey, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(idpKey.Public())
	const idpIss = "https://idp.a.example"
	idp := &chaining.IDTokenIssuer{Issuer: idpIss, Keys: set, ClientIDs: map[string]string{"wiki-app": "wimse://a.example/agent/a3"}}
	e := idjagEnv(t, idp)
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	a3 := e.a.dom.Workload(t, "/agent/a3", keys.ES256)
	now := e.clock.Now()
	nd := func(d time.Duration) *jose.NumericDate { n := jose.NumericDate(now.Add(d).Unix()); return &n }
	idToken := func(typ string, key *keys.PrivateKey, edit func(*jose.RegisteredClaims)) string {
		c := jose.RegisteredClaims{Iss: idpIss, Sub: "U019488227", Aud: jose.Audience{a2.ID.String()}, Iat: nd(0), Exp: nd(time.Hour)}
		if edit != nil {
			edit(&c)
		}
		return signGrant(t, typ, key, c)
	}
	ask := func(w *testkit.Workload, tok string) (*chaining.GrantResponse, error) {
		return e.idjag(w, chaining.IDJAGParams{SubjectToken: tok, SubjectTokenType: chaining.TokenTypeIDToken, Resource: mcpResource})
	}
	g, err := ask(a2, idToken("JWT", idpKey, nil))
	if err != nil {
		t.Fatalf("ID token subject: %v", err)
	}
	c := payload(t, g.AccessToken)
	if c["sub"] != "U019488227" || c["client_id"] != a2.ID.String() || c["scope"] != "trip.read trip.book" || c["aud"] != e.b.url {
		t.Fatalf("ID-JAG on an ID token: %v", c)
	}
	// The ID-JAG never outlives the ID token.
	short, err := ask(a2, idToken("JWT", idpKey, func(c *jose.RegisteredClaims) { c.Exp = nd(10 * time.Second) }))
	if err != nil || short.ExpiresIn > 10 {
		t.Fatalf("ID-JAG past the ID token's exp: %v %+v", err, short)
	}
	// An aud the IdP knows the workload by (ClientIDs) names it too.
	if _, err := ask(a3, idToken("JWT", idpKey, func(c *jose.RegisteredClaims) { c.Aud = jose.Audience{"wiki-app"} })); err != nil {
		t.Fatalf("mapped client_id: %v", err)
	}
	stranger, _ := keys.Generate(keys.ES256)
	cases := []struct {
		name string
		w    *testkit.Workload
		tok  string
		code errcode.Code
	}{
		{"issued to another client (aud)", a3, idToken("JWT", idpKey, nil), errcode.SubjectClientMismatch},
		{"mapped client_id of another workload", a2, idToken("JWT", idpKey, func(c *jose.RegisteredClaims) { c.Aud = jose.Audience{"wiki-app"} }), errcode.SubjectClientMismatch},
		{"untrusted IdP", a2, idToken("JWT", idpKey, func(c *jose.RegisteredClaims) { c.Iss = "https://idp.c.example" }), errcode.UntrustedIssuer},
		{"forged", a2, idToken("JWT", stranger.WithKID(idpKey.KID()), nil), errcode.InvalidSignature},
		{"expired", a2, idToken("JWT", idpKey, func(c *jose.RegisteredClaims) { c.Exp = nd(-time.Minute) }), errcode.Expired},
		{"no exp", a2, idToken("JWT", idpKey, func(c *jose.RegisteredClaims) { c.Exp = nil }), errcode.MissingClaim},
		{"no sub", a2, idToken("JWT", idpKey, func(c *jose.RegisteredClaims) { c.Sub = "" }), errcode.MissingClaim},
		{"another kind of token (typ)", a2, idToken(chaining.IDJAGTyp, idpKey, nil), errcode.WrongType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ask(c.w, c.tok)
			wantRefusal(t, err, "", c.code)
		})
	}
}

// Section 4.4.1: the processing rules of the resource authorization server (AS B),
// each MUST with a grant that breaks it alone.
func TestIDJAG4_4_1_RedemptionChecks(t *testing.T) {
	e := idjagEnv(t, nil)
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	now := e.clock.Now()
	nd := func(d time.Duration) *jose.NumericDate { n := jose.NumericDate(now.Add(d).Unix()); return &n }
	scope := "trip.read"
	n := 0
	base := func() chaining.GrantClaims {
		n++
		return chaining.GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: e.a.url, Sub: "alice@a.example", Aud: jose.Audience{e.b.url}, Iat: nd(0), Exp: nd(time.Minute)},
			Jti: "jag-" + time.Now().Format("150405.000000000") + string(rune('a'+n%26)) + string(rune('a'+n/26)), Scope: &scope, ClientID: a2.ID.String(),
			Resource: jose.Audience{mcpResource}, Cnf: &chaining.Confirmation{JKT: chaining.Thumbprint(a2.Key.Public())}}
	}
	key := e.a.ring.Active()
	jag := func(edit func(*chaining.GrantClaims)) string {
		g := base()
		if edit != nil {
			edit(&g)
		}
		return signGrant(t, chaining.IDJAGTyp, key, g)
	}
	cases := []struct {
		name     string
		grant    string
		resource string
		oauth    string
		code     errcode.Code
	}{
		{"ok", jag(nil), "", "", ""},
		{"aud an array of exactly the issuer", jag(func(g *chaining.GrantClaims) { g.Aud = jose.Audience{e.b.url} }), "", "", ""},
		{"aud an array of two", jag(func(g *chaining.GrantClaims) { g.Aud = jose.Audience{e.b.url, "https://as.c.example"} }), "", "invalid_grant", errcode.AudienceMismatch},
		{"aud the token endpoint, not the issuer", jag(func(g *chaining.GrantClaims) { g.Aud = jose.Audience{e.b.endpoint()} }), "", "invalid_grant", errcode.AudienceMismatch},
		{"aud another AS", jag(func(g *chaining.GrantClaims) { g.Aud = jose.Audience{"https://as.c.example"} }), "", "invalid_grant", errcode.AudienceMismatch},
		{"client_id another client", jag(func(g *chaining.GrantClaims) { g.ClientID = "wimse://a.example/agent/a9" }), "", "invalid_grant", errcode.GrantClientMismatch},
		{"client_id absent", jag(func(g *chaining.GrantClaims) { g.ClientID = "" }), "", "invalid_grant", errcode.MissingClaim},
		{"iat absent", jag(func(g *chaining.GrantClaims) { g.Iat = nil }), "", "invalid_grant", errcode.MissingClaim},
		{"jti absent", jag(func(g *chaining.GrantClaims) { g.Jti = "" }), "", "invalid_grant", errcode.MissingClaim},
		{"expired", jag(func(g *chaining.GrantClaims) { g.Exp = nd(-time.Minute) }), "", "invalid_grant", errcode.Expired},
		{"lifetime too long", jag(func(g *chaining.GrantClaims) { g.Exp = nd(time.Hour) }), "", "invalid_grant", errcode.LifetimeTooLong},
		{"resource not served here", jag(func(g *chaining.GrantClaims) { g.Resource = jose.Audience{"https://c.example/mcp"} }), "", "invalid_grant", errcode.ResourceNotAllowed},
		{"resource parameter outside the grant's", jag(nil), otherResource, "invalid_grant", errcode.ResourceNotAllowed},
		{"authorization_details not an array", jag(func(g *chaining.GrantClaims) { g.AuthorizationDetails = json.RawMessage(`{"type":"x"}`) }), "", "invalid_grant", errcode.InvalidClaim},
		{"authorization_details an array (parsed, none granted)", jag(func(g *chaining.GrantClaims) { g.AuthorizationDetails = json.RawMessage(`[{"type":"chat_read"}]`) }), "", "", ""},
		{"cnf of another key", jag(func(g *chaining.GrantClaims) { g.Cnf = &chaining.Confirmation{JKT: "x" + g.Cnf.JKT[1:]} }), "", "invalid_grant", errcode.GrantBindingMismatch},
		{"no cnf, peer binds", jag(func(g *chaining.GrantClaims) { g.Cnf = nil }), "", "invalid_grant", errcode.GrantBindingMismatch},
		{"requested_cnf is not an ID-JAG's binding", jag(func(g *chaining.GrantClaims) { g.RequestedCnf, g.Cnf = g.Cnf, nil }), "", "invalid_grant", errcode.GrantBindingMismatch},
		{"no scope", jag(func(g *chaining.GrantClaims) { g.Scope = nil }), "", "invalid_scope", errcode.ScopeUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			form := url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {c.grant}}
			if c.resource != "" {
				form.Set("resource", c.resource)
			}
			status, _, body := rawPost(t, e, e.b, a2, form)
			if c.code == "" {
				if status != 200 {
					t.Fatalf("refused: %d %v", status, body)
				}
				return
			}
			if status != 400 || body["error"] != c.oauth || body["code"] != string(c.code) {
				t.Fatalf("got %d %v, want %s %s", status, body, c.oauth, c.code)
			}
		})
	}
	// Section 4.4.1 first item (typ): a peer that does not accept ID-JAGs refuses one.
	plain := newEnv(t, envOpts{})
	w := plain.a.dom.Workload(t, "/agent/a2", keys.ES256)
	g := base()
	g.ClientID, g.Cnf = w.ID.String(), &chaining.Confirmation{JKT: chaining.Thumbprint(w.Key.Public())}
	g.Iss = plain.a.url
	g.Aud = jose.Audience{plain.b.url}
	_, err := plain.redeem(w, signGrant(t, chaining.IDJAGTyp, plain.a.ring.Active(), g), "")
	wantRefusal(t, err, "invalid_grant", errcode.WrongType)
	// And an ID-JAG's typ does not make a generic grant of it at a peer taking both.
	gg := base()
	gg.RequestedCnf, gg.Cnf, gg.ClientID = gg.Cnf, nil, ""
	status, _, body := rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {signGrant(t, chaining.GrantTyp, key, gg)}})
	if status != 200 {
		t.Fatalf("the generic grant next to ID-JAGs: %d %v", status, body)
	}
}

// Section 8.3: an AS never issues access tokens for an ID-JAG it issued itself: a
// jwt-bearer AS cannot have itself as a peer, and its own ID-JAG is an untrusted
// issuer's at its token endpoint.
func TestIDJAG8_3_NotRedeemedByItsIssuer(t *testing.T) {
	e := idjagEnv(t, nil)
	ring := e.b.ring
	_, err := chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: e.b.url, Keys: ring, Authenticators: []oauth.Authenticator{nil},
		Replay: e.b.replay, Audiences: []string{"b.example"},
		Peers: []chaining.BearerPeer{{Issuer: e.b.url, Keys: chaining.RingKeySet(ring), Scopes: []string{"x"}, Typs: []string{chaining.IDJAGTyp}}}})
	if err == nil {
		t.Fatal("a jwt-bearer AS took itself as a peer")
	}
	b1 := e.b.dom.Workload(t, "/agent/b1", keys.ES256)
	now := e.clock.Now()
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(time.Minute).Unix())
	sc := "trip.read"
	own := signGrant(t, chaining.IDJAGTyp, ring.Active(), chaining.GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: e.b.url, Sub: "bob", Aud: jose.Audience{e.b.url}, Iat: &iat, Exp: &exp},
		Jti: "own-1", Scope: &sc, ClientID: b1.ID.String(), Cnf: &chaining.Confirmation{JKT: chaining.Thumbprint(b1.Key.Public())}})
	_, err = e.redeem(b1, own, "")
	wantRefusal(t, err, "invalid_grant", errcode.UntrustedIssuer)
}

// Section 7: AS A names id-jag in identity_chaining_requested_token_types_supported,
// AS B the ID-JAG profile in authorization_grant_profiles_supported (and jwt-bearer in
// grant_types_supported), and never its peers (section 8.4).
func TestIDJAG7_Metadata(t *testing.T) {
	e := idjagEnv(t, nil)
	get := func(s *side) oauth.Metadata {
		md, err := oauth.Discover(context.Background(), nil, s.url)
		if err != nil {
			t.Fatal(err)
		}
		return *md
	}
	a, b := get(e.a), get(e.b)
	if !slices.Contains(a.IdentityChainingRequestedTokenTypesSupported, chaining.TokenTypeIDJAG) || !slices.Contains(a.IssuedTokenTypesSupported, chaining.TokenTypeIDJAG) {
		t.Errorf("AS A metadata: %+v", a)
	}
	if !slices.Contains(b.AuthorizationGrantProfilesSupported, chaining.GrantProfileIDJAG) || !slices.Contains(b.GrantTypesSupported, chaining.GrantTypeJWTBearer) {
		t.Errorf("AS B metadata: %+v", b)
	}
	raw, _ := json.Marshal(b)
	if s := string(raw); len(b.AuthorizationGrantProfilesSupported) != 1 || strings.Contains(s, `"authorization_grant_profiles_supported":["`+e.a.url) {
		t.Errorf("AS B metadata discloses more than the profile: %s", s)
	}
	// Without ID-JAG peers, neither appears.
	plain := newEnv(t, envOpts{})
	if pa, pb := get(plain.a), get(plain.b); slices.Contains(pa.IdentityChainingRequestedTokenTypesSupported, chaining.TokenTypeIDJAG) || len(pb.AuthorizationGrantProfilesSupported) != 0 {
		t.Errorf("ID-JAG advertised without ID-JAG peers: %+v %+v", pa, pb)
	}
}
