package chaining

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
)

// The Identity Assertion JWT Authorization Grant (ID-JAG,
// draft-ietf-oauth-identity-assertion-authz-grant, the editor's copy of -04; docs/interop.md
// says which text) at AS A: a token exchange with requested_token_type ...:id-jag turns
// a subject token into an ID-JAG for a peer AS. The subject is either
//
//   - a Txn-Token of this domain (draft-fletcher-oauth-txn-token-chaining-profile: the
//     Txn-Token is the subject of the cross-domain exchange), checked exactly as for the
//     generic grant (this TTS's, for a trust domain it serves, presented by a workload
//     of that domain, scope within it); or
//   - an OpenID Connect ID token of a configured identity provider (IDTokens), whose
//     aud must name the authenticated client (section 4.3.3).
//
// The ID-JAG (section 3.1) carries typ oauth-id-jag+jwt, iss (this AS), sub (mapped by
// the peer's SubjectMap), aud (the peer's issuer identifier, one string), client_id
// (the authenticated workload: AS B authenticates the same workload by its WIT, so the
// client identifier is the same at both), jti, iat, exp (the grant lifetime, never
// beyond the subject's exp), resource (when requested and allowed for the peer), scope,
// and cnf.jkt, the thumbprint of the client's WIT key (section 8.6.1: proof of
// possession is required to use it; a WIMSE proof is that proof here).

// IDTokenIssuer is an identity provider whose ID tokens AS A takes as the subject of
// an ID-JAG request.
type IDTokenIssuer struct {
	// Issuer is the ID token's iss, compared exactly.
	Issuer string
	// Keys are the provider's signing keys (a JWKS file or URL; never from the token).
	Keys keys.KeySet
	// Algs is the algorithm allow-list (default: every algorithm package keys supports).
	Algs []string
	// RSA admits RS256 and PS256 ID tokens (most providers'); Keys must then be a set
	// opened to RSA (keys.RSAPolicy).
	RSA bool
	// ClientIDs maps the OpenID client_id the provider knows a workload by to that
	// workload's identifier. An ID token's aud must name the authenticated workload:
	// its identifier, or a client_id mapped to it here.
	ClientIDs map[string]string
}

// idTokenTyp: ID tokens are untyped or typed "JWT" (OpenID Connect Core defines no
// explicit type); any other typ is another kind of token (RFC 8725 section 3.11).
const idTokenTyp = "JWT"

// maxIDToken bounds an ID token; the subject token bound applies as well.
const maxIDToken = MaxSubjectToken

func checkIDTokenIssuers(iss []IDTokenIssuer) error {
	seen := map[string]bool{}
	for _, p := range iss {
		if p.Issuer == "" || p.Keys == nil {
			return fmt.Errorf("chaining: an ID token issuer needs its issuer identifier and keys")
		}
		if seen[p.Issuer] {
			return fmt.Errorf("chaining: ID token issuer %s configured twice", p.Issuer)
		}
		seen[p.Issuer] = true
		for _, a := range p.Algs {
			rsaAlg := p.RSA && keys.FamilyOf(a).IsRSA()
			if err := keys.CheckSignatureAlg(a); err != nil && !rsaAlg || keys.IsForbiddenAlg(a) {
				return fmt.Errorf("chaining: ID token issuer %s: algorithm %q cannot be allowed", p.Issuer, a)
			}
		}
		for cid, w := range p.ClientIDs {
			if cid == "" || checkPatterns([]string{w}) != nil || strings.HasSuffix(w, "/") {
				return fmt.Errorf("chaining: ID token issuer %s: client_id %q must map to one workload identifier", p.Issuer, cid)
			}
		}
	}
	return nil
}

// checkIDJAGSubjectType: an ID-JAG is issued on a Txn-Token, or on an ID token where
// identity providers are configured (section 4.3: subject_token_type).
func (g *GrantIssuer) checkIDJAGSubjectType(typ string) error {
	switch {
	case typ == oauth.TokenTypeTxnToken:
		return nil
	case typ == TokenTypeIDToken && len(g.cfg.IDTokens) > 0:
		return nil
	}
	return errcode.New(errcode.UnsupportedTokenType, "an ID-JAG is issued on a Txn-Token of this domain or an ID token of a trusted identity provider, not %q", errcode.Cut(typ))
}

