package witissuer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/reqid"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Route mounts the issuance endpoint at Path with its authentication methods, tried in
// order (see Authenticator).
type Route struct {
	Path    string
	Methods []Authenticator
}

// Pinger is implemented by replay stores that can say cheaply whether they answer;
// /readyz uses it. Both services share it (and /readyz).
type Pinger = service.Pinger

// ReadyCheck is an extra readiness check. An error that is not an *errcode.Error is
// reported as store_unavailable.
type ReadyCheck = service.ReadyCheck

// Config configures a Server.
type Config struct {
	// Issuer is the issuer identifier: the aud every request must name and the iss of
	// every WIT. Required.
	Issuer string
	// PublicURL is the base URL the metadata document links from (default Issuer).
	PublicURL string
	// Keys holds the signing keys. Required.
	Keys *keys.Rotator
	// Replay claims request and assertion jtis once. Required.
	Replay store.Replay
	// Policy; TrustDomains is required, the rest has defaults.
	Policy Policy
	// Routes: at least one. The first route's path is the metadata's wit_endpoint.
	Routes []Route
	// Registry receives the metrics and is served at /metrics (default: a new one).
	Registry *prometheus.Registry
	// Logger for JSON logs (default: discard).
	Logger *slog.Logger
	// IssuedLogLevel is the level of the "wit issued" line written for every WIT
	// (the zero value is slog.LevelInfo). The development method's warning stays a
	// warning.
	IssuedLogLevel slog.Level
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ProofWindow bounds |now - iat| of a request (default 60s).
	ProofWindow time.Duration
	// Skew is tolerated on the WITs' consumers' side; it lengthens replay claims.
	Skew time.Duration
	// MaxBodySize bounds the request body (default 64 KiB).
	MaxBodySize int64
	// ReadyChecks run on /readyz after the built-in ones (keys loaded; the replay
	// store's Ping if it has one).
	ReadyChecks []ReadyCheck
}

// Server is the WIT issuer's HTTP face.
type Server struct {
	cfg     Config
	metrics *Metrics
	log     *slog.Logger
	router  chi.Router
}

// New checks cfg and builds the server.
func New(cfg Config) (*Server, error) {
	if cfg.Issuer == "" {
		return nil, fmt.Errorf("witissuer: issuer identifier is required")
	}
	if cfg.Keys == nil || cfg.Replay == nil {
		return nil, fmt.Errorf("witissuer: keys and replay store are required")
	}
	if err := cfg.Policy.normalize(); err != nil {
		return nil, err
	}
	if len(cfg.Routes) == 0 {
		return nil, fmt.Errorf("witissuer: at least one route is required")
	}
	reserved := []string{PathJWKS, PathMetadata, PathHealthz, PathReadyz, PathMetrics}
	seen := map[string]bool{}
	for _, r := range cfg.Routes {
		if !strings.HasPrefix(r.Path, "/") || slices.Contains(reserved, r.Path) || seen[r.Path] {
			return nil, fmt.Errorf("witissuer: route path %q is invalid, reserved or repeated", r.Path)
		}
		seen[r.Path] = true
		if len(r.Methods) == 0 {
			return nil, fmt.Errorf("witissuer: route %s has no authentication method", r.Path)
		}
		for i, m := range r.Methods {
			if m.Name() == MethodDev && i != len(r.Methods)-1 {
				// dev is always "present", so anything after it would never run.
				return nil, fmt.Errorf("witissuer: route %s: the dev method must come last", r.Path)
			}
		}
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = cfg.Issuer
	}
	cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	if cfg.ProofWindow <= 0 {
		cfg.ProofWindow = DefaultProofWindow
	}
	service.ServerDefaults{Registry: &cfg.Registry, Logger: &cfg.Logger, Now: &cfg.Now, Skew: &cfg.Skew,
		MaxBodySize: &cfg.MaxBodySize}.Fill(oauth.DefaultSkew, DefaultMaxBodySize)
	m, err := NewMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		metrics: m,
		log:     cfg.Logger,
	}
	s.router = s.routes()
	return s, nil
}

// Handler returns the HTTP handler (a chi router) of every endpoint.
func (s *Server) Handler() http.Handler { return s.router }

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	for _, rt := range s.cfg.Routes {
		r.Post(rt.Path, s.issueHandler(rt.Methods))
	}
	service.MountJWKS(r, s.cfg.Keys.Ring())
	r.Get(PathMetadata, s.serveMetadata)
	service.MountOps(r, s.cfg.Registry, s.readiness())
	return r
}

// readiness is what /readyz checks: an active signing key, the replay store's Ping,
// then the configured checks.
func (s *Server) readiness() service.Readiness {
	return service.Readiness{SigningKey: func() bool { return s.cfg.Keys.Ring().Active() != nil }, Store: s.cfg.Replay, Checks: s.cfg.ReadyChecks, Logger: s.log}
}

// Metadata is the issuer's metadata document (GET /.well-known/wit-issuer).
type Metadata struct {
	Issuer                    string   `json:"issuer"`
	JWKSURI                   string   `json:"jwks_uri"`
	WITEndpoint               string   `json:"wit_endpoint"`
	SigningAlgValuesSupported []string `json:"signing_alg_values_supported"`
	CnfAlgValuesSupported     []string `json:"cnf_alg_values_supported"`
	AuthMethodsSupported      []string `json:"auth_methods_supported"`
}

