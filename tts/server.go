package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/reqid"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Paths the Server serves.
const (
	PathToken    = "/token"
	PathMetadata = "/.well-known/oauth-authorization-server"
	PathJWKS     = "/.well-known/jwks.json"
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
	// Authenticators are tried in order (see Authenticator).
	Authenticators []Authenticator
	// SubjectHandlers validate the subject token types this TTS accepts. The txn_token
	// handler (replacement) is built in; refresh tokens are always refused.
	SubjectHandlers []SubjectTokenHandler
	// Replay is the replay store of the authenticators; /readyz pings it if it can.
	Replay store.Replay
	// Policy decides who may ask for what.
	Policy Policy
	// Registry receives the metrics and is served at /metrics (default: a new one).
	Registry *prometheus.Registry
	// Logger for JSON logs (default: discard). Tokens appear only as SHA-256 hashes.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Skew is the clock skew accepted on Txn-Tokens presented for replacement.
	Skew time.Duration
	// MaxBodySize bounds a token request (default and maximum DefaultMaxBodySize).
	MaxBodySize int64
	// ReadyChecks run on /readyz after the built-in ones.
	ReadyChecks []ReadyCheck
	// AmendMetadata, when set, amends the RFC 8414 metadata document before it is
	// served: other grant handlers behind the same token endpoint (package chaining)
	// add their grant types and identity_chaining_requested_token_types_supported.
	AmendMetadata func(*Metadata)
}

// Server is the Transaction Token Service's HTTP face: the token endpoint, metadata,
// JWKS, health, readiness and metrics.
type Server struct {
	cfg      Config
	handlers map[string]SubjectTokenHandler
	replace  *txnTokenHandler
	metrics  *metrics
	log      *slog.Logger
	router   chi.Router
	proofAud []string
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
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Skew <= 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.MaxBodySize <= 0 || cfg.MaxBodySize > DefaultMaxBodySize {
		cfg.MaxBodySize = DefaultMaxBodySize
	}
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
	s.replace = &txnTokenHandler{v: txntoken.NewVerifier(ringKeys{cfg.Keys}, cfg.TrustDomains[0], txntoken.WithTrustDomains(cfg.TrustDomains[1:]...),
		txntoken.WithIssuer(cfg.Issuer), txntoken.WithClock(cfg.Now), txntoken.WithSkew(cfg.Skew), txntoken.WithMaxLifetime(MaxLifetime))}
	s.proofAud = []string{cfg.TokenEndpoint}
	m, err := newMetrics(cfg.Registry, s.cacheLen)
	if err != nil {
		return nil, err
	}
	s.metrics = m
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

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Post(PathToken, s.serveToken)
	r.Method(http.MethodGet, PathJWKS, s.cfg.Keys)
	r.Method(http.MethodHead, PathJWKS, s.cfg.Keys)
	r.Get(PathMetadata, s.serveMetadata)
	service.MountOps(r, s.cfg.Registry, s.readiness())
	return r
}

// readiness is what /readyz checks: an active signing key, the replay store's Ping,
// then the configured checks.
func (s *Server) readiness() service.Readiness {
	return service.Readiness{SigningKey: func() bool { return s.cfg.Keys.Active() != nil }, Store: s.cfg.Replay, Checks: s.cfg.ReadyChecks, Logger: s.log}
}

// Metadata is the RFC 8414 metadata document (oauth.Metadata).
//
// Deprecated: use oauth.Metadata.
type Metadata = oauth.Metadata

