package chaining_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

func signRequest(t testing.TB, e *env, req *http.Request, w *testkit.Workload, aud string) {
	t.Helper()
	if _, err := httpsig.NewSigner(w.Key, w.WIT, httpsig.WithClock(e.clock.Now)).SignRequest(req, aud); err != nil {
		t.Fatal(err)
	}
}

// The grant of oauth.md 2.3 as dialogtrust issues it: typed, one audience, short,
// bound to the requester's WIT key, and carrying nothing of the Txn-Token but its
// subject and a scope within its own.
func TestChaining2_3_GrantContents(t *testing.T) {
	e := newEnv(t, envOpts{})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.EdDSA)
	txn := e.txnToken(a2, "trip.read trip.book", "D1-7f3c9a2e")
	g, err := e.grant(a2, txn, "")
	if err != nil {
		t.Fatal(err)
	}
	if g.IssuedTokenType != chaining.TokenTypeJWT || g.TokenType != "N_A" || g.ExpiresIn != 60 || g.Scope != "trip.read trip.book" {
		t.Fatalf("response %+v", g)
	}
	h := header(t, g.AccessToken)
	if h["typ"] != chaining.GrantTyp || h["kid"] != e.a.ring.Active().KID() || h["alg"] != "ES256" {
		t.Fatalf("header %v", h)
	}
	c := payload(t, g.AccessToken)
	var names []string
	for k := range c {
		names = append(names, k)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "aud,exp,iat,iss,jti,requested_cnf,scope,sub" {
		t.Fatalf("grant claims %v: exactly iss, sub, aud, iat, exp, jti, scope, requested_cnf", names)
	}
	// and written in this order (GrantClaims, its registered claims embedded): the
	// octets of a grant do not depend on how the Go type is laid out.
	text, err := base64.RawURLEncoding.DecodeString(strings.Split(g.AccessToken, ".")[1])
	if err != nil {
		t.Fatal(err)
	}
	at := -1
	for _, n := range []string{"iss", "sub", "aud", "iat", "exp", "jti", "scope", "requested_cnf"} {
		i := strings.Index(string(text), `"`+n+`":`)
		if i <= at {
			t.Fatalf("grant claims %s: %s out of order", text, n)
		}
		at = i
	}
	now := float64(e.clock.Now().Unix())
	switch {
	case c["iss"] != e.a.url || c["sub"] != "alice@a.example" || c["aud"] != e.b.url:
		t.Fatalf("iss/sub/aud %v", c)
	case c["iat"] != now || c["exp"] != now+60:
		t.Fatalf("times %v", c)
	case len(c["jti"].(string)) != 22:
		t.Fatalf("jti %v: 128 bits", c["jti"])
	case c["requested_cnf"].(map[string]any)["jkt"] != a2.Key.Public().Thumbprint():
		t.Fatalf("requested_cnf %v", c["requested_cnf"])
	}
	raw, _ := json.Marshal(c)
	if strings.Contains(string(raw), "D1-7f3c9a2e") || strings.Contains(string(raw), tokenhash.Of(txn)) {
		t.Fatal("the grant carries the dialog or the Txn-Token's hash")
	}
	// The grant verifies through the one typed-token path with AS A's published keys.
	if _, err := jose.Verify(context.Background(), g.AccessToken, jose.Options{Typ: chaining.GrantTyp}, e.a.ring.KeySet()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.a.logs.String(), `"grant_sha256":"`+tokenhash.Of(g.AccessToken)+`"`) || strings.Contains(e.a.logs.String(), g.AccessToken) || strings.Contains(e.a.logs.String(), txn) {
		t.Fatal("the log must name tokens by hash only")
	}
}

// A grant never outlives its Txn-Token (oauth.md 1.5 step 10 by analogy), and an
// explicit narrower scope is granted as asked.
func TestChaining2_3_GrantLifetimeAndScope(t *testing.T) {
	e := newEnv(t, envOpts{})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read trip.book", "D1")
	e.clock.Advance(5*time.Minute - 20*time.Second) // the Txn-Token has 20 s left
	g, err := e.grant(a2, txn, "trip.read")
	if err != nil {
		t.Fatal(err)
	}
	if g.ExpiresIn != 20 || g.Scope != "trip.read" {
		t.Fatalf("%+v", g)
	}
}

