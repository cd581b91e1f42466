package tts

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Paths the Server serves.
const (
	PathToken    = "/token"
	PathMetadata = "/.well-known/oauth-authorization-server"
	PathJWKS     = service.PathJWKS
	PathHealthz  = service.PathHealthz
	PathReadyz   = service.PathReadyz
	PathMetrics  = service.PathMetrics
)

// Pinger is implemented by replay stores that can say cheaply whether they answer;
// /readyz uses it. Both services share it (and /readyz).
type Pinger = service.Pinger

// ReadyCheck is an extra readiness check; an error without a code is reported as
// store_unavailable (the Redis client's PING is such a check; the key sources report
// keys_unavailable themselves).
type ReadyCheck = service.ReadyCheck

// Config configures a Server.
type Config struct {
	// Issuer is the TTS's issuer identifier: the iss of every Txn-Token, the issuer of
	// the metadata, an accepted aud of self_signed tokens and client assertions.
	Issuer string
	// TokenEndpoint is the URL of the token endpoint as clients reach it (default
	// Issuer + PathToken); WPTs and HTTP signatures name it as their audience.
	TokenEndpoint string
	// TrustDomains are the trust domains this TTS serves (the audience values).
	TrustDomains []string
	// Keys signs Txn-Tokens (its active key) and is published as the JWKS.
	Keys *keys.Ring
	// Authenticators are tried in order (see oauth.Authenticator).
	Authenticators []oauth.Authenticator
	// SubjectHandlers validate the subject token types this TTS accepts. The txn_token
	// handler (replacement) is built in; refresh tokens are always refused.
	SubjectHandlers []SubjectTokenHandler
	// Replay is the replay store of the authenticators; /readyz pings it if it can.
	Replay store.Replay
	// Policy decides who may ask for what.
	Policy Policy
	// Decider, when set, is asked after Policy allowed an issuance and before the token
	// is signed (decide.go): nothing is issued when it refuses or cannot decide.
	Decider IssuanceDecider
	// Auditor, when set, records every issuance and refusal of the token endpoint
	// (package audit): an issuance it cannot record is refused (oauth.Auditor).
	Auditor oauth.Auditor
	// Registry receives the metrics and is served at /metrics (default: a new one).
	Registry *prometheus.Registry
	// Logger for JSON logs (default: discard). Tokens appear only as SHA-256 hashes.
	Logger *slog.Logger
	// IssuedLogLevel is the level of the "txn token issued" line written for every
	// token (the zero value is slog.LevelInfo). Below the Logger's level the line,
	// and the hashes it carries, are skipped.
	IssuedLogLevel slog.Level
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Skew is the clock skew accepted on Txn-Tokens presented for replacement.
	Skew time.Duration
	// MaxBodySize bounds a token request (default and maximum oauth.DefaultMaxBodySize).
	MaxBodySize int64
	// ReadyChecks run on /readyz after the built-in ones.
	ReadyChecks []ReadyCheck
	// AmendMetadata, when set, amends the RFC 8414 metadata document before it is
	// served: other grant handlers behind the same token endpoint (package chaining)
	// add their grant types and identity_chaining_requested_token_types_supported.
	AmendMetadata func(*oauth.Metadata)
	// Grants are the other grant handlers served at the token endpoint (identity
	// chaining's AS A and AS B), asked in order before the TTS, which answers every
	// request none of them matches. A handler with a method AmendMetadata(*Metadata)
	// amends the metadata document too.
	Grants []oauth.Handler
	// Revocations, when set, refuses tokens in what the operator revoked (issue 26,
	// revoke.go): token exchange, replacement and the Grants.
	Revocations *revoke.Checker
}

// Server is the Transaction Token Service's HTTP face: the token endpoint, metadata,
// JWKS, health, readiness and metrics.
type Server struct {
	cfg      Config
	handlers map[string]SubjectTokenHandler
	replace  *txnTokenHandler
	log      *slog.Logger
	router   chi.Router
	proofAud []string
	auth     oauth.ClientAuth // of txnGrant
	endpoint *oauth.Endpoint
}

// New checks cfg and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.Issuer == "" {
		return nil, fmt.Errorf("tts: issuer identifier is required")
	}
	if cfg.Keys == nil || cfg.Keys.Active() == nil {
		return nil, fmt.Errorf("tts: a signing key ring is required")
	}
	if len(cfg.TrustDomains) == 0 {
		return nil, fmt.Errorf("tts: at least one trust domain is required")
	}
	for _, td := range cfg.TrustDomains {
		if _, err := identifier.Parse("wimse://" + td + "/x"); err != nil {
			return nil, fmt.Errorf("tts: trust domain %q: %w", td, err)
		}
	}
	if len(cfg.Authenticators) == 0 {
		return nil, fmt.Errorf("tts: at least one authentication method is required")
	}
	if err := cfg.Policy.normalize(); err != nil {
		return nil, err
	}
	if cfg.TokenEndpoint == "" {
		cfg.TokenEndpoint = strings.TrimSuffix(cfg.Issuer, "/") + PathToken
	}
	service.ServerDefaults{Registry: &cfg.Registry, Logger: &cfg.Logger, Now: &cfg.Now, Skew: &cfg.Skew,
		MaxBodySize: &cfg.MaxBodySize}.Fill(oauth.DefaultSkew, oauth.DefaultMaxBodySize)
	s := &Server{cfg: cfg, handlers: map[string]SubjectTokenHandler{}, log: cfg.Logger}
	for _, h := range cfg.SubjectHandlers {
		t := h.Type()
		if t == TokenTypeRefreshToken || t == TokenTypeTxnToken {
			return nil, fmt.Errorf("tts: a handler for %s cannot be configured", t)
		}
		if _, dup := s.handlers[t]; dup {
			return nil, fmt.Errorf("tts: two handlers for %s", t)
		}
		s.handlers[t] = h
	}
	s.replace = &txnTokenHandler{v: txnTokenVerifier(&cfg)}
	s.proofAud = []string{cfg.TokenEndpoint}
	s.auth = oauth.ClientAuth{Authenticators: cfg.Authenticators, Missing: "no client authentication this TTS accepts", Refused: txnTokenRefused}
	observer, err := newMetrics(cfg.Registry, s.cacheLen)
	if err != nil {
		return nil, err
	}
	if s.endpoint, err = oauth.NewEndpoint(oauth.EndpointConfig{Fallback: txnGrant{s}, Handlers: s.revocableGrants(cfg.Grants), MaxBodySize: cfg.MaxBodySize,
		Observer: observer, Auditor: cfg.Auditor}); err != nil {
		return nil, err
	}
	s.router = s.routes()
	return s, nil
}

