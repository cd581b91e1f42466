package witissuerservice

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/workloadapi"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// Program is the WIT issuer for the service runner (cmd/internal/kit): it reads the
// configuration, checks it, and builds the server; the runner serves and stops it.
var Program = kit.Program[Config]{
	Name: "wit-issuer", Config: configSpec, Build: build,
	Check: func(cfg *Config) error { _, err := validate(cfg); return err },
}

// Defaults for options the configuration leaves out.
const (
	// workloadAPIWait bounds how long the issuer waits at start for the Workload API's
	// first X.509-SVID: without it there is nothing to serve TLS with.
	workloadAPIWait       = 30 * time.Second
	defaultListen         = "127.0.0.1:8080"
	defaultReloadInterval = 10 * time.Second
	// maxHeaderBytes is tighter than the services' default: no request to the issuer
	// carries more than a client certificate's worth of headers.
	maxHeaderBytes = 32 << 10
)

func routeSummary(rs []RouteConfig) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path+"="+strings.Join(r.Methods, ","))
	}
	return out
}

func applyDefaults(cfg *Config) {
	cfg.SetDefaults(defaultListen, oauth.DefaultSkew)
	if cfg.ReloadInterval <= 0 {
		cfg.ReloadInterval = defaultReloadInterval
	}
	cfg.Store.SetDefaults()
	if cfg.Policy.MaxLifetime <= 0 {
		cfg.Policy.MaxLifetime = witissuer.DefaultMaxLifetime
	}
}

// validate applies the defaults and makes the checks that need no listener, file, key
// or store; it returns the authentication methods the routes use.
func validate(cfg *Config) (used map[string]bool, err error) {
	applyDefaults(cfg)
	if err := cfg.Base.Check(); err != nil {
		return nil, err
	}
	if len(cfg.Routes) == 0 {
		return nil, fmt.Errorf("routes: at least one is required")
	}
	if cfg.TLS.WorkloadAPISocket != "" {
		if cfg.TLS.CertFile != "" || cfg.TLS.KeyFile != "" {
			return nil, fmt.Errorf("tls: workload_api_socket excludes cert_file and key_file")
		}
		if err := workloadapi.ValidateAddress(cfg.TLS.WorkloadAPISocket); err != nil {
			return nil, fmt.Errorf("tls.workload_api_socket: %w", err)
		}
	}
	if err := cfg.TLS.Check(); err != nil {
		return nil, err
	}
	used = map[string]bool{}
	for _, r := range cfg.Routes {
		for _, m := range r.Methods {
			used[m] = true
		}
	}
	if used[witissuer.MethodX509SVID] && cfg.TLS.CertFile == "" && cfg.TLS.WorkloadAPISocket == "" {
		return nil, fmt.Errorf("the x509svid method needs TLS (tls.cert_file and key_file, or workload_api_socket): client certificates only exist in TLS")
	}
	if used[witissuer.MethodDev] {
		if cfg.Auth.Dev == nil {
			return nil, fmt.Errorf("routes name the dev method but auth.dev is not configured")
		}
		// Checked before listening: an unauthenticated issuer must not even bind to a
		// reachable address by mistake.
		if !kit.IsLoopback(cfg.Listen) && !cfg.Auth.Dev.AllowNonLoopback {
			return nil, fmt.Errorf("the dev method authenticates nobody: listen must be a loopback address unless auth.dev.allow_non_loopback is true")
		}
	}
	if err := cfg.Store.Check(); err != nil {
		return nil, err
	}
	if err := cfg.Keys.CheckShared(cfg.Store, cfg.Keys.RotationStep()); err != nil {
		return nil, err
	}
	return used, nil
}