// Refusals of AS A (RFC 8693 section 2.2.2 with oauth.md 1.11's mapping).
func TestChaining2_2_GrantRefusals(t *testing.T) {
	e := newEnv(t, envOpts{grantPeer: func(p *chaining.GrantPeer) {
		p.Scopes = []string{"trip.read"}
		p.Workloads = []string{"wimse://a.example/agent/"}
	}})
	ctx := context.Background()
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read trip.book", "D1")
	c := e.client(a2)

	_, err := c.Grant(ctx, chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Audience: e.b.url, Scope: "trip.book"})
	wantRefusal(t, err, "invalid_scope", errcode.ScopeTooBroad)
	_, err = c.Grant(ctx, chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Audience: e.b.url, Scope: "trip.read pay"})
	wantRefusal(t, err, "invalid_scope", errcode.ScopeTooBroad)
	// Without a scope: the Txn-Token's, narrowed to what may cross.
	if g, err := c.Grant(ctx, chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Audience: e.b.url}); err != nil || g.Scope != "trip.read" {
		t.Fatalf("%+v %v", g, err)
	}
	// The peer by resource (token endpoint) or by another configured name.
	if _, err := c.Grant(ctx, chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Resource: e.b.endpoint()}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Grant(ctx, chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Audience: "as.b.example"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Grant(ctx, chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Audience: "https://as.c.example"})
	wantRefusal(t, err, "invalid_target", errcode.UnknownPeer)
	_, err = c.Grant(ctx, chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Audience: e.b.url, Resource: "https://as.c.example/token"})
	wantRefusal(t, err, "invalid_target", errcode.UnknownPeer)
	// A workload the peer's policy does not list.
	tool := e.a.dom.Workload(t, "/tool/t1", keys.ES256)
	_, err = e.grant(tool, e.txnToken(tool, "trip.read", "D1"), "")
	wantRefusal(t, err, "unauthorized_client", errcode.WorkloadNotAllowed)
	// A tampered Txn-Token, and an expired one.
	_, err = c.Grant(ctx, chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn[:len(txn)-4] + "AAAA", Audience: e.b.url})
	wantRefusal(t, err, "invalid_request", errcode.InvalidSignature)
	// Not authenticated.
	st, hdr, body := rawPost(t, e, e.a, nil, url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeJWT},
		"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {e.b.url}})
	if st != http.StatusUnauthorized || body["error"] != "invalid_client" || body["code"] != string(errcode.Unauthenticated) || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v", st, body)
	}
	// Another subject token type, an actor, a repeated parameter.
	for _, f := range []url.Values{
		{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeJWT}, "subject_token": {txn}, "subject_token_type": {tts.TokenTypeAccessToken}, "audience": {e.b.url}},
		{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeJWT}, "subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {e.b.url}, "actor_token": {"x"}},
		{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeJWT}, "subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {e.b.url, "as.b.example"}},
	} {
		st, _, body := rawPost(t, e, e.a, a2, f)
		if st != http.StatusBadRequest || body["error"] != "invalid_request" {
			t.Fatalf("%v: %d %v", f, st, body)
		}
	}
	e.clock.Advance(6 * time.Minute)
	_, err = c.Grant(ctx, chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Audience: e.b.url})
	wantRefusal(t, err, "invalid_request", errcode.Expired)
}

