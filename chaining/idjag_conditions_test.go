package chaining_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
)

// Issue 28, "policy can see it", at AS A: a peer's when sees that the requested token
// type is an ID-JAG (request.requested_token_type, grant.id_jag) and the ID-JAG it
// would issue (grant.typ, client_id, aud, resource). The condition allows one resource
// and refuses the other, though both are the peer's Resources; an ID-JAG request is no
// way around a condition (it was before: the ID-JAG path skipped the peer's
// conditions, which this test catches with the one that refuses every ID-JAG).
func TestIssue28_IDJAGConditionsAtASA(t *testing.T) {
	onlyMCP := `request.requested_token_type != "urn:ietf:params:oauth:token-type:id-jag" ||
		(grant.id_jag && grant.typ == "oauth-id-jag+jwt" && grant.client_id == requester.workload &&
		 grant.aud == [target.peer] && grant.resource == ["` + mcpResource + `"])`
	e := idjagEnv(t, nil, func(o *envOpts) {
		o.grantPeer = func(p *chaining.GrantPeer) {
			p.IDJAG, p.Resources, p.When = true, []string{mcpResource, otherResource}, cel(onlyMCP)
		}
	})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read trip.book", "D1")
	ask := func(resource string) (*chaining.GrantResponse, error) {
		return e.idjag(a2, chaining.IDJAGParams{SubjectToken: txn, SubjectTokenType: oauth.TokenTypeTxnToken, Resource: resource})
	}
	if _, err := ask(mcpResource); err != nil {
		t.Fatalf("the resource the condition allows: %v", err)
	}
	for _, r := range []string{otherResource, ""} {
		_, err := ask(r)
		wantRefusal(t, err, oauth.ErrUnauthorizedClient, errcode.WorkloadNotAllowed)
	}
	// The generic grant is not an ID-JAG: the condition lets it through.
	if _, err := e.grant(a2, txn, "trip.read"); err != nil {
		t.Fatalf("generic grant: %v", err)
	}

	// A condition that refuses every ID-JAG refuses it, and only it.
	noJAG := idjagEnv(t, nil, func(o *envOpts) {
		o.grantPeer = func(p *chaining.GrantPeer) {
			p.IDJAG, p.Resources, p.When = true, []string{mcpResource}, cel(`!grant.id_jag && grant.typ == "txn-chain+jwt" && grant.client_id == "" && grant.resource == []`)
		}
	})
	n2 := noJAG.a.dom.Workload(t, "/agent/a2", keys.ES256)
	ntxn := noJAG.txnToken(n2, "trip.read", "D1")
	_, err := noJAG.idjag(n2, chaining.IDJAGParams{SubjectToken: ntxn, SubjectTokenType: oauth.TokenTypeTxnToken, Resource: mcpResource})
	wantRefusal(t, err, oauth.ErrUnauthorizedClient, errcode.WorkloadNotAllowed)
	if _, err := noJAG.grant(n2, ntxn, "trip.read"); err != nil {
		t.Fatalf("generic grant under !grant.id_jag: %v", err)
	}
}

// Issue 28 at AS A with an ID token subject: the condition sees the ID token (subject:
// its type, issuer, sub and claims) and grant_scopes narrows the ID-JAG's scope.
func TestIssue28_IDJAGConditionsSeeIDToken(t *testing.T) {
	idpKey, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(idpKey.Public())
	const idpIss = "https://idp.a.example"
	e := idjagEnv(t, &chaining.IDTokenIssuer{Issuer: idpIss, Keys: set}, func(o *envOpts) {
		o.grantPeer = func(p *chaining.GrantPeer) {
			p.IDJAG, p.Resources = true, []string{mcpResource}
			p.When = cel(`subject.type == "urn:ietf:params:oauth:token-type:id_token" && subject.issuer == "` + idpIss + `" && subject.claims.email.endsWith("@a.example")`)
			p.GrantScopes = cel(`["trip.read"]`)
		}
	})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	now := e.clock.Now()
	idToken := func(email string) string {
		iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(time.Hour).Unix())
		return signGrant(t, "JWT", idpKey, map[string]any{"iss": idpIss, "sub": "U1", "aud": a2.ID.String(), "iat": iat, "exp": exp, "email": email})
	}
	g, err := e.idjag(a2, chaining.IDJAGParams{SubjectToken: idToken("alice@a.example"), SubjectTokenType: chaining.TokenTypeIDToken, Resource: mcpResource})
	if err != nil || g.Scope != "trip.read" {
		t.Fatalf("ID-JAG on an ID token under conditions: %v %+v", err, g)
	}
	_, err = e.idjag(a2, chaining.IDJAGParams{SubjectToken: idToken("mallory@c.example"), SubjectTokenType: chaining.TokenTypeIDToken, Resource: mcpResource})
	wantRefusal(t, err, oauth.ErrUnauthorizedClient, errcode.WorkloadNotAllowed)
}