// Metadata returns the current metadata document.
func (s *Server) Metadata() Metadata {
	base := strings.TrimSuffix(s.cfg.Issuer, "/")
	md := Metadata{
		Issuer:                    s.cfg.Issuer,
		TokenEndpoint:             s.cfg.TokenEndpoint,
		JWKSURI:                   base + PathJWKS,
		GrantTypesSupported:       []string{GrantTypeTokenExchange},
		IssuedTokenTypesSupported: []string{TokenTypeTxnToken},
		TrustDomainsSupported:     slices.Clone(s.cfg.TrustDomains),
	}
	for _, a := range s.cfg.Authenticators {
		md.TokenEndpointAuthMethodsSupported = append(md.TokenEndpointAuthMethodsSupported, a.Name())
		if a.Name() == MethodPrivateKeyJWT {
			md.TokenEndpointAuthSigningAlgValuesSupported = []string{keys.ES256, keys.EdDSA}
		}
	}
	for t := range s.handlers {
		md.SubjectTokenTypesSupported = append(md.SubjectTokenTypesSupported, t)
	}
	md.SubjectTokenTypesSupported = append(md.SubjectTokenTypesSupported, TokenTypeTxnToken)
	slices.Sort(md.SubjectTokenTypesSupported)
	if s.cfg.AmendMetadata != nil {
		s.cfg.AmendMetadata(&md)
	}
	return md
}

func (s *Server) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(w, http.StatusOK, s.Metadata())
}

// TokenResponse is the token endpoint's answer (oauth.TokenResponse).
//
// Deprecated: use oauth.TokenResponse.
type TokenResponse = oauth.TokenResponse

// requestLog is what a request's log line says; tokens only by hash.
type requestLog struct {
	grantType, subjectType, method, requester, subjectToken, dialog string
	// subjectSHA256 is Hash(subjectToken) when the subject handler already knew it
	// (a cached token); else it is computed for the log line, only if one is written.
	subjectSHA256 string
}

// subjectHash is the subject token's hash for the log line ("" without one).
func (rl *requestLog) subjectHash() string {
	if rl.subjectSHA256 == "" && rl.subjectToken != "" {
		rl.subjectSHA256 = txntoken.Hash(rl.subjectToken)
	}
	return rl.subjectSHA256
}

func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var rl requestLog
	rid := reqid.Set(w, r)
	resp, claims, kid, err := s.token(w, r, &rl)
	s.metrics.duration.Observe(time.Since(start).Seconds())
	grant := metricGrant(rl.grantType, rl.subjectType)
	if err != nil {
		code := errcode.CodeOf(err)
		if code == errcode.Unmapped {
			// A failure without a code is ours, not the caller's; its text stays in
			// the log and out of the response.
			err = errcode.Wrap(errcode.Internal, err, "internal error")
			code = errcode.Internal
		}
		oauth, _ := OAuthError(err)
		s.metrics.refused.WithLabelValues(grant, metricType(rl.subjectType), oauth, string(code)).Inc()
		level := slog.LevelInfo
		if errcode.KindOf(err) == errcode.Incomplete || code == errcode.Internal {
			level = slog.LevelError
		}
		s.log.Log(r.Context(), level, "txn token refused", "request_id", rid, "dlg", rl.dialog, "error", oauth, "code", string(code),
			"kind", errcode.KindOf(err).String(), "grant", grant, "subject_token_type", rl.subjectType,
			"subject_token_sha256", rl.subjectHash(), "method", rl.method, "requester", rl.requester,
			"remote", r.RemoteAddr, "detail", err.Error())
		writeError(w, r, err)
		return
	}
	s.metrics.issued.WithLabelValues(grant, metricType(rl.subjectType), rl.method).Inc()
	// This line is written for every token issued: typed attributes, and the hashes
	// computed only when the line is.
	if ctx := r.Context(); s.log.Enabled(ctx, slog.LevelInfo) {
		s.log.LogAttrs(ctx, slog.LevelInfo, "txn token issued", slog.String("request_id", rid), slog.String("dlg", claims.Dialog()),
			slog.String("grant", grant), slog.String("subject_token_type", rl.subjectType),
			slog.String("subject_token_sha256", rl.subjectHash()), slog.String("method", rl.method), slog.String("requester", rl.requester),
			slog.String("aud", claims.Aud[0]), slog.String("txn", claims.Txn), slog.String("txn_token_sha256", txntoken.Hash(resp.AccessToken)),
			slog.String("kid", kid), slog.Int64("exp", int64(*claims.Exp)), slog.Int("call_chain", max(1, len(claims.ReqChain))),
			slog.String("remote", r.RemoteAddr))
	}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(appendTokenResponse(make([]byte, 0, len(resp.AccessToken)+192), &resp))
}

