package chaining

import (
	"context"
	"encoding/json"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// tokenTypeTxnToken is the subject_token_type of a Txn-Token (the subject at AS A).
const tokenTypeTxnToken = "urn:ietf:params:oauth:token-type:txn_token"

// PeerConditions are the CEL parts of a peer (issue 25, docs/chaining.md): When must
// hold for a request to cross to (AS A) or come in from (AS B) the peer, and
// GrantScopes narrows the scope granted. The variables are grantpolicy's, target
// being the peer: at AS A the Txn-Token is both subject and input; at AS B the grant
// is the subject.
type PeerConditions struct {
	When, GrantScopes grantpolicy.Expr
}

// Check compiles and type-checks the expressions (-check-config).
func (c PeerConditions) Check() error {
	_, err := c.compile()
	return err
}

// compile compiles the peer's expressions (nil when it has none).
func (c PeerConditions) compile() (*grantpolicy.Conditions, error) {
	conds, err := grantpolicy.Compile(grantpolicy.PlaceChaining, c.When, c.GrantScopes, nil)
	if err != nil || conds.Empty() {
		return nil, err
	}
	return conds, nil
}

// decidePeer applies a peer's conditions to a request whose scope is scope, about
// grant (grantpolicy.Grant: the one asked for at AS A, the one presented at AS B): the
// narrowed scope, or the refusal (workload_not_allowed when When does not hold, the
// condition's code when it cannot be evaluated).
func decidePeer(ctx context.Context, conds *grantpolicy.Conditions, name string, tr *oauth.TokenRequest, req *oauth.Client,
	subj *grantpolicy.Subject, grant grantpolicy.Grant, peer string, audiences, scope []string) ([]string, error) {
	if conds == nil {
		return scope, nil
	}
	in := grantpolicy.NewInput(ctx, grantpolicy.PlaceChaining, tr, req, *subj, &grantpolicy.Target{Peer: peer, Audience: audiences, Grant: grant})
	defer in.Close()
	ok, err := conds.Holds(name, in)
	if err != nil {
		return nil, at(stagePolicy, err)
	}
	if !ok {
		return nil, at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "the condition of peer %s does not hold for this request", name))
	}
	out, err := conds.Narrow(name, in, scope)
	if err != nil {
		return nil, at(stageRequest, err)
	}
	return out, nil
}

// txnSubject is the Txn-Token as the subject of a grant request.
func txnSubject(txn *txntoken.Claims) *grantpolicy.Subject {
	return &grantpolicy.Subject{Type: tokenTypeTxnToken, Issuer: txn.Iss, Sub: txn.Sub, Scopes: txn.ScopeList(), Input: txn}
}

// grantSubject is the grant as the subject of a jwt-bearer request.
func grantSubject(g any, iss, sub string, scope []string) *grantpolicy.Subject {
	payload, _ := json.Marshal(g)
	return &grantpolicy.Subject{Type: TokenTypeJWT, Issuer: iss, Sub: sub, Scopes: scope, Claims: grantpolicy.NewClaims(payload)}
}

// presentedGrant is the grant AS B verified, as its peer's conditions see it (grant).
func presentedGrant(g *GrantClaims) grantpolicy.Grant {
	return grantpolicy.Grant{Typ: g.typ, IDJAG: g.isIDJAG, ClientID: g.ClientID, Aud: g.Aud, Resource: g.Resource}
}

// requestedGrant is the grant a request at AS A asks for, as it would be issued: an
// ID-JAG names the client and the resource requested; the generic grant (the Txn-Token
// chaining profile's) no client, and the protected resource resolvePeer found, if any.
func requestedGrant(tr *oauth.TokenRequest, req *oauth.Client, peer, resource string) grantpolicy.Grant {
	if tr.RequestedTokenType != TokenTypeIDJAG {
		return grantpolicy.Grant{Typ: GrantTyp, Aud: []string{peer}, Resource: grantResourceClaim(resource)}
	}
	g := grantpolicy.Grant{Typ: IDJAGTyp, IDJAG: true, ClientID: req.IDString(), Aud: []string{peer}}
	if tr.Resource != "" {
		g.Resource = []string{tr.Resource}
	}
	return g
}