// Issue 28, "policy can see it", at AS B: a peer's when sees that the grant presented
// is an ID-JAG and its claims (grant.typ, client_id, aud, resource). It allows ID-JAGs
// for one resource only and refuses one for another resource AS B serves as well; the
// generic grant, which is no ID-JAG, still passes.
func TestIssue28_IDJAGConditionsAtASB(t *testing.T) {
	e := idjagEnv(t, nil, func(o *envOpts) {
		o.grantPeer = func(p *chaining.GrantPeer) { p.IDJAG, p.Resources = true, []string{mcpResource, otherResource} }
		o.bearerPeer = func(p *chaining.BearerPeer) {
			p.Typs = []string{chaining.GrantTyp, chaining.IDJAGTyp}
			p.When = cel(`!grant.id_jag || (grant.typ == "oauth-id-jag+jwt" && grant.client_id == requester.workload &&
				grant.aud.size() == 1 && grant.resource == ["` + mcpResource + `"])`)
		}
	})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read trip.book", "D1")
	jag := func(resource string) string {
		g, err := e.idjag(a2, chaining.IDJAGParams{SubjectToken: txn, SubjectTokenType: oauth.TokenTypeTxnToken, Resource: resource})
		if err != nil {
			t.Fatalf("ID-JAG for %s: %v", resource, err)
		}
		return g.AccessToken
	}
	at, err := e.redeem(a2, jag(mcpResource), "")
	if err != nil || at.Resource != mcpResource {
		t.Fatalf("the resource the condition allows: %v %+v", err, at)
	}
	_, err = e.redeem(a2, jag(otherResource), "")
	wantRefusal(t, err, oauth.ErrUnauthorizedClient, errcode.WorkloadNotAllowed)
	if _, err := e.redeem(a2, e.mustGrant(a2, txn, "trip.read"), ""); err != nil {
		t.Fatalf("generic grant: %v", err)
	}
}

// Issue 28: grant and request.requested_token_type are type-checked at load: a
// misspelt field is an error naming the file, and grant exists at the chaining
// servers only.
func TestIssue28_GrantVariableTypeChecked(t *testing.T) {
	for _, ok := range []string{`grant.id_jag && "x" in grant.resource && grant.aud.size() > 0 && grant.client_id != "" && grant.typ != ""`,
		`request.requested_token_type == "urn:ietf:params:oauth:token-type:id-jag"`} {
		if err := (chaining.PeerConditions{When: cel(ok)}).Check(); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{`grant.resources == []`, `grant.id_jag == "yes"`, `grant.idjag`} {
		err := (chaining.PeerConditions{When: cel(bad)}).Check()
		if err == nil || !strings.Contains(err.Error(), "chaining.yaml:3") {
			t.Errorf("%s: got %v, want a type error at chaining.yaml:3", bad, err)
		}
	}
	if _, err := grantpolicy.Compile(grantpolicy.PlaceIssuance, cel(`grant.id_jag`), grantpolicy.Expr{}, nil); err == nil {
		t.Error("grant is a chaining server's variable: the TTS's issuance policy has no grant")
	}
	if _, err := grantpolicy.Compile(grantpolicy.PlaceIssuance, cel(`request.requested_token_type != ""`), grantpolicy.Expr{}, nil); err != nil {
		t.Errorf("request.requested_token_type at the TTS: %v", err)
	}
}