// AS B issues an RFC 9068 access token bound to the client's WIT key, never a refresh
// token; the TTS of domain B accepts it as a subject token and records the dialog.
func TestChaining2_4_AccessToken(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx := context.Background()
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.EdDSA)
	grant := e.mustGrant(a2, e.txnToken(a2, "trip.read trip.book", "D1"), "")
	st, hdr, body := rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}, "scope": {"trip.read"}})
	if st != http.StatusOK || hdr.Get("Cache-Control") != "no-store" || hdr.Get("Pragma") != "no-cache" {
		t.Fatalf("%d %v", st, body)
	}
	if _, ok := body["refresh_token"]; ok || body["token_type"] != "Bearer" || body["expires_in"] != 300.0 || body["scope"] != "trip.read" {
		t.Fatalf("response %v", body)
	}
	at := body["access_token"].(string)
	h := header(t, at)
	if h["typ"] != "at+jwt" || h["kid"] != e.b.ring.Active().KID() {
		t.Fatalf("header %v", h)
	}
	v := &chaining.AccessTokenVerifier{Keys: e.b.ring.KeySet(), Issuer: e.b.url, Audience: "b.example", Now: e.clock.Now}
	c, err := v.Verify(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sub != "a.example:alice@a.example" || c.ClientID != a2.ID.String() || c.Scope != "trip.read" || len(c.Aud) != 1 || c.Aud[0] != "b.example" || c.Jti == "" {
		t.Fatalf("claims %+v", c)
	}
	if err := chaining.CheckHolder(c, a2.Key.Public()); err != nil {
		t.Fatal(err)
	}
	other, _ := keys.Generate(keys.EdDSA)
	if err := chaining.CheckHolder(c, other.Public()); errcode.CodeOf(err) != errcode.GrantBindingMismatch {
		t.Fatalf("another holder: %v", err)
	}
	if _, err := (&chaining.AccessTokenVerifier{Keys: e.b.ring.KeySet(), Issuer: e.b.url, Audience: "c.example", Now: e.clock.Now}).Verify(ctx, at); errcode.CodeOf(err) != errcode.AudienceMismatch {
		t.Fatalf("other audience: %v", err)
	}
	// TTS B: the access token as subject token, the linked dialog in request_details.
	b1 := e.b.dom.Workload(t, "/agent/b1", keys.ES256)
	res, err := (&txntoken.Client{TokenEndpoint: e.b.endpoint(), WIT: b1.WIT, Key: b1.Key, Now: e.clock.Now, Proof: proof.WPT}).Request(ctx,
		txntoken.Request{Audience: "b.example", Scope: "trip.read", SubjectToken: at, SubjectTokenType: tts.TokenTypeAccessToken, Dialog: "D2"})
	if err != nil {
		t.Fatal(err)
	}
	claims, err := txntoken.NewVerifier(e.b.ring.KeySet(), "b.example", txntoken.WithClock(e.clock.Now), txntoken.WithIssuer(e.b.url)).Verify(ctx, res.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if claims.Dialog() != "D2" || claims.Sub != "a.example:alice@a.example" || claims.ReqWL != b1.ID.String() {
		t.Fatalf("Txn-Token %+v", claims)
	}
	// A grant is not an access token, and a Txn-Token is neither (explicit typing).
	_, err = (&txntoken.Client{TokenEndpoint: e.b.endpoint(), WIT: b1.WIT, Key: b1.Key, Now: e.clock.Now, Proof: proof.WPT}).Request(ctx,
		txntoken.Request{Audience: "b.example", Scope: "trip.read", SubjectToken: res.AccessToken, SubjectTokenType: tts.TokenTypeAccessToken})
	if err == nil {
		t.Fatal("a Txn-Token accepted as an access token")
	}
	if _, err := v.Verify(ctx, grant); errcode.CodeOf(err) != errcode.WrongType {
		t.Fatalf("grant as access token: %v", err)
	}
}

// Every check of oauth.md 4.2, each refused with invalid_grant and its stable code.
func TestChaining4_2_GrantChecks(t *testing.T) {
	e := newEnv(t, envOpts{bearerPeer: func(p *chaining.BearerPeer) { p.Algs = []string{keys.ES256} }})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	now := e.clock.Now()
	nd := func(d time.Duration) *jose.NumericDate { n := jose.NumericDate(now.Add(d).Unix()); return &n }
	scope := "trip.read"
	base := func() chaining.GrantClaims {
		return chaining.GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: e.a.url, Sub: "alice@a.example", Aud: jose.Audience{e.b.url}, Iat: nd(0), Exp: nd(time.Minute)},
			Jti: "j-" + chaining.Thumbprint(a2.Key.Public())[:8] + time.Now().Format("150405.000000000"), Scope: &scope,
			RequestedCnf: &chaining.Confirmation{JKT: chaining.Thumbprint(a2.Key.Public())}}
	}
	key := e.a.ring.Active()
	edKey, _ := keys.Generate(keys.EdDSA)
	strangerKey, _ := keys.Generate(keys.ES256)
	cases := []struct {
		name  string
		grant func() string
		code  errcode.Code
	}{
		{"ok", func() string { return signGrant(t, chaining.GrantTyp, key, base()) }, ""},
		{"aud is the token endpoint", func() string {
			g := base()
			g.Aud = jose.Audience{e.b.endpoint()}
			return signGrant(t, chaining.GrantTyp, key, g)
		}, ""},
		{"typ with application/", func() string { return signGrant(t, "application/"+chaining.GrantTyp, key, base()) }, ""},
		{"wrong typ", func() string { return signGrant(t, "JWT", key, base()) }, errcode.WrongType},
		{"Txn-Token typ", func() string { return signGrant(t, txntoken.Type, key, base()) }, errcode.WrongType},
		{"alg not allowed", func() string { return signGrant(t, chaining.GrantTyp, edKey, base()) }, errcode.UnsupportedAlg},
		{"unknown kid", func() string { return signGrant(t, chaining.GrantTyp, strangerKey, base()) }, errcode.UnknownKey},
		{"forged signature", func() string {
			return signGrant(t, chaining.GrantTyp, strangerKey.WithKID(key.KID()), base())
		}, errcode.InvalidSignature},
		{"untrusted issuer", func() string {
			g := base()
			g.Iss = "https://as.c.example"
			return signGrant(t, chaining.GrantTyp, key, g)
		}, errcode.UntrustedIssuer},
		{"no iss", func() string { g := base(); g.Iss = ""; return signGrant(t, chaining.GrantTyp, key, g) }, errcode.MissingClaim},
		{"no sub", func() string { g := base(); g.Sub = ""; return signGrant(t, chaining.GrantTyp, key, g) }, errcode.MissingClaim},
		{"another audience", func() string {
			g := base()
			g.Aud = jose.Audience{"https://as.c.example"}
			return signGrant(t, chaining.GrantTyp, key, g)
		}, errcode.AudienceMismatch},
		{"no aud", func() string { g := base(); g.Aud = nil; return signGrant(t, chaining.GrantTyp, key, g) }, errcode.AudienceMismatch},
		{"no exp", func() string { g := base(); g.Exp = nil; return signGrant(t, chaining.GrantTyp, key, g) }, errcode.MissingClaim},
		{"expired", func() string { g := base(); g.Exp = nd(-time.Minute); return signGrant(t, chaining.GrantTyp, key, g) }, errcode.Expired},
		{"exp too far", func() string {
			g := base()
			g.Exp = nd(10 * time.Minute)
			return signGrant(t, chaining.GrantTyp, key, g)
		}, errcode.LifetimeTooLong},
		{"nbf ahead", func() string {
			g := base()
			g.Nbf = nd(2 * time.Minute)
			return signGrant(t, chaining.GrantTyp, key, g)
		}, errcode.NotYetValid},
		{"iat ahead", func() string {
			g := base()
			g.Iat = nd(2 * time.Minute)
			return signGrant(t, chaining.GrantTyp, key, g)
		}, errcode.IssuedInFuture},
		{"no jti", func() string { g := base(); g.Jti = ""; return signGrant(t, chaining.GrantTyp, key, g) }, errcode.MissingClaim},
		{"unbound", func() string { g := base(); g.RequestedCnf = nil; return signGrant(t, chaining.GrantTyp, key, g) }, errcode.GrantBindingMismatch},
		{"bound to another key", func() string {
			g := base()
			g.RequestedCnf = &chaining.Confirmation{JKT: chaining.Thumbprint(edKey.Public())}
			return signGrant(t, chaining.GrantTyp, key, g)
		}, errcode.GrantBindingMismatch},
		{"crit header", func() string {
			p, _ := json.Marshal(base())
			h := `{"typ":"` + chaining.GrantTyp + `","alg":"ES256","kid":"` + key.KID() + `","crit":["x"],"x":1}`
			return rawJWS(t, key, h, p)
		}, errcode.UnsupportedCritical},
		{"jwk header", func() string {
			p, _ := json.Marshal(base())
			pub, _ := key.Public().MarshalJSON()
			h := `{"typ":"` + chaining.GrantTyp + `","alg":"ES256","kid":"` + key.KID() + `","jwk":` + string(pub) + `}`
			return rawJWS(t, key, h, p)
		}, errcode.ForbiddenHeader},
		{"alg none", func() string {
			p, _ := json.Marshal(base())
			return base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"`+chaining.GrantTyp+`","alg":"none"}`)) + "." + base64.RawURLEncoding.EncodeToString(p) + ".AAAA"
		}, errcode.UnsupportedAlg},
		{"not a JWS", func() string { return "a.b." }, errcode.MalformedToken},
		{"no scope", func() string { g := base(); g.Scope = nil; return signGrant(t, chaining.GrantTyp, key, g) }, errcode.ScopeUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.redeem(a2, tc.grant(), "")
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := "invalid_grant"
			if tc.code == errcode.ScopeUnknown {
				want = "invalid_scope"
			}
			wantRefusal(t, err, want, tc.code)
		})
	}
}

func rawJWS(t testing.TB, key *keys.PrivateKey, header string, payload []byte) string {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	input := enc([]byte(header)) + "." + enc(payload)
	sig, err := key.Sign([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

// Scope and subject policy at AS B: the grant's scope within the peer's, a request
// within that; a subject the table does not map is not identified (invalid_grant).
func TestChaining2_5_BearerScopeAndSubject(t *testing.T) {
	e := newEnv(t, envOpts{bearerPeer: func(p *chaining.BearerPeer) {
		p.Scopes = []string{"trip.read"}
		p.Subject = chaining.SubjectMap{Mode: chaining.SubjectTable, Table: map[string]string{"alice@a.example": "guest-17"}}
	}})
	ctx := context.Background()
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read trip.book", "D1")
	at, err := e.redeem(a2, e.mustGrant(a2, txn, ""), "")
	if err != nil || at.Scope != "trip.read" {
		t.Fatalf("%+v %v", at, err)
	}
	c, _ := (&chaining.AccessTokenVerifier{Keys: e.b.ring.KeySet(), Issuer: e.b.url, Audience: "b.example", Now: e.clock.Now}).Verify(ctx, at.AccessToken)
	if c.Sub != "guest-17" {
		t.Fatalf("sub %q", c.Sub)
	}
	_, err = e.redeem(a2, e.mustGrant(a2, txn, ""), "trip.book")
	wantRefusal(t, err, "invalid_scope", errcode.ScopeTooBroad)
	_, err = e.redeem(a2, e.mustGrant(a2, txn, "trip.book"), "")
	wantRefusal(t, err, "invalid_scope", errcode.ScopeTooBroad)

	bob := e.a.dom.Workload(t, "/agent/a3", keys.ES256)
	ss, _ := txntoken.NewSelfSignedToken(bob.Key, bob.ID, "bob@a.example", e.a.url, "trip.read", 5*time.Minute, e.clock.Now())
	res, err := (&txntoken.Client{TokenEndpoint: e.a.endpoint(), WIT: bob.WIT, Key: bob.Key, Now: e.clock.Now, Proof: proof.WPT}).Request(ctx,
		txntoken.Request{Audience: "a.example", Scope: "trip.read", SubjectToken: ss, SubjectTokenType: tts.TokenTypeSelfSigned})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.redeem(bob, e.mustGrant(bob, res.AccessToken, ""), "")
	wantRefusal(t, err, "invalid_grant", errcode.SubjectNotMapped)
	// A resource this AS does not issue for.
	st, _, body := rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {e.mustGrant(a2, txn, "")}, "resource": {"https://c.example/"}})
	if st != http.StatusBadRequest || body["error"] != "invalid_target" || body["code"] != string(errcode.AudienceNotServed) {
		t.Fatalf("%d %v", st, body)
	}
}

// A replay store that does not answer: the grant is not redeemed, and the answer says
// the check could not be completed (503, temporarily_unavailable), never acceptance.
func TestChaining4_2_StoreUnavailable(t *testing.T) {
	e := newEnv(t, envOpts{bearer: func(c *chaining.JWTBearerConfig) { c.Replay = failingStore{} }})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	grant := e.mustGrant(a2, e.txnToken(a2, "trip.read", "D1"), "")
	st, hdr, body := rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}})
	if st != http.StatusServiceUnavailable || body["error"] != "temporarily_unavailable" || body["code"] != string(errcode.StoreUnavailable) ||
		body["kind"] != "could_not_complete" || hdr.Get("Retry-After") == "" {
		t.Fatalf("%d %v", st, body)
	}
}

type failingStore struct{}

func (failingStore) Claim(context.Context, string, time.Duration) error {
	return errcode.Unavailable(errcode.StoreUnavailable, errors.New("down"), "replay store")
}

// Client authentication at AS B: a WIT of a trust domain it does not trust, and no
// credential at all, are invalid_client.
func TestChaining2_4_ClientAuthentication(t *testing.T) {
	e := newEnv(t, envOpts{})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	grant := e.mustGrant(a2, e.txnToken(a2, "trip.read", "D1"), "")
	c := testkit.NewDomain(t, "c.example", keys.ES256, e.clock).Workload(t, "/agent/c1", keys.ES256)
	_, err := e.redeem(c, grant, "")
	wantRefusal(t, err, "invalid_client", errcode.UntrustedIssuer)
	st, _, body := rawPost(t, e, e.b, nil, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}})
	if st != http.StatusUnauthorized || body["error"] != "invalid_client" {
		t.Fatalf("%d %v", st, body)
	}
	// The grant was not consumed by the refusals.
	if _, err := e.redeem(a2, grant, ""); err != nil {
		t.Fatal(err)
	}
}

// The one token endpoint: Mux routes by grant_type and requested_token_type, and the
// metadata lists what is served.
func TestChainingMux(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx := context.Background()
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read", "D1")
	// requested_token_type txn_token: the TTS (a replacement).
	st, _, body := rawPost(t, e, e.a, a2, url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {tts.TokenTypeTxnToken},
		"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {"a.example"}, "scope": {"trip.read"}})
	if st != 200 || body["issued_token_type"] != tts.TokenTypeTxnToken {
		t.Fatalf("TTS: %d %v", st, body)
	}
	// No requested_token_type, audience a peer: AS A.
	st, _, body = rawPost(t, e, e.a, a2, url.Values{"grant_type": {tts.GrantTypeTokenExchange},
		"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {e.b.url}})
	if st != 200 || body["issued_token_type"] != chaining.TokenTypeJWT {
		t.Fatalf("AS A: %d %v", st, body)
	}
	// No requested_token_type, audience a trust domain: the TTS, which requires it.
	st, _, body = rawPost(t, e, e.a, a2, url.Values{"grant_type": {tts.GrantTypeTokenExchange},
		"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {"a.example"}, "scope": {"trip.read"}})
	if st != 400 || body["error"] != "invalid_request" {
		t.Fatalf("%d %v", st, body)
	}
	// jwt-bearer at a TTS without AS B: unsupported_grant_type.
	st, _, body = rawPost(t, e, e.a, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {"a.b.c"}})
	if st != 400 || body["error"] != "unsupported_grant_type" {
		t.Fatalf("%d %v", st, body)
	}
	// A repeated routing parameter: the TTS refuses it.
	req, _ := http.NewRequest(http.MethodPost, e.a.endpoint(), strings.NewReader("grant_type="+url.QueryEscape(chaining.GrantTypeJWTBearer)+"&grant_type="+url.QueryEscape(tts.GrantTypeTokenExchange)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	signRequest(t, e, req, a2, e.a.endpoint())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Fatalf("repeated grant_type: %d", res.StatusCode)
	}
	// A body over the bound is the TTS's to refuse.
	req, _ = http.NewRequest(http.MethodPost, e.b.endpoint(), strings.NewReader("grant_type="+url.QueryEscape(chaining.GrantTypeJWTBearer)+"&x="+strings.Repeat("a", chaining.MaxBodySize)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized: %d", res.StatusCode)
	}
	mdA, err := oauth.Discover(ctx, nil, e.a.url)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mdA.IdentityChainingRequestedTokenTypesSupported, chaining.TokenTypeJWT) || !slices.Contains(mdA.IssuedTokenTypesSupported, chaining.TokenTypeJWT) {
		t.Fatalf("AS A metadata %+v", mdA)
	}
	mdB, err := oauth.Discover(ctx, nil, e.b.url)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mdB.GrantTypesSupported, chaining.GrantTypeJWTBearer) || !slices.Contains(mdB.GrantTypesSupported, tts.GrantTypeTokenExchange) {
		t.Fatalf("AS B metadata %+v", mdB)
	}
}

// The thumbprint computed without jwx is RFC 7638's (jwx's), for both key types.
func TestThumbprintIsRFC7638(t *testing.T) {
	for _, alg := range []string{keys.ES256, keys.EdDSA} {
		for range 20 {
			k, _ := keys.Generate(alg)
			if got, want := chaining.Thumbprint(k.Public()), k.Public().Thumbprint(); got != want || got == "" {
				t.Fatalf("%s: %s != %s", alg, got, want)
			}
		}
	}
	// RFC 7638 section 3.1's example key is RSA; RFC 8037 Appendix A.3 gives one for Ed25519.
	pub, err := keys.ParsePublicJWK([]byte(`{"kty":"OKP","crv":"Ed25519","alg":"EdDSA","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := chaining.Thumbprint(pub); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("RFC 8037 A.3: %s", got)
	}
}

// Subject maps and configuration checks.
func TestSubjectMap(t *testing.T) {
	for _, tc := range []struct {
		m       chaining.SubjectMap
		in, out string
		code    errcode.Code
	}{
		{chaining.SubjectMap{}, "alice", "alice", ""},
		{chaining.SubjectMap{Mode: chaining.SubjectPrefix, Prefix: "a:"}, "alice", "a:alice", ""},
		{chaining.SubjectMap{Mode: chaining.SubjectTable, Table: map[string]string{"alice": "u1"}}, "alice", "u1", ""},
		{chaining.SubjectMap{Mode: chaining.SubjectTable, Table: map[string]string{"alice": "u1"}}, "bob", "", errcode.SubjectNotMapped},
		{chaining.SubjectMap{}, "", "", errcode.MissingClaim},
	} {
		got, err := tc.m.Map(tc.in)
		if got != tc.out || errcode.CodeOf(err) != tc.code {
			t.Fatalf("%+v(%q) = %q, %v", tc.m, tc.in, got, err)
		}
	}
	k, _ := keys.Generate(keys.ES256)
	ring := keys.NewRing(k, nil)
	auth := []oauth.Authenticator{nil}
	for _, p := range []chaining.GrantPeer{
		{},
		{Issuer: "https://b", Subject: chaining.SubjectMap{Mode: "rot13"}},
		{Issuer: "https://b", Subject: chaining.SubjectMap{Mode: chaining.SubjectPrefix}},
		{Issuer: "https://b", Workloads: []string{"wimse://a.example/x/../"}},
		{Issuer: "https://b", Scopes: []string{"a b"}},
		{Issuer: "https://a"},
	} {
		if _, err := chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: "https://a", Keys: ring, Authenticators: auth, TxnTokens: &txntoken.Verifier{}, Peers: []chaining.GrantPeer{p}}); err == nil {
			t.Fatalf("peer %+v accepted", p)
		}
	}
	if _, err := chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: "https://a", Keys: ring, Authenticators: auth, TxnTokens: &txntoken.Verifier{},
		Peers: []chaining.GrantPeer{{Issuer: "https://b"}}, Lifetime: 10 * time.Minute}); err == nil {
		t.Fatal("a 10 minute grant lifetime accepted")
	}
	set, _ := keys.NewStaticSet(k.Public())
	for _, p := range []chaining.BearerPeer{
		{Issuer: "https://a", Keys: set},
		{Issuer: "https://a", Keys: set, Scopes: []string{"x"}, Algs: []string{"HS256"}},
		{Issuer: "https://b", Keys: set, Scopes: []string{"x"}},
	} {
		if _, err := chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: "https://b", Keys: ring, Authenticators: auth, Replay: failingStore{},
			Audiences: []string{"b.example"}, Peers: []chaining.BearerPeer{p}}); err == nil {
			t.Fatalf("peer %+v accepted", p)
		}
	}
}