// subjectOf is what an ID-JAG takes from its subject token.
type subjectOf struct {
	sub   string
	scope []string // the scope the subject carries (nil for an ID token)
	exp   time.Time
	// policy is the subject as the peer's conditions see it (subject, and input for
	// a Txn-Token).
	policy *grantpolicy.Subject
}

// issueIDJAG is issue for requested_token_type ...:id-jag (the client is bound):
//
//  1. the peer named by audience (section 4.3: audience names the AS; resource never
//     does), which must have IDJAG on (unsupported_token_type), and whether the
//     workload may ask for it;
//  2. resource, when present, one of the peer's Resources (resource_not_allowed);
//  3. the subject token: a Txn-Token as for the generic grant, or an ID token of a
//     trusted provider whose aud names the client (section 4.3.3);
//  4. scope within the subject's and the peer's (section 4.3.3: policy decides);
//  5. subject mapping, claims, signature.
func (g *GrantIssuer) issueIDJAG(ctx context.Context, tr *oauth.TokenRequest, req *oauth.Client, rec *oauth.Record) (*GrantResponse, *GrantClaims, string, error) {
	peer := g.lookup(tr.Audience)
	if peer == nil {
		return nil, nil, "", at(stageRequest, errcode.New(errcode.UnknownPeer, "audience %q names no peer authorization server this AS issues grants for", errcode.Cut(tr.Audience)))
	}
	rec.Peer = peer.Issuer
	if !peer.IDJAG {
		return nil, nil, "", at(stageRequest, errcode.New(errcode.UnsupportedTokenType, "this AS issues no ID-JAGs for %s", peer.Issuer))
	}
	if len(peer.Workloads) > 0 && !matchWorkload(peer.Workloads, req.ID) {
		return nil, nil, "", at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "%s may not request grants for %s", req.ID, peer.Issuer))
	}
	if tr.Resource != "" && !matchResource(peer.Resources, tr.Resource) {
		return nil, nil, "", at(stageRequest, errcode.New(errcode.ResourceNotAllowed, "resource %q is not one an ID-JAG for %s may name", errcode.Cut(tr.Resource), peer.Issuer))
	}
	var subj *subjectOf
	var err error
	if tr.SubjectTokenType == TokenTypeIDToken {
		subj, err = g.idTokenSubject(ctx, tr.SubjectToken, req.IDString())
	} else {
		subj, err = g.txnTokenSubject(ctx, tr.SubjectToken, req)
	}
	if err != nil {
		return nil, nil, "", err
	}
	subjectScope := subj.scope
	if subjectScope == nil {
		// An ID token carries no authorization: what may cross is the peer's policy.
		subjectScope = peer.Scopes
	}
	scope, err := grantScope(tr.Scope, subjectScope, peer.Scopes)
	if err != nil {
		return nil, nil, "", err
	}
	if peer.conds != nil {
		// The peer's conditions hold for an ID-JAG as for the generic grant: a request
		// for another token type is no way around them.
		if scope, err = decidePeer(ctx, peer.conds, peer.Issuer, tr, req, subj.policy, requestedGrant(tr, req, peer.Issuer, ""), peer.Issuer, peer.names(), scope); err != nil {
			return nil, nil, "", err
		}
	}
	sub, err := peer.Subject.Map(subj.sub)
	if err != nil {
		return nil, nil, "", at(stageRequest, err)
	}
	now := g.cfg.Now()
	exp := now.Add(g.cfg.Lifetime)
	if subj.exp.Before(exp) {
		exp = subj.exp
	}
	iat, e := jose.NumericDate(now.Unix()), jose.NumericDate(exp.Unix())
	if e <= iat {
		return nil, nil, "", at(stageRequest, errcode.New(errcode.Expired, "the subject token expires within the second"))
	}
	sc := strings.Join(scope, " ")
	claims := &GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: g.cfg.Issuer, Sub: sub, Aud: jose.Audience{peer.Issuer}, Iat: &iat, Exp: &e},
		Jti: newJTI(), Scope: &sc, ClientID: req.IDString(), Cnf: &Confirmation{JKT: Thumbprint(req.WIT.Key)}}
	if tr.Resource != "" {
		claims.Resource = jose.Audience{tr.Resource}
	}
	key := g.cfg.Keys.Active()
	tok, err := jose.SignClaims(IDJAGTyp, key, true, claims)
	if err != nil {
		return nil, nil, "", at(stageIssue, errcode.Wrap(errcode.Internal, err, "signing"))
	}
	return &GrantResponse{AccessToken: tok, IssuedTokenType: TokenTypeIDJAG, TokenType: "N_A",
		ExpiresIn: int64(e - iat), Scope: sc}, claims, key.KID(), nil
}