// appendTokenResponse writes the response as encoding/json would (TestTT1_6_Response decodes
// it), without reflection: it is written for every token issued.
func appendTokenResponse(b []byte, t *TokenResponse) []byte {
	b = append(b, `{"access_token":`...)
	b = appendJSONString(b, t.AccessToken)
	b = append(b, `,"issued_token_type":`...)
	b = appendJSONString(b, t.IssuedTokenType)
	b = append(b, `,"token_type":`...)
	b = appendJSONString(b, t.TokenType)
	b = append(b, `,"expires_in":`...)
	b = strconv.AppendInt(b, t.ExpiresIn, 10)
	b = append(b, `,"scope":`...)
	b = appendJSONString(b, t.Scope)
	return append(b, "}\n"...)
}

// token runs one token request through its steps, in an order chosen so that cheap,
// stateless checks come before any signature verification, and the replay store is
// touched only by an authenticator whose signature verified:
//
//  1. form, sizes, REQUIRED parameters, grant and requested token types (oauth.md 1.3);
//  2. no Txn-Token as a credential; client authentication (1.9);
//  3. policy: the workload, the audience (1.5 step 1, 1.11 invalid_target);
//  4. the subject token type and the subject token (1.4, 1.5 steps 2-3);
//  5. scope, context, lifetime; replacement rules (1.5 steps 4-10, 1.8);
//  6. claims and signature (1.7).
func (s *Server) token(w http.ResponseWriter, r *http.Request, rl *requestLog) (TokenResponse, *txntoken.Claims, string, error) {
	ctx := r.Context()
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" && !isFormType(ct) {
		return TokenResponse{}, nil, "", at(stageRequest, errcode.New(errcode.InvalidRequest, "Content-Type must be application/x-www-form-urlencoded"))
	}
	body, err := readBody(w, r, s.cfg.MaxBodySize)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return TokenResponse{}, nil, "", at(stageRequest, errcode.New(errcode.BodyTooLarge, "body over %d octets", s.cfg.MaxBodySize))
		}
		return TokenResponse{}, nil, "", at(stageRequest, errcode.Wrap(errcode.InvalidRequest, err, "reading the body"))
	}
	// The authenticators read the body again (Content-Digest), so it is put back.
	br := new(bodyReader)
	br.Reset(body)
	r.Body = br
	r.ContentLength = int64(len(body))
	// The body is read-only from here on (the authenticators get a reader over it), so
	// the request is parsed from a string view of it rather than a copy.
	tr, err := parseTokenRequest(unsafe.String(unsafe.SliceData(body), len(body)))
	if err != nil {
		return TokenResponse{}, nil, "", at(stageRequest, err)
	}
	rl.grantType, rl.subjectType, rl.dialog = tr.GrantType, tr.SubjectTokenType, tr.Dialog()
	rl.subjectToken = tr.SubjectToken
	if err := tr.CheckRequired(); err != nil {
		return TokenResponse{}, nil, "", at(stageRequest, err)
	}

	var auth Authenticator
	for _, a := range s.cfg.Authenticators {
		if a.Present(r, tr) {
			auth = a
			break
		}
	}
	// A Txn-Token offered as a credential is named as such (oauth.md 1.9 item 4). It can
	// never pass an authenticator (each requires its own typ), so the check only runs
	// when authentication did not succeed, and costs nothing on the path that issues.
	txnAsCredential := func() error {
		return at(stageClient, errcode.New(errcode.TxnTokenNotCredential, "a Txn-Token never authenticates a workload; authenticate with a WIT and a proof, mTLS or private_key_jwt"))
	}
	if auth == nil {
		if presentedTxnToken(r, tr, false) {
			return TokenResponse{}, nil, "", txnAsCredential()
		}
		return TokenResponse{}, nil, "", at(stageClient, errcode.New(errcode.Unauthenticated, "no client authentication this TTS accepts"))
	}
	rl.method = auth.Name()
	req, err := auth.Authenticate(ctx, r, tr)
	if err != nil {
		if presentedTxnToken(r, tr, true) {
			return TokenResponse{}, nil, "", txnAsCredential()
		}
		return TokenResponse{}, nil, "", at(stageClient, err)
	}
	rl.requester = req.idString()

	rule, err := s.cfg.Policy.rule(rl.requester)
	if err != nil {
		return TokenResponse{}, nil, "", at(stagePolicy, err)
	}
	if !slices.Contains(s.cfg.TrustDomains, tr.Audience) {
		return TokenResponse{}, nil, "", at(stageRequest, errcode.New(errcode.AudienceNotServed, "audience %q is not a trust domain this TTS serves", truncate(tr.Audience)))
	}
	if !rule.mayAudience(tr.Audience, req.ID) {
		return TokenResponse{}, nil, "", at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "%s may not request Txn-Tokens for %s", req.ID, tr.Audience))
	}

	var h SubjectTokenHandler
	switch tr.SubjectTokenType {
	case TokenTypeRefreshToken:
		return TokenResponse{}, nil, "", at(stageSubject, errcode.New(errcode.UnsupportedTokenType, "a refresh token is never a subject token (TT section 13.3)"))
	case TokenTypeTxnToken:
		h = s.replace
	default:
		h = s.handlers[tr.SubjectTokenType]
	}
	if h == nil {
		return TokenResponse{}, nil, "", at(stageSubject, errcode.New(errcode.UnsupportedTokenType, "subject_token_type %q is not accepted", truncate(tr.SubjectTokenType)))
	}
	if !rule.mayType(tr.SubjectTokenType) {
		return TokenResponse{}, nil, "", at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "%s may not present %s subject tokens", req.ID, tr.SubjectTokenType))
	}
	subj, err := h.Validate(ctx, tr.SubjectToken, req)
	if err != nil {
		return TokenResponse{}, nil, "", at(stageSubject, err)
	}
	rl.subjectSHA256 = subj.hash

	now := s.cfg.Now()
	var claims *txntoken.Claims
	if subj.Input != nil {
		claims, err = s.replacement(tr, req, rule, subj, now)
	} else {
		claims, err = s.first(tr, req, rule, subj, now)
	}
	if err != nil {
		return TokenResponse{}, nil, "", err
	}
	// One key for the whole issuance, so the log names the key that really signed
	// even if a rotation activates another meanwhile.
	key := s.cfg.Keys.Active()
	tok, err := signClaims(key, claims)
	if err != nil {
		return TokenResponse{}, nil, "", at(stageIssue, errcode.Wrap(errcode.Internal, err, "signing"))
	}
	return TokenResponse{
		AccessToken: tok, IssuedTokenType: TokenTypeTxnToken, TokenType: "N_A",
		ExpiresIn: int64(*claims.Exp) - now.Unix(), Scope: claims.Scope,
	}, claims, key.KID(), nil
}

// bodyReader is the body put back for the authenticators: a reader over the octets
// already read, whose Close does nothing (io.NopCloser of a bytes.Reader, in one
// allocation).
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

func isFormType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// readBody reads the bounded body, in one allocation when Content-Length is given.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, max)
	if n := r.ContentLength; n > 0 && n <= max {
		b := make([]byte, n)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		// Nothing may follow the declared length.
		var one [1]byte
		if m, _ := rd.Read(one[:]); m != 0 {
			return nil, errcode.New(errcode.InvalidRequest, "body longer than Content-Length")
		}
		return b, nil
	}
	return io.ReadAll(rd)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// ringKeys lets a Ring's published keys serve as a KeySet (for replacement).
type ringKeys struct{ r *keys.Ring }

func (k ringKeys) LookupKey(ctx context.Context, kid string) (*keys.PublicKey, error) {
	if a := k.r.Active(); a != nil && kid != "" && a.KID() == kid {
		return a.Public(), nil
	}
	return k.r.KeySet().LookupKey(ctx, kid)
}