// A token request's body is read once and parsed once, whichever grant serves it: the
// TTS's token exchange, AS A's grant, AS B's jwt-bearer redemption, or none (refused).
// The authenticators get a reader over the octets already read (Content-Digest).
func TestTokenRequestBodyReadAndParsedOnce(t *testing.T) {
	var read atomic.Int64
	var lengths []int64
	var mu sync.Mutex
	e := newEnv(t, envOpts{wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			lengths = append(lengths, r.ContentLength)
			mu.Unlock()
			r.Body = testkit.CountingBody{R: r.Body, N: &read}
			h.ServeHTTP(w, r)
		})
	}})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read", "D1")
	grant := e.mustGrant(a2, txn, "trip.read")
	for _, tc := range []struct {
		name   string
		side   *side
		form   url.Values
		status int
		want   string // issued_token_type, token_type or error
		field  string
	}{
		{"tts", e.a, url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {tts.TokenTypeTxnToken},
			"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {"a.example"}, "scope": {"trip.read"}},
			200, tts.TokenTypeTxnToken, "issued_token_type"},
		{"as_a", e.a, url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeJWT},
			"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {e.b.url}},
			200, chaining.TokenTypeJWT, "issued_token_type"},
		{"as_b", e.b, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}}, 200, "Bearer", "token_type"},
		{"refused", e.b, url.Values{"grant_type": {"password"}, "username": {"u"}}, 400, "unsupported_grant_type", "error"},
	} {
		read.Store(0)
		mu.Lock()
		lengths = nil
		mu.Unlock()
		before := oauth.ParseCount()
		st, _, body := rawPost(t, e, tc.side, a2, tc.form)
		parses := oauth.ParseCount() - before
		if st != tc.status || body[tc.field] != tc.want {
			t.Fatalf("%s: %d %v", tc.name, st, body)
		}
		mu.Lock()
		n := lengths
		mu.Unlock()
		if parses != 1 || len(n) != 1 || read.Load() != n[0] || n[0] != int64(len(tc.form.Encode())) {
			t.Fatalf("%s: parsed %d times, body of %v octets, %d octets read", tc.name, parses, n, read.Load())
		}
	}
}

