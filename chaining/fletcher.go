package chaining

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// The Transaction Token JWT Authorization Grant profile of identity chaining
// (draft-fletcher-oauth-txn-token-chaining-profile-00, read from its source at
// gffletch/tt_xdomain; section numbers follow its headings): a Txn-Token is the
// subject token of the token exchange at AS A, which is exactly AS A here (Figure 5
// step 1). Where dialogtrust follows it:
//
//   - section 4.1: subject_token_type txn_token, the Txn-Token verified with the TTS's
//     keys, not expired, its aud this domain (GrantIssuer.Check, issue);
//   - section 4.3: audience names AS B's issuer (agent.Linker sends only audience);
//     requested_token_type absent or ...:jwt; actor_token refused;
//   - sections 4.3.1, 5.1 step 6 and 6.1.2: with audience naming the peer, resource may
//     name a protected resource of the peer's domain (one the peer's Resources list,
//     else unknown_peer), which the grant carries as its resource claim; section 5.2
//     step 7: AS B then issues the access token for that resource, which must be one
//     of its audiences (audience_not_served), and a request's resource must be it;
//   - section 4.3.4: issued_token_type ...:jwt, token_type N_A, expires_in, no
//     refresh_token;
//   - section 5.2 and 6.1.1: typ txn-chain+jwt (GrantTyp), checked by AS B; a grant of
//     another typ (an ID-JAG's oauth-id-jag+jwt) is wrong_type there;
//   - section 6.1.2: iss, sub, aud (one string), iat, exp (60 s), jti, scope never
//     wider than the Txn-Token's; AS B claims the jti once (replayed);
//   - section 7.3: the sub mapped per peer (SubjectMap), refused when no mapping
//     applies;
//   - section 8: identity_chaining_requested_token_types_supported lists txn_token
//     (identityChainingTokenTypes);
//   - section 9.8 (and identity chaining section 5.4): AS B never issues a refresh
//     token.
//
// Where it does not, deliberately (docs/interop.md, "Specification revisions"):
//
//   - section 7.1 makes the Txn-Token's txn a MUST in the grant. The grant carries
//     nothing of the Txn-Token but its mapped subject and a scope within its own:
//     dialog-binding section 11 has only A2 know that D2 continues D1, and section 13
//     (domain separation) keeps the original domain's transaction out of domain B. The
//     profile's own section 3.3 and privacy considerations let deployments that limit
//     linkability use independent transaction identifiers in each domain; this is one.
//     txn_claims (MAY) is not written either, for the same reason.
//   - section 7.2 makes the grant's scope the intersection of the Txn-Token's and the
//     requested scope. AS A never issues a wider scope, as the profile requires, but a
//     request for more than the Txn-Token's scope is refused (invalid_scope), not
//     trimmed, so that a client learns at once that it asked for more than it holds.
//   - section 6.1.2 names the workload's key in cnf (MAY); AS A writes it, as
//     identity chaining Appendix B.3 names it, in requested_cnf, and AS B requires it
//     (grant_binding_mismatch).
//   - section 4.3.1 makes audience REQUIRED and says a client MUST NOT send AS B's
//     issuer as resource; identity chaining section 2.3.1 gives resource AS B's URI.
//     AS A still accepts a request naming the peer AS by resource alone (the base
//     draft's form).

// identityChainingTokenTypes are what AS A publishes as
// identity_chaining_requested_token_types_supported (RFC 8414 metadata; identity
// chaining section 3): the requested_token_type of a grant request (...:jwt, oauth.md
// 2.5), and txn_token, which the Txn-Token chaining profile (section 8) requires of an
// AS that takes Txn-Tokens as subject tokens. The two drafts read the member
// differently (requested token types, the base draft; the profile names the subject
// token type there); publishing both satisfies each.
var identityChainingTokenTypes = []string{TokenTypeJWT, oauth.TokenTypeTxnToken}

// resolvePeer finds the peer a grant request names and the protected resource, if
// any, the grant is for. The profile's form (sections 4.3.1, 5.1 steps 5 and 6):
// audience names the peer and resource a protected resource of its domain, which the
// peer must list. Otherwise every present value must name the one peer (peer), and the
// grant names no resource.
func (g *GrantIssuer) resolvePeer(audience, resource string) (*GrantPeer, string, error) {
	if audience == "" || resource == "" || g.IsPeer(resource) {
		p, err := g.peer(audience, resource)
		return p, "", err
	}
	p := g.lookup(audience)
	if p == nil {
		return nil, "", errcode.New(errcode.UnknownPeer, "audience %q names no peer authorization server this AS issues grants for", errcode.Cut(audience))
	}
	if !matchResource(p.Resources, resource) {
		return nil, "", errcode.New(errcode.UnknownPeer, "resource %q is not a protected resource of %s that grants may name", errcode.Cut(resource), p.Issuer)
	}
	return p, resource, nil
}

// matchResource: rs holds resource exactly, or a prefix of it ending in "/".
func matchResource(rs []string, resource string) bool {
	return slices.ContainsFunc(rs, func(r string) bool {
		return r == resource || strings.HasSuffix(r, "/") && strings.HasPrefix(resource, r)
	})
}

// CheckResources checks a peer's Resources: absolute URIs without fragment (RFC 8707
// section 2), or such prefixes ending in "/" (checkResource, the request's own check).
// NewGrantIssuer runs it; a configuration check can run it first.
func CheckResources(rs []string) error {
	for _, r := range rs {
		if checkResource(r) != nil {
			return fmt.Errorf("resource %q is not an absolute URI without a fragment", r)
		}
	}
	return nil
}

// grantResourceClaim is the resource claim of a Txn-Token-JAG: the one protected
// resource the request named (profile section 6.1.2, a string), or none.
func grantResourceClaim(resource string) jose.Audience {
	if resource == "" {
		return nil
	}
	return jose.Audience{resource}
}

// grantResource is the audience of AS B's access token when the grant names a
// protected resource (profile section 5.2 step 7: the token is constrained by it): the
// grant's resource, which must be one of this AS's audiences, and which a request's
// resource, when sent, must equal. Without one in the grant, aud stands.
func (b *JWTBearer) grantResource(aud, requested string, resource jose.Audience) (string, error) {
	if len(resource) > 1 {
		return "", errcode.New(errcode.InvalidClaim, "the grant names %d resources: a Txn-Token-JAG names one", len(resource))
	}
	granted := ""
	if len(resource) == 1 {
		granted = resource[0]
	}
	switch {
	case granted == "":
		return aud, nil
	case !slices.Contains(b.cfg.Audiences, granted):
		return "", errcode.New(errcode.AudienceNotServed, "the grant's resource %q is not served by this authorization server", errcode.Cut(granted))
	case requested != "" && requested != granted:
		return "", errcode.New(errcode.AudienceNotServed, "resource %q is not the grant's resource", errcode.Cut(requested))
	}
	return granted, nil
}
