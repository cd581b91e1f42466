package chaining_test

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/condition"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
)

func cel(expr string) grantpolicy.Expr {
	return grantpolicy.Expr{Text: expr, Source: condition.Source{File: "chaining.yaml", Line: 3}}
}

// Issue 25, chaining conditions at AS A: a peer's when reads the Txn-Token (input), the
// requester and the target; grant_scopes narrows what crosses.
func TestIssue25_ChainingConditionsAtASA(t *testing.T) {
	e := newEnv(t, envOpts{grantPeer: func(p *chaining.GrantPeer) {
		p.When = cel(`input.tctx.dlg == "D1" && subject.sub == input.sub && requester.trust_domain == "a.example" && target.peer.startsWith("http://") && "as.b.example" in target.audience`)
		p.GrantScopes = cel(`request.scopes.filter(s, s != "trip.book")`)
	}})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	g, err := e.grant(a2, e.txnToken(a2, "trip.read trip.book", "D1"), "trip.read trip.book")
	if err != nil {
		t.Fatal(err)
	}
	if g.Scope != "trip.read" {
		t.Fatalf("scope %q, want trip.read", g.Scope)
	}
	_, err = e.grant(a2, e.txnToken(a2, "trip.read trip.book", "D2"), "trip.read")
	wantRefusal(t, err, oauth.ErrUnauthorizedClient, errcode.WorkloadNotAllowed)
}

// Issue 25, chaining conditions at AS B: a peer's when reads the grant (subject: its
// issuer, sub and claims) and the redeeming workload; a condition that cannot be
// evaluated refuses.
func TestIssue25_ChainingConditionsAtASB(t *testing.T) {
	e := newEnv(t, envOpts{bearerPeer: func(p *chaining.BearerPeer) {
		p.When = cel(`subject.issuer == target.peer && subject.sub == "alice@a.example" && subject.claims.scope.contains("trip.read") && requester.workload.endsWith("/agent/a2")`)
	}})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	if _, err := e.redeem(a2, e.mustGrant(a2, e.txnToken(a2, "trip.read", "D1"), ""), ""); err != nil {
		t.Fatalf("redeem: %v", err)
	}
	a3 := e.a.dom.Workload(t, "/agent/a3", keys.ES256)
	_, err := e.redeem(a3, e.mustGrant(a3, e.txnToken(a3, "trip.read", "D1"), ""), "")
	wantRefusal(t, err, oauth.ErrUnauthorizedClient, errcode.WorkloadNotAllowed)

	bad := newEnv(t, envOpts{bearerPeer: func(p *chaining.BearerPeer) { p.When = cel(`subject.claims.department == "x"`) }})
	b2 := bad.a.dom.Workload(t, "/agent/a2", keys.ES256)
	grant := bad.mustGrant(b2, bad.txnToken(b2, "trip.read", "D1"), "")
	_, err = bad.redeem(b2, grant, "")
	wantRefusal(t, err, "", errcode.ConditionError)
}