// Issue 23 point 7 (the endpoint authenticates once): AS A's and AS B's parameter
// rules still come before client authentication, as they did when each grant
// authenticated its client itself: a malformed request is refused on its parameters
// whatever its credential (none, or a bad HTTP signature).
func TestIssue23_7_ChainingParametersBeforeAuthentication(t *testing.T) {
	e := newEnv(t, envOpts{quiet: true})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read", "D1")
	grant := e.mustGrant(a2, txn, "")
	asA := func(k, v string) url.Values {
		f := url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeJWT},
			"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {e.b.url}}
		if v == "" {
			f.Del(k)
		} else {
			f.Set(k, v)
		}
		return f
	}
	asB := func(k, v string) url.Values {
		f := url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}}
		f.Set(k, v)
		return f
	}
	creds := map[string]func(*http.Request){
		"none": nil,
		"a bad signature": func(r *http.Request) {
			r.Header.Set("Signature-Input", `sig=("@method");created=1`)
			r.Header.Set("Signature", "sig=:AAAA:")
			r.Header.Set("Workload-Identity-Token", "a.b.c")
		},
	}
	for name, tc := range map[string]struct {
		side *side
		form url.Values
		code errcode.Code
	}{
		"AS A subject_token_type": {e.a, asA("subject_token_type", oauth.TokenTypeAccessToken), errcode.UnsupportedTokenType},
		"AS A actor_token":        {e.a, asA("actor_token", "x"), errcode.InvalidRequest},
		"AS A no audience":        {e.a, asA("audience", ""), errcode.InvalidRequest},
		"AS B assertion":          {e.b, asB("assertion", "not-a-jws"), errcode.InvalidRequest},
		"AS B resource":           {e.b, asB("resource", "https://r.example/#f"), errcode.InvalidRequest},
	} {
		for cname, cred := range creds {
			t.Run(name+"/"+cname, func(t *testing.T) {
				st, _, body := postAs(t, tc.side, tc.form, cred)
				if st != http.StatusBadRequest || body["error"] != oauth.ErrInvalidRequest || body["code"] != string(tc.code) {
					t.Fatalf("%d %v, want 400 invalid_request %s", st, body, tc.code)
				}
			})
		}
	}
	// The grant was not consumed by the refusals.
	if _, err := e.redeem(a2, grant, ""); err != nil {
		t.Fatal(err)
	}
}

