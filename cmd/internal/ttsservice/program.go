package ttsservice

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/condition"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Program is the TTS for the service runner (cmd/internal/kit): it reads the
// configuration, checks it, and builds the server; the runner serves and stops it.
var Program = kit.Program[Config]{Name: "tts", Config: configSpec, Check: validate, Build: build}

// Defaults for options the configuration leaves out.
const (
	defaultListen = "127.0.0.1:8081"
	witCacheSize  = 10000
	// witCacheMaxAge bounds how long a cached WIT keeps vouching after its issuer key
	// left the trust configuration.
	witCacheMaxAge = time.Minute
)

func witSources(cfg *Config) string {
	s := ""
	for i, w := range cfg.WITs {
		if i > 0 {
			s += ", "
		}
		s += w.TrustDomain + " (" + w.URL + w.File + ")"
	}
	return s
}

func applyDefaults(cfg *Config) {
	cfg.SetDefaults(defaultListen, oauth.DefaultSkew)
	cfg.Store.SetDefaults()
	if len(cfg.Auth.Methods) == 0 {
		cfg.Auth.Methods = []string{oauth.MethodHTTPSig, oauth.MethodWPT}
	}
}

// validate applies the defaults and makes the checks that need no listener, file, key
// or store.
func validate(cfg *Config) error {
	applyDefaults(cfg)
	if err := cfg.Base.Check(); err != nil {
		return err
	}
	if err := cfg.TLS.Check(); err != nil {
		return err
	}
	if cfg.Development && !kit.IsLoopback(cfg.Listen, "localhost") {
		return fmt.Errorf("development: listen must be a loopback address")
	}
	if !cfg.Development && cfg.Keys.SigningKeyFile == "" && cfg.Keys.DataDir == "" && cfg.Keys.Shared == nil && cfg.Keys.PKCS11 == nil {
		return fmt.Errorf("keys: signing_key_file or data_dir is required outside development mode")
	}
	if err := cfg.Store.Check(); err != nil {
		return err
	}
	if err := cfg.Keys.CheckShared(cfg.Store, cfg.Keys.RotationStep()); err != nil {
		return err
	}
	if err := checkChaining(cfg); err != nil {
		return err
	}
	if err := checkRevocations(cfg); err != nil {
		return err
	}
	for _, is := range cfg.SubjectTokens.JWTIssuers {
		if is.AllowUntyped && len(is.Audiences) == 0 {
			return fmt.Errorf("subject_tokens.jwt_issuers[%s]: allow_untyped needs audiences", is.Issuer)
		}
		if is.RSA != nil {
			if err := (keys.RSAPolicy{DefaultAlg: is.RSA.DefaultAlg}).Check(); err != nil {
				return fmt.Errorf("subject_tokens.jwt_issuers[%s].rsa: %w", is.Issuer, err)
			}
		}
	}
	if cfg.AuthZEN != nil {
		if err := cfg.AuthZEN.Check("authzen"); err != nil {
			return err
		}
	}
	if err := checkAudit(cfg); err != nil {
		return err
	}
	p, err := buildPolicy(cfg.Policy, cfg.file)
	if err != nil {
		return err
	}
	return p.Check()
}

// build turns the configuration into a listener and a server; key rotation runs until
// ctx ends.
func build(ctx context.Context, cfg *Config, logger *slog.Logger) (_ *kit.Server, err error) {
	if err := validate(cfg); err != nil {
		return nil, err
	}
	s := &kit.Server{ShutdownTimeout: cfg.ShutdownTimeout}
	defer s.CloseOnError(&err)
	if err := listen(s, cfg, logger); err != nil {
		return nil, err
	}
	issuer := cfg.Issuer
	if issuer == "" {
		issuer = s.URL()
	}

	st, err := kit.OpenStoreOn(s, cfg.Store, logger)
	if err != nil {
		return nil, err
	}
	replay := st.Replay
	cfg.opened = &opened{server: s, store: st}
	ks, err := kit.OpenKeys(ctx, cfg.Keys.KeysConfig, st, keysSpec(tts.MaxLifetime+cfg.Skew), logger)
	if err != nil {
		return nil, err
	}
	s.OnClose(ks.Close)
	rot, keysFrom := ks.Rotator, ks.From
	readyChecks := append(st.ReadyChecks(), ks.Ready...)

	auditor, err := openAudit(ctx, s, cfg, st, rot.Ring(), logger)
	if err != nil {
		return nil, err
	}
	handler, err := buildHandler(ctx, cfg, logger, issuer, rot.Ring(), replay, readyChecks, ks.Metrics, auditor)
	if err != nil {
		return nil, err
	}
	if err := s.Handle(handler, cfg.Tracing, "dialogtrust-tts", logger, tts.PathToken, tts.PathMetadata, tts.PathJWKS); err != nil {
		return nil, err
	}
	s.Issuer = issuer
	s.StartAttrs = []any{"trust_domains", cfg.TrustDomains, "methods", cfg.Auth.Methods, "keys", keysFrom,
		"kid", rot.Ring().Active().KID(), "store", cfg.Store.Type, "tls", s.TLS()}
	s.Listening = fmt.Sprintf("(issuer %s, trust domains %v)", issuer, cfg.TrustDomains)
	if cfg.Development {
		s.Development = &kit.Development{
			Warning: "DEVELOPMENT MODE: generated or file keys, " + cfg.Store.Type + " replay store, and trust in WITs from " +
				witSources(cfg) + ". A development wit-issuer authenticates nobody, so neither does this TTS. Never run this configuration in production.",
			Banner: []string{"tts: DEVELOPMENT MODE. Tokens are only as trustworthy as the development wit-issuer (which authenticates nobody).",
				"Signing key: " + keysFrom + ". Use a configuration file with TLS, a data_dir and real WIT trust for anything real."},
		}
	}
	return s, nil
}

