package chaining

import (
	"slices"

	"github.com/dialogtrust/dialogtrust/oauth"
)

// Routing at the token endpoint (oauth.Endpoint, one handler per grant in the style of
// fosite): the endpoint reads and parses the body once and asks each handler's Match,
// which looks at grant_type, requested_token_type, audience and resource only:
//
//   - the JWTBearer (AS B) serves grant_type jwt-bearer (RFC 7523);
//   - the GrantIssuer (AS A) serves a token exchange asking for
//     urn:ietf:params:oauth:token-type:jwt or ...:id-jag (an ID-JAG), or one without requested_token_type whose
//     audience or resource names a peer AS (identity chaining does not mandate
//     requested_token_type, oauth.md 2.2);
//   - the TTS answers everything else, and what nobody serves (unsupported_grant_type,
//     unsupported_token_type, a repeated parameter).

// Handlers lists the configured chaining handlers (either may be nil) for the token
// endpoint (tts.Config.Grants), AS A first.
func Handlers(asA *GrantIssuer, asB *JWTBearer) []oauth.Handler {
	var out []oauth.Handler
	if asA != nil {
		out = append(out, asA)
	}
	if asB != nil {
		out = append(out, asB)
	}
	return out
}

// Match implements oauth.Handler.
func (b *JWTBearer) Match(tr *oauth.TokenRequest) bool { return tr.GrantType == GrantTypeJWTBearer }

// Match implements oauth.Handler.
func (g *GrantIssuer) Match(tr *oauth.TokenRequest) bool {
	if tr.GrantType != oauth.GrantTypeTokenExchange {
		return false
	}
	if tr.Has("requested_token_type") {
		return tr.RequestedTokenType == TokenTypeJWT || tr.RequestedTokenType == TokenTypeIDJAG
	}
	return g.IsPeer(tr.Audience) || g.IsPeer(tr.Resource)
}

// AmendMetadata adds AS A to the token endpoint's RFC 8414 metadata: the grants it
// issues and identity_chaining_requested_token_types_supported (oauth.md 2.5).
// With a peer ID-JAGs are issued for, id-jag joins the list (ID-JAG draft section 7).
func (g *GrantIssuer) AmendMetadata(md *oauth.Metadata) {
	MetadataFunc(true, false)(md)
	if slices.ContainsFunc(g.peers, func(p GrantPeer) bool { return p.IDJAG }) {
		addOnce(&md.IssuedTokenTypesSupported, TokenTypeIDJAG)
		addOnce(&md.IdentityChainingRequestedTokenTypesSupported, TokenTypeIDJAG)
	}
}

// AmendMetadata adds AS B to the token endpoint's RFC 8414 metadata: the jwt-bearer
// grant and the access tokens it issues.
// With a peer whose ID-JAGs it redeems, authorization_grant_profiles_supported names
// the ID-JAG profile (ID-JAG draft section 7), never the peers (section 8.4).
func (b *JWTBearer) AmendMetadata(md *oauth.Metadata) {
	MetadataFunc(false, true)(md)
	for _, p := range b.peers {
		if p.acceptsIDJAG() {
			addOnce(&md.AuthorizationGrantProfilesSupported, GrantProfileIDJAG)
		}
	}
}

func addOnce(list *[]string, v string) {
	if !slices.Contains(*list, v) {
		*list = append(*list, v)
	}
}

// MetadataFunc amends a token endpoint's RFC 8414 metadata (tts.Config.AmendMetadata)
// for the chaining handlers served at it: their grant types, the token types they
// issue, and identity_chaining_requested_token_types_supported (oauth.md 2.5; the
// Txn-Token chaining profile's section 8, fletcher.go) when this AS issues grants. The
// handlers listed in tts.Config.Grants amend it themselves.
func MetadataFunc(grants, bearer bool) func(*oauth.Metadata) {
	return func(md *oauth.Metadata) {
		add := addOnce
		if grants {
			add(&md.IssuedTokenTypesSupported, TokenTypeJWT)
			for _, t := range identityChainingTokenTypes {
				add(&md.IdentityChainingRequestedTokenTypesSupported, t)
			}
		}
		if bearer {
			add(&md.GrantTypesSupported, GrantTypeJWTBearer)
			add(&md.IssuedTokenTypesSupported, oauth.TokenTypeAccessToken)
		}
	}
}
