package chaining

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Client is the requesting workload's side of identity chaining (oauth.md 2.1 steps 2
// and 3): it asks AS A for a JWT authorization grant and redeems it at AS B, each time
// authenticating with its WIT and a fresh proof: a WIMSE HTTP signature (default: it
// also signs the form, so the subject token and the grant are bound to the request) or
// a WPT. It never sends a Txn-Token anywhere but in the subject_token of the grant
// request to AS A. Safe for concurrent use.
type Client struct {
	// HTTPClient carries the requests (default http.DefaultClient). Its transport must
	// not add credentials of its own.
	HTTPClient *http.Client
	// Credentials: a WIT source, or a fixed WIT and the key its cnf names.
	WITSource wit.Source
	WIT       string
	Key       *keys.PrivateKey
	// Proof is proof.HTTPSig (the zero value) or proof.WPT.
	Proof proof.Method
	// Now is the clock of the proofs (default time.Now).
	Now func() time.Time
	// Credential, when set, authenticates the client instead of a WIT and its proof:
	// at an identity provider or a resource's authorization server outside WIMSE (an
	// ID-JAG's cross-app access, idjagclient.go), e.g. oauth.ClientSecretBasic.
	Credential oauth.ClientCredential
}

// GrantParams is a request to AS A for a grant (oauth.md 2.2).
type GrantParams struct {
	// TokenEndpoint is AS A's token endpoint.
	TokenEndpoint string
	// TxnToken is the subject: a Txn-Token of AS A's domain.
	TxnToken string
	// Audience is AS B's issuer identifier (or another name AS A knows it by);
	// Resource, AS B's URI. At least one.
	Audience string
	Resource string
	// Scope, when set, narrows the grant (space-separated); default: the Txn-Token's
	// scope as far as it may cross.
	Scope string
}

// Grant asks AS A for a JWT authorization grant. A refusal is an *errcode.Error with
// AS A's code and kind.
func (c *Client) Grant(ctx context.Context, p GrantParams) (*GrantResponse, error) {
	if p.TxnToken == "" || p.Audience == "" && p.Resource == "" {
		return nil, errcode.New(errcode.InvalidRequest, "a grant request needs the Txn-Token and the peer AS")
	}
	return c.exchange(ctx, p.TokenEndpoint, exchangeRequest{
		requested: oauth.TokenTypeJWT, subjectToken: p.TxnToken, subjectTokenType: oauth.TokenTypeTxnToken,
		audience: p.Audience, resource: p.Resource, scope: p.Scope,
	}, "AS A did not issue a JWT authorization grant")
}

// exchangeRequest is a token exchange (RFC 8693) for a grant: a JWT authorization
// grant (Grant) or an ID-JAG (IDJAG). audience, resource and scope are sent when set.
type exchangeRequest struct {
	requested, subjectToken, subjectTokenType string
	audience, resource, scope                 string
}

// exchange sends r to endpoint. The answer must be the requested token type with
// token_type N_A (it is not an access token); otherwise the refusal says notIssued.
func (c *Client) exchange(ctx context.Context, endpoint string, r exchangeRequest, notIssued string) (*GrantResponse, error) {
	form := url.Values{
		"grant_type":           {oauth.GrantTypeTokenExchange},
		"requested_token_type": {r.requested},
		"subject_token":        {r.subjectToken},
		"subject_token_type":   {r.subjectTokenType},
	}
	for name, v := range map[string]string{"audience": r.audience, "resource": r.resource, "scope": r.scope} {
		if v != "" {
			form.Set(name, v)
		}
	}
	out, err := c.oauthClient(endpoint).Token(ctx, form)
	if err != nil {
		return nil, err
	}
	if out.AccessToken == "" || out.IssuedTokenType != r.requested || out.TokenType != "N_A" {
		return nil, errcode.New(errcode.UnsupportedTokenType, "%s (issued_token_type %q)", notIssued, errcode.Cut(out.IssuedTokenType))
	}
	return &GrantResponse{AccessToken: out.AccessToken, IssuedTokenType: out.IssuedTokenType, TokenType: out.TokenType, ExpiresIn: out.ExpiresIn, Scope: out.Scope}, nil
}

// Redeem presents grant to AS B (RFC 7523 jwt-bearer) and returns the access token of
// AS B's domain. scope "" asks for all the grant allows there.
func (c *Client) Redeem(ctx context.Context, tokenEndpoint, grant, scope string) (*AccessTokenResponse, error) {
	if grant == "" {
		return nil, errcode.New(errcode.InvalidRequest, "no grant to redeem")
	}
	form := url.Values{"grant_type": {oauth.GrantTypeJWTBearer}, "assertion": {grant}}
	if scope != "" {
		form.Set("scope", scope)
	}
	out, err := c.oauthClient(tokenEndpoint).Token(ctx, form)
	if err != nil {
		return nil, err
	}
	if out.AccessToken == "" || !strings.EqualFold(out.TokenType, "Bearer") {
		return nil, errcode.New(errcode.UnsupportedTokenType, "AS B did not issue a bearer access token (token_type %q)", errcode.Cut(out.TokenType))
	}
	return &AccessTokenResponse{AccessToken: out.AccessToken, TokenType: out.TokenType, ExpiresIn: out.ExpiresIn, Scope: out.Scope, Resource: out.Resource}, nil
}

// oauthClient is the token endpoint client of one request: the AS's code for a request
// that could not be completed is as_unavailable.
func (c *Client) oauthClient(endpoint string) *oauth.TokenClient {
	return &oauth.TokenClient{
		TokenEndpoint: endpoint,
		HTTPClient:    c.HTTPClient,
		WITSource:     c.WITSource,
		WIT:           c.WIT,
		Key:           c.Key,
		Proof:         c.Proof,
		Now:           c.Now,
		Unavailable:   errcode.ASUnavailable,
		Credential:    c.Credential,
	}
}