// listen opens the listener, with TLS when the configuration has a certificate.
func listen(s *kit.Server, cfg *Config, logger *slog.Logger) error {
	if !cfg.Development && cfg.TLS.CertFile == "" {
		logger.Warn("no TLS: the token endpoint carries subject tokens and proofs in clear text (oauth.md 1.9 item 2)")
	}
	if err := s.Listen(cfg.Listen); err != nil {
		return err
	}
	if cfg.TLS.CertFile == "" {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	// Client certificates are requested, not verified by crypto/tls: the
	// tls_client_auth method verifies the chain on every request (resumed
	// sessions included), and the other methods need none.
	s.UseTLS(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert})
	return nil
}

// buildHandler builds the token endpoint and everything behind it: WIT trust, client
// authentication, subject token handlers, identity chaining, policy and metrics.
func buildHandler(ctx context.Context, cfg *Config, logger *slog.Logger, issuer string, ring *keys.Ring, replay store.Replay, readyChecks []tts.ReadyCheck, metrics []prometheus.Collector, auditor oauth.Auditor) (http.Handler, error) {
	trust := keys.NewTrust()
	for _, w := range cfg.WITs {
		ks, ready, err := keySource(ctx, cfg.JWKSRetry, "wits["+w.TrustDomain+"]", kit.JWKSSource{JWKS: w.JWKS})
		if err != nil {
			return nil, err
		}
		trust.AddTrustDomain(w.TrustDomain, ks)
		if ready != nil {
			readyChecks = append(readyChecks, ready)
		}
	}
	vopts := []wit.ValidatorOption{wit.WithCache(witCacheSize, witCacheMaxAge), wit.WithSkew(cfg.Skew)}
	if len(cfg.WITIssuers) > 0 {
		vopts = append(vopts, wit.WithIssuers(cfg.WITIssuers...))
	}
	wits := wit.NewValidator(trust, vopts...)
	tokenEndpoint := issuer + tts.PathToken
	auths, err := buildAuth(ctx, cfg, wits, replay, issuer, tokenEndpoint)
	if err != nil {
		return nil, err
	}
	chain, err := prepareChaining(ctx, cfg, issuer, tokenEndpoint, ring, auths, replay)
	if err != nil {
		return nil, err
	}
	handlers, handlerReady, err := buildSubjectHandlers(ctx, cfg, issuer, tokenEndpoint, chain.ownAccessTokens()...)
	if err != nil {
		return nil, err
	}
	readyChecks = append(readyChecks, handlerReady...)
	if chain != nil {
		readyChecks = append(readyChecks, chain.ready...)
	}
	policy, err := buildPolicy(cfg.Policy, cfg.file)
	if err != nil {
		return nil, err
	}
	reg := service.NewRegistry(append(metrics, jwksRefreshes)...)
	issuedLevel, err := cfg.Log.IssuedSlogLevel()
	if err != nil {
		return nil, err
	}
	tcfg := tts.Config{
		IssuedLogLevel: issuedLevel,
		Issuer:         issuer, TokenEndpoint: tokenEndpoint, TrustDomains: cfg.TrustDomains, Keys: ring,
		Authenticators: auths, SubjectHandlers: handlers, Replay: replay, Policy: policy,
		Registry: reg, Logger: logger, Skew: cfg.Skew, ReadyChecks: readyChecks, Auditor: auditor,
	}
	if tcfg.Decider, err = openDecider(cfg.AuthZEN); err != nil {
		return nil, err
	}
	if tcfg.Grants, err = chain.handlers(tcfg, cfg.Skew, logger); err != nil {
		return nil, err
	}
	if tcfg.Revocations, err = cfg.opened.revocations(cfg, wits, replay, logger); err != nil {
		return nil, err
	}
	s, err := tts.New(tcfg)
	if err != nil {
		return nil, err
	}
	return s.Handler(), nil
}

