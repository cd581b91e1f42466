package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// ClientCredential authenticates a TokenClient at an authorization server that does
// not take WITs (RFC 6749 section 2.3): an enterprise identity provider, or a resource's
// authorization server, as in ID-JAG's cross-app access. It adds its credential to the
// token request: to the form before the body is encoded, or to the header. A
// TokenClient with a Credential sends no WIT and no proof.
type ClientCredential interface {
	AddTo(ctx context.Context, form url.Values, h http.Header) error
}

// ClientSecretBasic is RFC 6749 section 2.3.1's HTTP Basic authentication: client_id
// and secret, each form-urlencoded, then base64 in the Authorization field.
type ClientSecretBasic struct {
	ClientID, Secret string
}

// AddTo implements ClientCredential.
func (c ClientSecretBasic) AddTo(_ context.Context, _ url.Values, h http.Header) error {
	if c.ClientID == "" {
		return errcode.New(errcode.MissingCredential, "client_secret_basic needs a client_id")
	}
	pair := url.QueryEscape(c.ClientID) + ":" + url.QueryEscape(c.Secret)
	h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(pair)))
	return nil
}

// PublicClient sends only client_id (RFC 6749 section 2.3: a client without
// credentials identifies itself).
type PublicClient struct{ ClientID string }

// AddTo implements ClientCredential.
func (c PublicClient) AddTo(_ context.Context, form url.Values, _ http.Header) error {
	if c.ClientID == "" {
		return errcode.New(errcode.MissingCredential, "a public client needs a client_id")
	}
	form.Set("client_id", c.ClientID)
	return nil
}

// ClientAssertion is private_key_jwt (RFC 7523 section 2.2, OpenID Connect Core
// section 9): a fresh assertion per request, iss = sub = ClientID, aud = Audience (the
// authorization server's issuer identifier, as draft-ietf-oauth-rfc7523bis asks),
// typ client-authentication+jwt, exp a minute ahead, a random jti.
type ClientAssertion struct {
	ClientID string
	Key      *keys.PrivateKey
	Audience string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// AddTo implements ClientCredential.
func (c ClientAssertion) AddTo(_ context.Context, form url.Values, _ http.Header) error {
	if c.ClientID == "" || c.Key == nil || c.Audience == "" {
		return errcode.New(errcode.MissingCredential, "private_key_jwt needs a client_id, a key and the server's issuer identifier")
	}
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	iat := jose.NumericDate(now.Unix())
	exp := jose.NumericDate(now.Add(DefaultClientAssertionLifetime).Unix())
	tok, err := jose.SignClaims(ClientAssertionType, c.Key, true, AssertionClaims{
		Iss: c.ClientID, Sub: c.ClientID, Aud: jose.Audience{c.Audience}, Iat: &iat, Exp: &exp, Jti: rand.Text()})
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "signing the client assertion")
	}
	form.Set("client_assertion_type", ClientAssertionTypeJWTBearer)
	form.Set("client_assertion", tok)
	return nil
}
