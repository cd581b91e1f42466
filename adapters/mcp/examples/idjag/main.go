// Command idjag is an MCP client that gets its access token the way MCP's
// Enterprise-Managed Authorization extension (SEP-990, cross-app access) says, on
// dialogtrust's chaining client: an ID token of the enterprise IdP is exchanged at the
// IdP for an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant section 4.3,
// chaining.Client.IDJAG), which the MCP server's authorization server redeems as an
// RFC 7523 jwt-bearer grant (section 4.4, chaining.Client.Redeem) for the access token
// the MCP call carries. It also does SEP-1046's client_credentials with private_key_jwt
// (oauth.TokenClient with oauth.ClientAssertion).
//
// It is the client the MCP conformance suite (@modelcontextprotocol/conformance) runs for
// its scenarios auth/cross-app-access-complete-flow and auth/client-credentials-jwt
// (interop/mcpconformance_client_test.go): the suite passes the MCP server's URL as the
// last argument, the scenario in MCP_CONFORMANCE_SCENARIO and the credentials in
// MCP_CONFORMANCE_CONTEXT (JSON: client_id, client_secret, idp_id_token,
// idp_token_endpoint, idp_client_id; or client_id, private_key_pem,
// signing_algorithm). Discovery is the MCP SDK's (RFC 9728 protected resource metadata
// from the 401's WWW-Authenticate, then RFC 8414 metadata), the MCP session the go-sdk
// client's, authorized through its auth.OAuthHandler.
//
//	go build -o idjag ./examples/idjag   # in adapters/mcp
//	npx @modelcontextprotocol/conformance client --command ./idjag --scenario auth/cross-app-access-complete-flow
//
// It lists the server's tools, calls the first, and exits 0; on a failure it prints the
// stable error code (dialogtrust's, where the failing step is ours) and exits 1.
package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// The scenarios this client plays.
const (
	scenarioCrossApp = "auth/cross-app-access-complete-flow"
	scenarioCCJWT    = "auth/client-credentials-jwt"
)