// keySource opens a JWKS URL (lazy: the TTS may start before the issuer it trusts, and
// until the keys arrive every check is "could not be completed"; its fetches counted in
// jwksRefreshes) or a JWKS file (kit.OpenJWKS); rsa, when set, opens the set to RSA keys
// (a subject-token issuer or chaining peer configured with an rsa section).
func keySource(ctx context.Context, retry time.Duration, what string, src kit.JWKSSource) (keys.KeySet, tts.ReadyCheck, error) {
	src.Remote = []keys.RemoteOption{jwksRefreshHook()}
	return kit.OpenJWKS(ctx, what, src, retry)
}

func buildAuth(ctx context.Context, cfg *Config, wits *wit.Validator, replay store.Replay, issuer, tokenEndpoint string) ([]oauth.Authenticator, error) {
	wimse := oauth.WIMSEAuthenticators(wits, replay, tokenEndpoint)
	var out []oauth.Authenticator
	seen := map[string]bool{}
	for _, m := range cfg.Auth.Methods {
		if seen[m] {
			return nil, fmt.Errorf("auth.methods: %s twice", m)
		}
		seen[m] = true
		switch m {
		case oauth.MethodHTTPSig, oauth.MethodWPT:
			a, err := oauth.ByName(wimse, m)
			if err != nil {
				return nil, err
			}
			out = append(out, a...)
		case oauth.MethodTLSClientAuth:
			if len(cfg.Auth.X509Bundles) == 0 {
				return nil, fmt.Errorf("auth.methods names tls_client_auth but auth.x509_bundles is empty")
			}
			if cfg.TLS.CertFile == "" {
				return nil, fmt.Errorf("tls_client_auth needs TLS (tls.cert_file, tls.key_file)")
			}
			var bundles []*x509bundle.Bundle
			for _, b := range cfg.Auth.X509Bundles {
				td, err := spiffeid.TrustDomainFromString(b.TrustDomain)
				if err != nil {
					return nil, fmt.Errorf("auth.x509_bundles %q: %w", b.TrustDomain, err)
				}
				bundle, err := x509bundle.Load(td, b.File)
				if err != nil {
					return nil, fmt.Errorf("auth.x509_bundles %q: %w", b.TrustDomain, err)
				}
				bundles = append(bundles, bundle)
			}
			out = append(out, oauth.NewTLSClientAuth(x509bundle.NewSet(bundles...), nil))
		case oauth.MethodPrivateKeyJWT:
			var clients []oauth.RegisteredClient
			for _, c := range cfg.Auth.Clients {
				id, err := identifier.Parse(c.ID)
				if err != nil {
					return nil, fmt.Errorf("auth.clients %q: %w", c.ID, err)
				}
				ks, _, err := keySource(ctx, cfg.JWKSRetry, "auth.clients["+c.ID+"]", kit.JWKSSource{JWKS: c.JWKS})
				if err != nil {
					return nil, err
				}
				clients = append(clients, oauth.RegisteredClient{ID: id, Keys: ks})
			}
			p, err := oauth.NewPrivateKeyJWT([]string{issuer, tokenEndpoint}, clients, replay, nil, cfg.Skew)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		default:
			return nil, fmt.Errorf("auth.methods: unknown method %q (wit_httpsig, wit_wpt, tls_client_auth, private_key_jwt)", m)
		}
	}
	return out, nil
}

