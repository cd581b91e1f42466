// Package hydra runs Ory Hydra (v2.3.0, the binary DIALOGTRUST_HYDRA names) as another
// trust domain's authorization server for the interoperability tests: `hydra serve all
// --dev` on two loopback ports with the in-memory database (DSN memory), JWT access
// tokens (RS256), and its admin API for OAuth clients and RFC 7523 trust relationships
// (POST /admin/trust/grants/jwt-bearer/issuers). docs/hydra.md describes the same set-up
// by hand.
package hydra

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
)

// EnvBinary names the Hydra binary (.ci/peers builds it with SQLite, which DSN memory
// needs).
const EnvBinary = "DIALOGTRUST_HYDRA"

// Server is a running Hydra.
type Server struct {
	// Issuer is Hydra's issuer identifier (urls.self.issuer): the iss of its tokens.
	Issuer string
	// TokenURL is its token endpoint: the only aud its jwt-bearer grant handler accepts
	// (fosite's rfc7523 handler compares aud with the token URLs, not the issuer).
	TokenURL string
	// JWKSURL publishes the keys of its ID tokens and JWT access tokens.
	JWKSURL string
	// AdminURL is the admin API.
	AdminURL string
	Process  *proc.Program
}

// Config is the Hydra configuration the tests run with. GrantMaxTTL bounds exp - iat of
// a jwt-bearer assertion (oauth2.grant.jwt.max_ttl); jti and iat stay required
// (oauth2.grant.jwt.jti_optional and iat_optional false, the default).
func Config(publicPort, adminPort int, secret string) string {
	return fmt.Sprintf(`# Ory Hydra v2.3.0 as the authorization server of trust domain b.example.
dsn: memory
serve:
  public: {host: 127.0.0.1, port: %[1]d}
  admin: {host: 127.0.0.1, port: %[2]d}
urls:
  self:
    issuer: http://127.0.0.1:%[1]d
strategies:
  # RFC 9068-style JWT access tokens, signed RS256 with the key set
  # hydra.jwt.access-token, published at /.well-known/jwks.json.
  access_token: jwt
  jwt:
    # scope as a space-separated string (RFC 8693 section 4.2), and scp as a list.
    scope_claim: both
ttl:
  access_token: 5m
oauth2:
  grant:
    jwt:
      # jti and iat are required (jti_optional, iat_optional: false); an assertion may
      # live at most this long (exp - iat).
      max_ttl: 5m
secrets:
  system: [%[3]q]
log:
  level: info
  format: json
`, publicPort, adminPort, secret)
}

// Start runs bin with Config on two free loopback ports and waits until both APIs are
// ready. The process is stopped by its PID when the test ends.
func Start(t testing.TB, bin string) *Server {
	t.Helper()
	dir := t.TempDir()
	public, admin := testkit.FreePort(t), testkit.FreePort(t)
	var b [16]byte
	_, _ = rand.Read(b[:])
	cfg := proc.WriteFile(t, dir, "hydra.yaml", Config(public, admin, hex.EncodeToString(b[:])))
	p := proc.StartProcess(t, "hydra", bin, dir, []string{"serve", "all", "--dev", "--sqa-opt-out", "--config", cfg}, nil)
	base := fmt.Sprintf("http://127.0.0.1:%d", public)
	s := &Server{Issuer: base, TokenURL: base + "/oauth2/token", JWKSURL: base + "/.well-known/jwks.json",
		AdminURL: fmt.Sprintf("http://127.0.0.1:%d", admin), Process: p}
	p.WaitHTTP(t, base+"/health/ready", 60*time.Second)
	p.WaitHTTP(t, s.AdminURL+"/health/ready", 30*time.Second)
	// Hydra generates its signing keys (RSA 4096) on the first request for them, which
	// takes seconds on a busy machine; do it now, so that a TTS's readiness check
	// fetching this JWKS does not wait for it.
	p.WaitHTTP(t, s.JWKSURL, 2*time.Minute)
	return s
}

// Client is an OAuth 2.0 client as Hydra's admin API creates it (POST /admin/clients).
type Client struct {
	ID                      string   `json:"client_id"`
	Secret                  string   `json:"client_secret,omitempty"`
	GrantTypes              []string `json:"grant_types"`
	Scope                   string   `json:"scope"`
	Audience                []string `json:"audience,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	AccessTokenStrategy     string   `json:"access_token_strategy,omitempty"`
}

// CreateClient registers c.
func (s *Server) CreateClient(ctx context.Context, c Client) error {
	return s.admin(ctx, "/admin/clients", c, http.StatusCreated)
}

// TrustIssuer is a jwt-bearer trust relationship (POST
// /admin/trust/grants/jwt-bearer/issuers): Hydra accepts assertions of Issuer, for
// Subject (or any subject), signed with the key JWK (which must carry its kid), and
// lets them ask for at most Scope, until ExpiresAt.
type TrustIssuer struct {
	Issuer          string          `json:"issuer"`
	Subject         string          `json:"subject,omitempty"`
	AllowAnySubject bool            `json:"allow_any_subject,omitempty"`
	Scope           []string        `json:"scope"`
	JWK             json.RawMessage `json:"jwk"`
	ExpiresAt       time.Time       `json:"expires_at"`
}

// Trust registers a trust relationship.
func (s *Server) Trust(ctx context.Context, tr TrustIssuer) error {
	return s.admin(ctx, "/admin/trust/grants/jwt-bearer/issuers", tr, http.StatusCreated)
}

func (s *Server) admin(ctx context.Context, path string, body any, want int) error {
	if err := proc.PostJSON(ctx, s.AdminURL+path, body, nil, want); err != nil {
		return fmt.Errorf("hydra admin %s: %w", path, err)
	}
	return nil
}

// BasicAuth is a transport that authenticates to one token endpoint with
// client_secret_basic (RFC 6749 section 2.3.1), which Hydra requires of every
// jwt-bearer request (fosite never lets that grant skip client authentication), and
// adds nothing to any other request.
type BasicAuth struct {
	TokenURL, ClientID, Secret string
	Base                       http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b *BasicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	base := b.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if r.URL.String() != b.TokenURL {
		return base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.SetBasicAuth(b.ClientID, b.Secret)
	return base.RoundTrip(r)
}