// Identity chaining binds the grant and the access token to the client's WIT key: a
// client authenticated without a WIT (private_key_jwt) is invalid_client at AS B, and
// a client_id that is not the authenticated workload is invalid_client at AS A and AS
// B; neither spends the grant.
func TestChaining2_4_ClientMustBeItsWIT(t *testing.T) {
	// A workload of domain A registered at AS B with its key, for private_key_jwt.
	batch := testkit.NewDomain(t, "a.example", keys.EdDSA, testkit.NewClock(testkit.Epoch)).Workload(t, "/registered/batch", keys.EdDSA)
	e := newEnv(t, envOpts{quiet: true, bearer: func(c *chaining.JWTBearerConfig) {
		set, _ := keys.NewStaticSet(batch.Key.Public())
		p, err := oauth.NewPrivateKeyJWT([]string{c.Issuer}, []oauth.RegisteredClient{{ID: batch.ID, Keys: set}}, c.Replay, c.Now, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Authenticators = append(c.Authenticators, p)
	}})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read", "D1")
	grant := e.mustGrant(a2, txn, "")

	assertion, err := oauth.NewClientAssertion(batch.Key, batch.ID, e.b.url, time.Minute, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, _, body := postAs(t, e.b, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant},
		"client_assertion_type": {oauth.ClientAssertionTypeJWTBearer}, "client_assertion": {assertion}}, nil)
	if st != http.StatusUnauthorized || body["error"] != oauth.ErrInvalidClient || body["code"] != string(errcode.Unauthenticated) ||
		!strings.Contains(body["error_description"].(string), "requires a WIT") {
		t.Fatalf("private_key_jwt at AS B: %d %v", st, body)
	}

	other := "wimse://a.example/agent/other"
	st, _, m := rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}, "client_id": {other}})
	if st != http.StatusUnauthorized || m["error"] != oauth.ErrInvalidClient || m["code"] != string(errcode.InvalidClaim) {
		t.Fatalf("client_id at AS B: %d %v", st, m)
	}
	st, _, m = rawPost(t, e, e.a, a2, url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeJWT},
		"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {e.b.url}, "client_id": {other}})
	if st != http.StatusUnauthorized || m["error"] != oauth.ErrInvalidClient || m["code"] != string(errcode.InvalidClaim) {
		t.Fatalf("client_id at AS A: %d %v", st, m)
	}
	// The client's own identifier as client_id is accepted, and the grant is unspent.
	if st, _, m = rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}, "client_id": {a2.ID.String()}}); st != http.StatusOK {
		t.Fatalf("own client_id at AS B: %d %v", st, m)
	}
}