// buildSubjectHandlers builds one handler per subject token type; own are further
// access token issuers (the access tokens of this binary's own AS B, when chaining
// redeems grants).
func buildSubjectHandlers(ctx context.Context, cfg *Config, issuer, tokenEndpoint string, own ...tts.JWTIssuer) ([]tts.SubjectTokenHandler, []tts.ReadyCheck, error) {
	var (
		out   []tts.SubjectTokenHandler
		ready []tts.ReadyCheck
	)
	hopts := tts.HandlerOptions{Skew: cfg.Skew}
	st := cfg.SubjectTokens
	if st.SelfSigned != nil && st.SelfSigned.Enabled {
		out = append(out, tts.NewSelfSignedHandler([]string{issuer, tokenEndpoint},
			tts.SelfSignedOptions{HandlerOptions: hopts, SubjectPrefix: st.SelfSigned.SubjectPrefix}))
	}
	if st.UnsignedJSON != nil && st.UnsignedJSON.Enabled {
		out = append(out, tts.NewUnsignedJSONHandler(st.UnsignedJSON.SubjectPrefix))
	}
	byType := map[string][]tts.JWTIssuer{}
	var order []string
	for _, is := range st.JWTIssuers {
		var rsa *keys.RSAPolicy
		if is.RSA != nil {
			rsa = &keys.RSAPolicy{DefaultAlg: is.RSA.DefaultAlg}
		}
		ks, r, err := keySource(ctx, cfg.JWKSRetry, "subject_tokens.jwt_issuers["+is.Issuer+"]", kit.JWKSSource{JWKS: is.JWKS, RSA: rsa})
		if err != nil {
			return nil, nil, err
		}
		if r != nil {
			ready = append(ready, r)
		}
		types := is.Types
		if len(types) == 0 {
			types = []string{"access_token"}
		}
		for _, t := range types {
			urn, err := tokenType(t)
			if err != nil {
				return nil, nil, fmt.Errorf("subject_tokens.jwt_issuers[%s]: %w", is.Issuer, err)
			}
			if _, ok := byType[urn]; !ok {
				order = append(order, urn)
			}
			byType[urn] = append(byType[urn], tts.JWTIssuer{Issuer: is.Issuer, Keys: ks, Typ: is.Typ, Audiences: is.Audiences,
				SubjectPrefix: is.SubjectPrefix, Scope: is.Scope, RSA: rsa != nil, AllowUntyped: is.AllowUntyped})
		}
	}
	if len(own) > 0 {
		if _, ok := byType[tts.TokenTypeAccessToken]; !ok {
			order = append(order, tts.TokenTypeAccessToken)
		}
		byType[tts.TokenTypeAccessToken] = append(byType[tts.TokenTypeAccessToken], own...)
	}
	for _, urn := range order {
		h, err := tts.NewJWTHandler(urn, byType[urn], hopts)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, h)
	}
	return out, ready, nil
}

// tokenType maps a short name (self_signed) or a URN to the URN.
func tokenType(s string) (string, error) {
	switch s {
	case "access_token", "id_token", "jwt", "self_signed", "unsigned_json", "txn_token", "refresh_token", "saml1", "saml2":
		return "urn:ietf:params:oauth:token-type:" + s, nil
	}
	if len(s) > len("urn:") && s[:4] == "urn:" {
		return s, nil
	}
	return "", fmt.Errorf("unknown token type %q", s)
}

// expr is a configured expression with where it was written.
func expr(x kit.Expr, file, field string) tts.Expr {
	return tts.Expr{Text: x.Text, Source: condition.Source{File: file, Line: x.Line, Column: x.Column, Field: field}}
}

// buildPolicy is the policy section as tts.Policy; file names the configuration file
// in the errors of its expressions.
func buildPolicy(pc PolicyConfig, file string) (tts.Policy, error) {
	p := tts.Policy{Lifetime: pc.Lifetime, BeyondSubjectExpiry: pc.BeyondSubjectExpiry, MaxLifetimeExtensions: pc.MaxLifetimeExtensions, MaxCallChain: pc.MaxCallChain}
	for i, r := range pc.Rules {
		at := fmt.Sprintf("policy.rules[%d].", i)
		rule := tts.Rule{Name: r.Name, Workload: r.Workload, Audiences: r.Audiences, Scopes: r.Scopes, SubjectScopes: r.SubjectScopes, Details: r.Details, Context: r.Context,
			When: expr(r.When, file, at+"when"), GrantScopes: expr(r.GrantScopes, file, at+"grant_scopes")}
		for name, x := range r.Tctx {
			if rule.Tctx == nil {
				rule.Tctx = map[string]tts.Expr{}
			}
			rule.Tctx[name] = expr(x, file, at+"tctx."+name)
		}
		for _, t := range r.SubjectTokenTypes {
			urn, err := tokenType(t)
			if err != nil {
				return p, fmt.Errorf("policy rule %s: %w", r.Workload, err)
			}
			rule.SubjectTokenTypes = append(rule.SubjectTokenTypes, urn)
		}
		p.Rules = append(p.Rules, rule)
	}
	if len(p.Rules) == 0 {
		return p, fmt.Errorf("policy.rules: at least one is required (no rule: no workload may request)")
	}
	return p, nil
}
