package chaining

import (
	"context"
	"net/url"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
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
	form := url.Values{
		"grant_type":           {oauth.GrantTypeTokenExchange},
		"requested_token_type": {TokenTypeIDJAG},
		"subject_token":        {p.SubjectToken},
		"subject_token_type":   {p.SubjectTokenType},
		"audience":             {p.Audience},
	}
	if p.Resource != "" {
		form.Set("resource", p.Resource)
	}
	if p.Scope != "" {
		form.Set("scope", p.Scope)
	}
	out, err := c.oauthClient(p.TokenEndpoint).Token(ctx, form)
	if err != nil {
		return nil, err
	}
	if out.AccessToken == "" || out.IssuedTokenType != TokenTypeIDJAG || out.TokenType != "N_A" {
		return nil, errcode.New(errcode.UnsupportedTokenType, "the token endpoint did not issue an ID-JAG (issued_token_type %q)", errcode.Cut(out.IssuedTokenType))
	}
	return &GrantResponse{AccessToken: out.AccessToken, IssuedTokenType: out.IssuedTokenType, TokenType: out.TokenType, ExpiresIn: out.ExpiresIn, Scope: out.Scope}, nil
}