// build turns the configuration into a listener and a server; background loops (bundle
// and certificate reloads, key rotation) run until ctx ends.
func build(ctx context.Context, cfg *Config, logger *slog.Logger) (_ *kit.Server, err error) {
	used, err := validate(cfg)
	if err != nil {
		return nil, err
	}
	s := &kit.Server{ShutdownTimeout: cfg.ShutdownTimeout}
	defer s.CloseOnError(&err)
	if err := listen(ctx, s, cfg, logger); err != nil {
		return nil, err
	}
	issuer := firstNonEmpty(cfg.Issuer, s.URL())

	st, err := kit.OpenStoreOn(s, cfg.Store, logger)
	if err != nil {
		return nil, err
	}
	replay := st.Replay
	ks, err := kit.OpenKeys(ctx, cfg.Keys, st, keysSpec(cfg.Policy.MaxLifetime+cfg.Skew, time.Now), logger)
	if err != nil {
		return nil, err
	}
	s.OnClose(ks.Close)
	rot, keysFrom := ks.Rotator, ks.From
	ready := append(st.ReadyChecks(), ks.Ready...)

	methods, err := buildMethods(ctx, cfg, issuer, replay, used, logger)
	if err != nil {
		return nil, err
	}
	var routes []witissuer.Route
	for _, r := range cfg.Routes {
		rt := witissuer.Route{Path: r.Path}
		for _, m := range r.Methods {
			rt.Methods = append(rt.Methods, methods[m])
		}
		routes = append(routes, rt)
	}
	var rules []witissuer.Rule
	for _, r := range cfg.Policy.Rules {
		rules = append(rules, witissuer.Rule{FromPrefix: r.FromPrefix, ToPrefix: r.ToPrefix})
	}
	issuedLevel, err := cfg.Log.IssuedSlogLevel()
	if err != nil {
		return nil, err
	}
	wi, err := witissuer.New(witissuer.Config{
		Issuer: issuer, PublicURL: firstNonEmpty(cfg.PublicURL, s.URL()), Keys: rot, Replay: replay,
		Policy: witissuer.Policy{TrustDomains: cfg.TrustDomains, AllowedAlgs: cfg.Policy.AllowedAlgs,
			MaxLifetime: cfg.Policy.MaxLifetime, DefaultLifetime: cfg.Policy.DefaultLifetime, Rules: rules},
		Routes: routes, Registry: service.NewRegistry(ks.Metrics...), Logger: logger, ProofWindow: cfg.ProofWindow, Skew: cfg.Skew,
		ReadyChecks: ready, IssuedLogLevel: issuedLevel,
	})
	if err != nil {
		return nil, err
	}
	spanRoutes := []string{witissuer.PathWIT, witissuer.PathJWKS, witissuer.PathMetadata}
	for _, r := range cfg.Routes {
		spanRoutes = append(spanRoutes, r.Path)
	}
	if err := s.Handle(wi.Handler(), cfg.Tracing, "dialogtrust-wit-issuer", logger, spanRoutes...); err != nil {
		return nil, err
	}
	s.HTTP.MaxHeaderBytes = maxHeaderBytes
	s.Issuer = issuer
	s.StartAttrs = []any{"trust_domains", cfg.TrustDomains, "routes", routeSummary(cfg.Routes), "keys", keysFrom,
		"kid", rot.Ring().Active().KID(), "store", cfg.Store.Type, "tls", s.TLS()}
	s.Listening = "(issuer " + issuer + ")"
	if used[witissuer.MethodDev] {
		s.Development = &kit.Development{
			Warning: "DEVELOPMENT MODE: the dev method authenticates NOBODY. Any process that can reach " + s.URL() +
				" can obtain a WIT for any listed identifier. Never run this configuration in production.",
			Banner: []string{"wit-issuer: DEVELOPMENT MODE. Workloads are NOT authenticated.",
				"Use a configuration file with x509svid or assertion for anything real."},
		}
	}
	return s, nil
}

