package chaining

import (
	"context"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// IDJAGParams is a request for an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant
// section 4.3) at an identity provider's or AS A's token endpoint.
type IDJAGParams struct {
	// TokenEndpoint is the IdP's (AS A's) token endpoint.
	TokenEndpoint string
	// SubjectToken and SubjectTokenType: an ID token (TokenTypeIDToken) or a Txn-Token
	// of AS A's domain (oauth.TokenTypeTxnToken).
	SubjectToken     string
	SubjectTokenType string
	// Audience is the resource authorization server's issuer identifier (REQUIRED).
	Audience string
	// Resource, when set, is the protected resource (RFC 8707), e.g. an MCP server's
	// URL; Scope, when set, the scopes asked for there.
	Resource string
	Scope    string
}

// IDJAG asks for an ID-JAG by token exchange. The answer must be an ID-JAG
// (issued_token_type ...:id-jag, token_type N_A, section 4.3.4); the grant is then
// redeemed with Redeem at the resource's authorization server (section 4.4). A refusal
// is an *errcode.Error with the server's code where it sent one of ours.
func (c *Client) IDJAG(ctx context.Context, p IDJAGParams) (*GrantResponse, error) {
	if p.SubjectToken == "" || p.SubjectTokenType == "" || p.Audience == "" {
		return nil, errcode.New(errcode.InvalidRequest, "an ID-JAG request needs the subject token, its type and the resource authorization server")
	}
	return c.exchange(ctx, p.TokenEndpoint, exchangeRequest{
		requested: TokenTypeIDJAG, subjectToken: p.SubjectToken, subjectTokenType: p.SubjectTokenType,
		audience: p.Audience, resource: p.Resource, scope: p.Scope,
	}, "the token endpoint did not issue an ID-JAG")
}