// conformanceContext is MCP_CONFORMANCE_CONTEXT: the credentials the scenario hands out.
type conformanceContext struct {
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	IDPIDToken       string `json:"idp_id_token"`
	IDPTokenEndpoint string `json:"idp_token_endpoint"`
	IDPClientID      string `json:"idp_client_id"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: idjag <mcp server url> (scenario in MCP_CONFORMANCE_SCENARIO, credentials in MCP_CONFORMANCE_CONTEXT)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout, os.Args[len(os.Args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintf(os.Stderr, "idjag: %s: %v\n", errcode.CodeOf(err), err)
		os.Exit(1)
	}
}

// run connects to the MCP server at serverURL, authorized as scenario says, lists its
// tools and calls the first.
func run(ctx context.Context, w io.Writer, serverURL, scenario, rawContext string) error {
	var cc conformanceContext
	if err := json.Unmarshal([]byte(rawContext), &cc); err != nil {
		return errcode.Wrap(errcode.InvalidRequest, err, "MCP_CONFORMANCE_CONTEXT is not the JSON of a scenario's credentials")
	}
	h := &handler{resource: serverURL, hc: &http.Client{Timeout: 10 * time.Second}, log: w}
	switch scenario {
	case scenarioCrossApp:
		h.token = h.crossApp(cc)
	case scenarioCCJWT:
		h.token = h.clientCredentialsJWT(cc)
	default:
		return errcode.New(errcode.InvalidRequest, "scenario %q: this client plays %s and %s", scenario, scenarioCrossApp, scenarioCCJWT)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "dialogtrust-idjag", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: serverURL, OAuthHandler: h, HTTPClient: h.hc}, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", errors.Join(err, h.failure()))
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	fmt.Fprintf(w, "tools/list: %d tools\n", len(tools.Tools))
	if len(tools.Tools) > 0 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{}})
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", tools.Tools[0].Name, err)
		}
		fmt.Fprintf(w, "tools/call %s: isError=%v\n", tools.Tools[0].Name, res.IsError)
	}
	return nil
}

// handler is the go-sdk transport's auth.OAuthHandler: on the server's 401 it finds
// the authorization server (RFC 9728, RFC 8414) and gets an access token with token;
// the transport then retries with it.
type handler struct {
	resource string
	hc       *http.Client
	log      io.Writer
	// token gets the access token from the authorization server described by as for
	// the protected resource prm describes.
	token func(ctx context.Context, prm *oauthex.ProtectedResourceMetadata, as *oauthex.AuthServerMeta) (string, error)

	mu     sync.Mutex
	access string
	err    error
}

// TokenSource implements auth.OAuthHandler: the access token once there is one.
func (h *handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.access == "" {
		return nil, nil
	}
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: h.access, TokenType: "Bearer"}), nil
}

// Authorize implements auth.OAuthHandler.
func (h *handler) Authorize(ctx context.Context, req *http.Request, res *http.Response) error {
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	err := h.authorize(ctx, res)
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
	return err
}

func (h *handler) failure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

func (h *handler) authorize(ctx context.Context, res *http.Response) error {
	metaURL, err := h.resourceMetadataURL(res)
	if err != nil {
		return err
	}
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, metaURL, h.resource, h.hc)
	if err != nil {
		return errcode.Wrap(errcode.InvalidRequest, err, "protected resource metadata")
	}
	if len(prm.AuthorizationServers) == 0 {
		return errcode.New(errcode.InvalidRequest, "the protected resource names no authorization server")
	}
	issuer := prm.AuthorizationServers[0]
	as, err := oauthex.GetAuthServerMeta(ctx, authServerMetadataURL(issuer), issuer, h.hc)
	if err != nil || as == nil {
		return errcode.Unavailable(errcode.ASUnavailable, err, "authorization server metadata of %s", issuer)
	}
	tok, err := h.token(ctx, prm, as)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.access = tok
	h.mu.Unlock()
	return nil
}

// resourceMetadataURL is the resource_metadata of the 401's Bearer challenge, else the
// well-known URL of RFC 9728 section 3.1 for the resource.
func (h *handler) resourceMetadataURL(res *http.Response) (string, error) {
	cs, err := oauthex.ParseWWWAuthenticate(res.Header.Values("WWW-Authenticate"))
	if err == nil {
		for _, c := range cs {
			if c.Scheme == "bearer" && c.Params["resource_metadata"] != "" {
				return c.Params["resource_metadata"], nil
			}
		}
	}
	u, err := url.Parse(h.resource)
	if err != nil {
		return "", errcode.Wrap(errcode.InvalidRequest, err, "server URL")
	}
	u.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	return u.String(), nil
}

// authServerMetadataURL is RFC 8414 section 3.1's metadata URL of issuer.
func authServerMetadataURL(issuer string) string {
	u, err := url.Parse(issuer)
	if err != nil {
		return issuer
	}
	u.Path = "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.Path, "/")
	return u.String()
}

// scopeOf is what the resource says it takes (RFC 9728 scopes_supported), or nothing.
func scopeOf(prm *oauthex.ProtectedResourceMetadata) string {
	return strings.Join(prm.ScopesSupported, " ")
}

// crossApp is SEP-990: the IdP's ID token for an ID-JAG naming the authorization
// server (audience, its issuer identifier) and the MCP server (resource), at the IdP's
// token endpoint as the IdP's client; then the ID-JAG for an access token at the
// authorization server, authenticated with client_secret_basic as its client.
func (h *handler) crossApp(cc conformanceContext) func(context.Context, *oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta) (string, error) {
	return func(ctx context.Context, prm *oauthex.ProtectedResourceMetadata, as *oauthex.AuthServerMeta) (string, error) {
		if cc.IDPIDToken == "" || cc.IDPTokenEndpoint == "" || cc.ClientID == "" {
			return "", errcode.New(errcode.MissingCredential, "the scenario gave no ID token, IdP token endpoint or client_id")
		}
		idp := &chaining.Client{HTTPClient: h.hc, Credential: oauth.PublicClient{ClientID: cc.IDPClientID}}
		jag, err := idp.IDJAG(ctx, chaining.IDJAGParams{TokenEndpoint: cc.IDPTokenEndpoint, SubjectToken: cc.IDPIDToken,
			SubjectTokenType: chaining.TokenTypeIDToken, Audience: as.Issuer, Resource: prm.Resource, Scope: scopeOf(prm)})
		if err != nil {
			return "", fmt.Errorf("ID-JAG from the IdP: %w", err)
		}
		fmt.Fprintf(h.log, "ID-JAG from %s for %s (resource %s)\n", cc.IDPTokenEndpoint, as.Issuer, prm.Resource)
		rs := &chaining.Client{HTTPClient: h.hc, Credential: oauth.ClientSecretBasic{ClientID: cc.ClientID, Secret: cc.ClientSecret}}
		at, err := rs.Redeem(ctx, as.TokenEndpoint, jag.AccessToken, scopeOf(prm))
		if err != nil {
			return "", fmt.Errorf("access token for the ID-JAG: %w", err)
		}
		fmt.Fprintf(h.log, "access token from %s (jwt-bearer)\n", as.TokenEndpoint)
		return at.AccessToken, nil
	}
}

// clientCredentialsJWT is SEP-1046: client_credentials authenticated with
// private_key_jwt (an assertion for the authorization server's issuer identifier).
func (h *handler) clientCredentialsJWT(cc conformanceContext) func(context.Context, *oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta) (string, error) {
	return func(ctx context.Context, prm *oauthex.ProtectedResourceMetadata, as *oauthex.AuthServerMeta) (string, error) {
		key, err := pkcs8Key(cc.PrivateKeyPEM, cc.SigningAlgorithm)
		if err != nil {
			return "", err
		}
		tc := &oauth.TokenClient{TokenEndpoint: as.TokenEndpoint, HTTPClient: h.hc, Unavailable: errcode.ASUnavailable,
			Credential: oauth.ClientAssertion{ClientID: cc.ClientID, Key: key, Audience: as.Issuer}}
		form := url.Values{"grant_type": {"client_credentials"}, "resource": {prm.Resource}}
		if s := scopeOf(prm); s != "" {
			form.Set("scope", s)
		}
		out, err := tc.Token(ctx, form)
		if err != nil {
			return "", fmt.Errorf("client_credentials: %w", err)
		}
		if out.AccessToken == "" || !strings.EqualFold(out.TokenType, "Bearer") {
			return "", errcode.New(errcode.UnsupportedTokenType, "no bearer access token (token_type %q)", errcode.Cut(out.TokenType))
		}
		fmt.Fprintf(h.log, "access token from %s (client_credentials, private_key_jwt)\n", as.TokenEndpoint)
		return out.AccessToken, nil
	}
}

// pkcs8Key reads the scenario's PKCS #8 PEM key: ES256 (P-256) only, as package keys
// signs with a key held as a crypto.Signer.
func pkcs8Key(pemText, alg string) (*keys.PrivateKey, error) {
	if alg != "" && alg != keys.ES256 {
		return nil, errcode.New(errcode.UnsupportedAlg, "signing_algorithm %q: this client signs ES256", errcode.Cut(alg))
	}
	blk, _ := pem.Decode([]byte(pemText))
	if blk == nil {
		return nil, errcode.New(errcode.InvalidKey, "private_key_pem is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidKey, err, "private_key_pem")
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, errcode.New(errcode.InvalidKey, "private_key_pem holds no signing key")
	}
	return keys.NewExternalKey(s, keys.ES256)
}