// txnTokenSubject: the Txn-Token rules of the generic grant (issue steps 4 and 5).
func (g *GrantIssuer) txnTokenSubject(ctx context.Context, raw string, req *oauth.Client) (*subjectOf, error) {
	txn, err := g.cfg.TxnTokens.Verify(ctx, raw)
	if err != nil {
		return nil, at(stageRequest, err)
	}
	if len(txn.Aud) != 1 || txn.Aud[0] != req.ID.TrustDomain() {
		return nil, at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "%s is not a workload of the Txn-Token's trust domain", req.ID))
	}
	sc := txn.ScopeList()
	if sc == nil {
		sc = []string{}
	}
	return &subjectOf{sub: txn.Sub, scope: sc, exp: txn.Exp.Time(), policy: txnSubject(txn)}, nil
}

// idTokenSubject validates an ID token of a configured provider (section 4.3.3: the
// IdP MUST validate the assertion, and that its aud matches the authenticated client):
// iss configured, typ absent or JWT, alg allowed, the key from the provider's keys, the
// signature, sub, exp required, nbf and iat, and aud naming client.
func (g *GrantIssuer) idTokenSubject(ctx context.Context, raw, client string) (*subjectOf, error) {
	t, err := jose.Parse(raw, maxIDToken)
	if err != nil {
		return nil, at(stageRequest, err)
	}
	var c jose.RegisteredClaims
	if err := netjson.DecodeClaims(t.Payload, &c); err != nil {
		return nil, at(stageRequest, err)
	}
	var idp *IDTokenIssuer
	for i := range g.cfg.IDTokens {
		if g.cfg.IDTokens[i].Issuer == c.Iss {
			idp = &g.cfg.IDTokens[i]
		}
	}
	if idp == nil {
		return nil, at(stageRequest, errcode.New(errcode.UntrustedIssuer, "ID tokens of %q are not accepted here", errcode.Cut(c.Iss)))
	}
	if err := t.CheckHeader(jose.Options{Typ: idTokenTyp, Algs: idp.Algs, RSA: idp.RSA, AllowUntyped: true}); err != nil {
		return nil, at(stageRequest, err)
	}
	key, err := idp.Keys.LookupKey(ctx, t.Kid)
	if err != nil {
		return nil, at(stageRequest, err)
	}
	if err := t.VerifyWith(key, false); err != nil {
		return nil, at(stageRequest, err)
	}
	if c.Sub == "" {
		return nil, at(stageRequest, errcode.New(errcode.MissingClaim, "the ID token has no sub"))
	}
	if err := jose.CheckTimes(jose.TimeRules{Now: g.cfg.Now(), Skew: oauth.DefaultSkew, RequireExp: true}, c.Exp, c.Nbf, c.Iat); err != nil {
		return nil, at(stageRequest, err)
	}
	if !slices.ContainsFunc(c.Aud, func(a string) bool { return a == client || idp.ClientIDs[a] == client }) {
		return nil, at(stageRequest, errcode.New(errcode.SubjectClientMismatch, "the ID token was not issued to %s (its aud)", client))
	}
	return &subjectOf{sub: c.Sub, exp: c.Exp.Time(),
		policy: &grantpolicy.Subject{Type: TokenTypeIDToken, Issuer: c.Iss, Sub: c.Sub, Claims: grantpolicy.NewClaims(t.Payload)}}, nil
}