// Metadata returns the current metadata document.
func (s *Server) Metadata() Metadata {
	md := Metadata{
		Issuer:                s.cfg.Issuer,
		JWKSURI:               s.cfg.PublicURL + PathJWKS,
		WITEndpoint:           s.cfg.PublicURL + s.cfg.Routes[0].Path,
		CnfAlgValuesSupported: slices.Clone(s.cfg.Policy.AllowedAlgs),
	}
	for _, k := range s.cfg.Keys.Ring().Public() {
		if !slices.Contains(md.SigningAlgValuesSupported, k.Alg()) {
			md.SigningAlgValuesSupported = append(md.SigningAlgValuesSupported, k.Alg())
		}
	}
	for _, rt := range s.cfg.Routes {
		for _, m := range rt.Methods {
			if !slices.Contains(md.AuthMethodsSupported, m.Name()) {
				md.AuthMethodsSupported = append(md.AuthMethodsSupported, m.Name())
			}
		}
	}
	return md
}

func (s *Server) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(w, http.StatusOK, s.Metadata())
}

func (s *Server) issueHandler(methods []Authenticator) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rid := reqid.Set(w, r)
		method, resp, err := s.issue(w, r, methods)
		s.metrics.duration.Observe(time.Since(start).Seconds())
		if err != nil {
			s.refuse(w, r, rid, method, err)
			return
		}
		s.metrics.issued.WithLabelValues(method).Inc()
		attrs := []any{"request_id", rid, "method", method, "sub", resp.Sub, "expires_at", resp.ExpiresAt,
			"kid", resp.kid, "wit_sha256", tokenhash.Of(resp.WIT), "remote", r.RemoteAddr}
		if method == MethodDev {
			s.log.Warn("DEVELOPMENT MODE: WIT issued WITHOUT authenticating the workload", attrs...)
		} else {
			s.log.Log(r.Context(), s.cfg.IssuedLogLevel, "wit issued", attrs...)
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Pragma", "no-cache")
		writeJSON(w, http.StatusOK, resp.Response)
	}
}

type issued struct {
	Response
	kid string
}

// issue runs the request through proof, authentication, policy and the replay store, in
// that order (doc.go says why), and mints the WIT.
func (s *Server) issue(w http.ResponseWriter, r *http.Request, methods []Authenticator) (string, *issued, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return "", nil, err
	}
	now := s.cfg.Now()
	req, err := checkProof(body, proofRules{issuer: s.cfg.Issuer, window: s.cfg.ProofWindow, now: now})
	if err != nil {
		return "", nil, err
	}
	var (
		method string
		id     identifier.ID
	)
	for _, m := range methods {
		if m.Present(r, req) {
			method = m.Name()
			id, err = m.Authenticate(r, req)
			break
		}
	}
	if method == "" {
		return "", nil, errcode.New(errcode.Unauthenticated, "no credential for any method of this endpoint")
	}
	if err != nil {
		return method, nil, err
	}
	pol := &s.cfg.Policy
	if err := pol.CheckAlg(req.Key.Alg()); err != nil {
		return method, nil, err
	}
	ttl, err := pol.Lifetime(req.TTL)
	if err != nil {
		return method, nil, err
	}
	sub, err := pol.Subject(id, req.Sub)
	if err != nil {
		return method, nil, err
	}
	// A request is acceptable until iat + window; its jti is held that long (plus a
	// second for the truncation of iat to whole seconds).
	hold := req.Claims.Iat.Time().Add(s.cfg.ProofWindow).Sub(now) + time.Second
	if err := s.cfg.Replay.Claim(r.Context(), replayKey("request", id.String(), req.Claims.Jti), hold); err != nil {
		return method, nil, err
	}
	// One key for the whole issuance, so the log names the key that really signed even
	// if a rotation activates another one meanwhile.
	key := s.cfg.Keys.Ring().Active()
	tok, claims, err := wit.NewIssuer(s.cfg.Issuer, func() *keys.PrivateKey { return key },
		wit.WithClock(func() time.Time { return now }), wit.WithMaxLifetime(pol.MaxLifetime)).Issue(sub, req.Key, ttl)
	if err != nil {
		return method, nil, err
	}
	return method, &issued{Response: Response{WIT: tok, ExpiresAt: int64(*claims.Exp), Sub: claims.Sub}, kid: key.KID()}, nil
}

func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (*RequestBody, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, errcode.New(errcode.InvalidRequest, "Content-Type must be application/json")
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodySize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, errcode.New(errcode.BodyTooLarge, "body over %d octets", s.cfg.MaxBodySize)
		}
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "reading the body")
	}
	return ParseBody(b)
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, rid, method string, err error) {
	code := errcode.CodeOf(err)
	if code == errcode.Unmapped {
		// A failure that carries no code is ours, not the caller's; its text stays in
		// the log and out of the response.
		err = errcode.Wrap(errcode.Internal, err, "internal error")
		code = errcode.Internal
	}
	s.metrics.refused.WithLabelValues(string(code)).Inc()
	s.log.Log(r.Context(), errcode.LogLevel(err), "wit refused", "request_id", rid, "code", string(code), "kind", errcode.KindOf(err).String(),
		"method", method, "remote", r.RemoteAddr, "error", err.Error())
	problem.Write(w, err)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