func (s *Server) cacheLen() float64 {
	n := 0
	for _, h := range s.handlers {
		if c, ok := h.(interface{ CacheLen() int }); ok {
			n += c.CacheLen()
		}
	}
	return float64(n)
}

// Handler returns the HTTP handler (a chi router) of every endpoint.
func (s *Server) Handler() http.Handler { return s.router }

// TokenEndpoint returns the token endpoint URL.
func (s *Server) TokenEndpoint() string { return s.cfg.TokenEndpoint }

// TxnTokenVerifier returns the verifier of Txn-Tokens this server issued: its own keys,
// the trust domains it serves, its issuer identifier, its clock and skew (the one used
// for replacement). Identity chaining's grant issuer (AS A) validates its subject
// tokens with it.
func (s *Server) TxnTokenVerifier() *txntoken.Verifier { return s.replace.v }

// TxnTokenVerifierFor returns the verifier of Txn-Tokens a Server built from cfg
// issues, the one it uses for replacement (see TxnTokenVerifier): a grant handler
// served at the same token endpoint (identity chaining's AS A) is built with it before
// the Server, and listed in cfg.Grants.
func TxnTokenVerifierFor(cfg Config) *txntoken.Verifier {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Skew <= 0 {
		cfg.Skew = oauth.DefaultSkew
	}
	return txnTokenVerifier(&cfg)
}

// txnTokenVerifier is the verifier of a configuration with its defaults applied.
func txnTokenVerifier(cfg *Config) *txntoken.Verifier {
	var first string
	more := cfg.TrustDomains
	if len(more) > 0 {
		first, more = more[0], more[1:]
	}
	return txntoken.NewVerifier(ringKeys{cfg.Keys}, first, txntoken.WithTrustDomains(more...),
		txntoken.WithIssuer(cfg.Issuer), txntoken.WithClock(cfg.Now), txntoken.WithSkew(cfg.Skew), txntoken.WithMaxLifetime(MaxLifetime))
}

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Method(http.MethodPost, PathToken, s.endpoint)
	service.MountJWKS(r, s.cfg.Keys)
	r.Get(PathMetadata, s.serveMetadata)
	service.MountOps(r, s.cfg.Registry, s.readiness())
	return r
}

// readiness is what /readyz checks: an active signing key, the replay store's Ping,
// then the configured checks.
func (s *Server) readiness() service.Readiness {
	return service.Readiness{SigningKey: func() bool { return s.cfg.Keys.Active() != nil }, Store: s.cfg.Replay, Checks: s.cfg.ReadyChecks, Logger: s.log}
}

// Metadata returns the current metadata document.
func (s *Server) Metadata() oauth.Metadata {
	base := strings.TrimSuffix(s.cfg.Issuer, "/")
	md := oauth.Metadata{
		Issuer:                    s.cfg.Issuer,
		TokenEndpoint:             s.cfg.TokenEndpoint,
		JWKSURI:                   base + PathJWKS,
		GrantTypesSupported:       []string{GrantTypeTokenExchange},
		IssuedTokenTypesSupported: []string{TokenTypeTxnToken},
		TrustDomainsSupported:     slices.Clone(s.cfg.TrustDomains),
	}
	for _, a := range s.cfg.Authenticators {
		md.TokenEndpointAuthMethodsSupported = append(md.TokenEndpointAuthMethodsSupported, a.Name())
		if a.Name() == oauth.MethodPrivateKeyJWT {
			md.TokenEndpointAuthSigningAlgValuesSupported = []string{keys.ES256, keys.EdDSA}
		}
	}
	for t := range s.handlers {
		md.SubjectTokenTypesSupported = append(md.SubjectTokenTypesSupported, t)
	}
	md.SubjectTokenTypesSupported = append(md.SubjectTokenTypesSupported, TokenTypeTxnToken)
	slices.Sort(md.SubjectTokenTypesSupported)
	for _, g := range s.cfg.Grants {
		if a, ok := g.(interface{ AmendMetadata(*oauth.Metadata) }); ok {
			a.AmendMetadata(&md)
		}
	}
	if s.cfg.AmendMetadata != nil {
		s.cfg.AmendMetadata(&md)
	}
	return md
}

func (s *Server) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	md := s.Metadata()
	oauth.ServeMetadata(w, &md)
}

// ringKeys lets a Ring's published keys serve as a KeySet (for replacement).
type ringKeys struct{ r *keys.Ring }

func (k ringKeys) LookupKey(ctx context.Context, kid string) (*keys.PublicKey, error) {
	if a := k.r.Active(); a != nil && kid != "" && a.KID() == kid {
		return a.Public(), nil
	}
	return k.r.KeySet().LookupKey(ctx, kid)
}
