package chaining

import (
	"encoding/json"
	"slices"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
)

// AS B redeeming an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant section
// 4.4.1) as an RFC 7523 jwt-bearer grant. A peer's ID-JAGs are accepted when its Typs
// include IDJAGTyp; the grant then goes through everything verifyGrant applies to any
// grant (iss a peer, alg, the peer's key, signature, sub, exp within MaxGrantAge, nbf,
// iat, jti) and, because of its typ:
//
//   - aud exactly this AS's issuer identifier (a string, or an array of that one
//     element): not its token endpoint, not the peer's audiences;
//   - iat present (section 3.1);
//   - client_id present and the authenticated client (grant_client_mismatch);
//   - resource, when present, naming at least one resource this AS issues access tokens
//     for (its Audiences); a resource parameter of the request must be one of those;
//     the access token's aud is the resource granted;
//   - authorization_details, when present, a JSON array (it is parsed and nothing of
//     it is granted: this AS issues no authorization details, as section 4.4.1 allows);
//   - cnf.jkt, the draft's binding (section 8.6.1), in place of requested_cnf: equal to
//     the thumbprint of the client's WIT key, or absent only where the peer allows
//     unbound grants;
//
// then the peer's client, scope and subject policy, and the jti claimed once, as for
// every grant. An ID-JAG that this AS issued itself is never redeemed here (section
// 8.3): a peer cannot be this AS (NewJWTBearer), and an unknown iss is
// untrusted_issuer.

// acceptsIDJAG reports whether the peer's grants may be ID-JAGs.
func (p *BearerPeer) acceptsIDJAG() bool {
	return slices.ContainsFunc(p.Typs, func(t string) bool { return jose.TypeMatches(t, IDJAGTyp) })
}

// idjagGrant is what an ID-JAG decides of the access token.
type idjagGrant struct {
	audience string // the resource granted, or this AS's default audience
	resource bool   // the ID-JAG named a resource (the response says which was granted)
}

// checkIDJAG applies the ID-JAG's own rules to a verified grant, for the authenticated
// client and the request's resource parameter ("" when absent).
func (b *JWTBearer) checkIDJAG(g *GrantClaims, client, requested string) (*idjagGrant, error) {
	switch {
	case g.ClientID == "":
		return nil, errcode.New(errcode.MissingClaim, "the ID-JAG has no client_id")
	case g.ClientID != client:
		return nil, errcode.New(errcode.GrantClientMismatch, "the ID-JAG was issued for client %q, not the authenticated client", errcode.Cut(g.ClientID))
	}
	if len(g.AuthorizationDetails) > 0 {
		var details []map[string]json.RawMessage
		if err := json.Unmarshal(g.AuthorizationDetails, &details); err != nil {
			return nil, errcode.New(errcode.InvalidClaim, "the ID-JAG's authorization_details is not a JSON array of objects")
		}
	}
	out := &idjagGrant{audience: b.cfg.Audiences[0]}
	if requested != "" {
		out.audience = requested
	}
	if len(g.Resource) == 0 {
		return out, nil
	}
	out.resource = true
	var served []string
	for _, r := range g.Resource {
		if checkResource(r) == nil && slices.Contains(b.cfg.Audiences, r) {
			served = append(served, r)
		}
	}
	switch {
	case len(served) == 0:
		return nil, errcode.New(errcode.ResourceNotAllowed, "no resource of the ID-JAG is one this authorization server issues access tokens for")
	case requested != "" && !slices.Contains(served, requested):
		return nil, errcode.New(errcode.ResourceNotAllowed, "resource %q is not among the ID-JAG's resources served here", errcode.Cut(requested))
	case requested == "":
		out.audience = served[0]
	}
	return out, nil
}