// listen opens the listener, with TLS when the configuration has a certificate: from
// the SPIFFE Workload API, or from files reloaded when they change.
func listen(ctx context.Context, s *kit.Server, cfg *Config, logger *slog.Logger) error {
	if err := s.Listen(cfg.Listen); err != nil {
		return err
	}
	switch {
	case cfg.TLS.WorkloadAPISocket != "":
		// Without an SVID there is nothing to serve TLS with: wait for the first one.
		svids := kit.OpenWorkloadAPI(ctx, cfg.TLS.WorkloadAPISocket, "serving SVID", logger)
		if err := svids.Wait(ctx, workloadAPIWait); err != nil {
			svids.Close()
			return fmt.Errorf("tls.workload_api_socket %s: %w", cfg.TLS.WorkloadAPISocket, err)
		}
		s.OnClose(svids.Close)
		s.UseTLS(witissuer.ServerTLSConfig(tlsconfig.GetCertificate(svids)))
	case cfg.TLS.CertFile != "":
		fc, err := witissuer.LoadFileCertificate(cfg.TLS.CertFile, cfg.TLS.KeyFile)
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		go watch(ctx, cfg.ReloadInterval, func() {
			if changed, err := fc.ReloadIfChanged(); err != nil {
				logger.Error("serving certificate reload failed; the previous one stays in service", "error", err.Error())
			} else if changed {
				logger.Info("serving certificate reloaded")
			}
		})
		s.UseTLS(witissuer.ServerTLSConfig(fc.GetCertificate))
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// buildMethods builds each configured method that a route uses.
func buildMethods(ctx context.Context, cfg *Config, issuer string, replay store.Replay, used map[string]bool, logger *slog.Logger) (map[string]witissuer.Authenticator, error) {
	out := map[string]witissuer.Authenticator{}
	for m := range used {
		switch m {
		case witissuer.MethodX509SVID:
			if cfg.Auth.X509SVID == nil || len(cfg.Auth.X509SVID.Bundles) == 0 {
				return nil, fmt.Errorf("routes name x509svid but auth.x509svid.bundles is empty")
			}
			var files []witissuer.BundleFile
			for _, b := range cfg.Auth.X509SVID.Bundles {
				files = append(files, witissuer.BundleFile{TrustDomain: b.TrustDomain, Path: b.File})
			}
			bundles, err := witissuer.LoadFileBundles(files)
			if err != nil {
				return nil, fmt.Errorf("auth.x509svid: %w", err)
			}
			go bundles.Watch(ctx, kit.Ticker(ctx, cfg.ReloadInterval), func(changed bool, err error) {
				if err != nil {
					logger.Error("trust bundle reload failed; the previous bundles stay in service", "error", err.Error())
				} else if changed {
					logger.Info("trust bundles reloaded")
				}
			})
			out[m] = witissuer.NewX509SVID(bundles, nil)
		case witissuer.MethodAssertion:
			if cfg.Auth.Assertion == nil {
				return nil, fmt.Errorf("routes name assertion but auth.assertion is not configured")
			}
			a, err := buildAssertion(cfg, issuer, replay)
			if err != nil {
				return nil, err
			}
			out[m] = a
		case witissuer.MethodDev:
			d, err := buildDev(cfg.Auth)
			if err != nil {
				return nil, err
			}
			out[m] = d
		default:
			return nil, fmt.Errorf("routes name unknown method %q (x509svid, assertion, dev)", m)
		}
	}
	return out, nil
}

func buildAssertion(cfg *Config, issuer string, replay store.Replay) (*witissuer.Assertion, error) {
	var ws []witissuer.RegisteredWorkload
	for _, w := range cfg.Auth.Assertion.Workloads {
		id, err := identifier.Parse(w.ID)
		if err != nil {
			return nil, fmt.Errorf("auth.assertion workload %q: %w", w.ID, err)
		}
		var raw []byte
		switch {
		case w.JWK != nil && w.JWKFile != "":
			return nil, fmt.Errorf("auth.assertion workload %s: jwk and jwk_file exclude each other", w.ID)
		case w.JWK != nil:
			if raw, err = jsonMarshal(w.JWK); err != nil {
				return nil, err
			}
		case w.JWKFile != "":
			if raw, err = os.ReadFile(w.JWKFile); err != nil {
				return nil, fmt.Errorf("auth.assertion workload %s: %w", w.ID, err)
			}
		default:
			return nil, fmt.Errorf("auth.assertion workload %s: a jwk or jwk_file is required", w.ID)
		}
		k, err := keys.ParsePublicJWK(raw)
		if err != nil {
			return nil, fmt.Errorf("auth.assertion workload %s: %w", w.ID, err)
		}
		ws = append(ws, witissuer.RegisteredWorkload{ID: id, Keys: []*keys.PublicKey{k}})
	}
	return witissuer.NewAssertion(issuer, ws, replay, witissuer.AssertionOptions{Skew: cfg.Skew, MaxLifetime: cfg.Auth.Assertion.MaxLifetime})
}

// buildDev builds the dev method of auth.dev. A workload auth.assertion registers with
// its key is never issued through it (witissuer.DevOptions.Registered), whether or not a
// route names assertion: the operator wrote that it proves a key.
func buildDev(auth AuthConfig) (*witissuer.Dev, error) {
	dc := auth.Dev
	var registered []identifier.ID
	if auth.Assertion != nil {
		for _, w := range auth.Assertion.Workloads {
			id, err := identifier.Parse(w.ID)
			if err != nil {
				return nil, fmt.Errorf("auth.assertion workload %q: %w", w.ID, err)
			}
			registered = append(registered, id)
		}
	}
	ids := slices.Clone(dc.Workloads)
	prefixes := slices.Clone(dc.Prefixes)
	if dc.WorkloadsFile != "" {
		b, err := os.ReadFile(dc.WorkloadsFile)
		if err != nil {
			return nil, fmt.Errorf("auth.dev.workloads_file: %w", err)
		}
		var f DevWorkloadsFile
		if err := kit.ParseYAML(b, &f); err != nil {
			return nil, fmt.Errorf("auth.dev.workloads_file %s: %w", dc.WorkloadsFile, err)
		}
		ids = append(ids, f.Workloads...)
		prefixes = append(prefixes, f.Prefixes...)
	}
	var parsed []identifier.ID
	for _, s := range ids {
		id, err := identifier.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("auth.dev workload %q: %w", s, err)
		}
		parsed = append(parsed, id)
	}
	return witissuer.NewDev(parsed, prefixes, witissuer.DevOptions{Registered: registered})
}

// watch calls f every d until ctx ends.
func watch(ctx context.Context, d time.Duration, f func()) {
	tick := kit.Ticker(ctx, d)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			f()
		}
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
