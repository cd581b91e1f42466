package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/dialogtrust/dialogtrust/internal/cmdutil"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/spiffe/go-spiffe/v2/workloadapi"

	"github.com/dialogtrust/dialogtrust/internal/graceful"
	"github.com/dialogtrust/dialogtrust/internal/tracing"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "wit-issuer:", err)
		os.Exit(1)
	}
}

// Defaults for options the configuration leaves out.
const (
	defaultListen          = "127.0.0.1:8080"
	defaultShutdownTimeout = 10 * time.Second
	defaultReloadInterval  = 10 * time.Second
	rotationStepInterval   = 30 * time.Second
)

// run is the whole program: it returns when ctx ends (after a graceful shutdown) or
// when the server cannot start or fails. ready, if set, hears the base URL once the
// listener is up (tests use it).
func run(ctx context.Context, args, env []string, stdout, stderr io.Writer, ready func(url string)) error {
	args, checkOnly := cmdutil.CheckConfigFlag(args)
	cfg, src, err := loadConfig(args, env, stderr)
	if err != nil {
		return err
	}
	logger, err := newLogger(cfg.Log.Level, stderr)
	if err != nil {
		return err
	}
	if checkOnly {
		// Deployment kits (deploy/) check their configuration files with this before
		// shipping them; it opens no listener, file, key or store.
		if _, err := validate(cfg); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "wit-issuer: configuration ok")
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a, err := build(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer a.close()

	from := "embedded development default"
	if !src.embedded {
		from = src.file
	}
	logger.Info("wit-issuer started", "url", a.url, "issuer", a.issuer, "config", from,
		"trust_domains", cfg.TrustDomains, "routes", routeSummary(cfg.Routes), "keys", a.keysFrom,
		"kid", a.rot.Ring().Active().KID(), "store", cfg.Store.Type, "tls", a.tls)
	if a.dev {
		logger.Warn("DEVELOPMENT MODE: the dev method authenticates NOBODY. Any process that can reach " + a.url +
			" can obtain a WIT for any listed identifier. Never run this configuration in production.")
		banner(stderr, "wit-issuer: DEVELOPMENT MODE. Workloads are NOT authenticated.",
			"Use a configuration file with x509svid or assertion for anything real.")
	}
	fmt.Fprintf(stdout, "wit-issuer listening on %s (issuer %s)\n", a.url, a.issuer)
	if ready != nil {
		ready(a.url)
	}

	errc := make(chan error, 1)
	go func() { errc <- a.srv.Serve(a.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, scancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer scancel()
	// Requests already sent are answered first (internal/graceful); then Shutdown.
	a.drain.Drain(sctx, graceful.Duration(cfg.ShutdownTimeout))
	if err := a.srv.Shutdown(sctx); err != nil {
		logger.Error("shutdown", "error", err.Error())
		_ = a.srv.Close()
		return err
	}
	logger.Info("stopped")
	return nil
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if level == "" {
		level = "info"
	}
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})), nil
}

func routeSummary(rs []RouteConfig) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path+"="+strings.Join(r.Methods, ","))
	}
	return out
}

// app is a built, not yet serving, issuer.
type app struct {
	srv      *http.Server
	ln       net.Listener
	url      string
	issuer   string
	rot      *witissuer.Rotator
	keysFrom string
	tls      bool
	dev      bool
	closers  []func()
	drain    graceful.Drainer
}

func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

func applyDefaults(cfg *Config) {
	if cfg.Listen == "" {
		cfg.Listen = defaultListen
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = defaultShutdownTimeout
	}
	if cfg.ReloadInterval <= 0 {
		cfg.ReloadInterval = defaultReloadInterval
	}
	if cfg.Store.Type == "" {
		cfg.Store.Type = "memory"
	}
	if cfg.Skew <= 0 {
		cfg.Skew = witissuer.DefaultSkew
	}
	if cfg.Policy.MaxLifetime <= 0 {
		cfg.Policy.MaxLifetime = witissuer.DefaultMaxLifetime
	}
}

// validate applies the defaults and makes the checks that need no listener, file, key
// or store; it returns the authentication methods the routes use.
func validate(cfg *Config) (used map[string]bool, err error) {
	applyDefaults(cfg)
	if len(cfg.TrustDomains) == 0 {
		return nil, fmt.Errorf("trust_domains: at least one is required")
	}
	if err := cfg.Tracing.Validate(); err != nil {
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
	if (cfg.TLS.CertFile == "") != (cfg.TLS.KeyFile == "") {
		return nil, fmt.Errorf("tls: cert_file and key_file go together")
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
		if !isLoopback(cfg.Listen) && !cfg.Auth.Dev.AllowNonLoopback {
			return nil, fmt.Errorf("the dev method authenticates nobody: listen must be a loopback address unless auth.dev.allow_non_loopback is true")
		}
	}
	if err := cfg.Store.Check(); err != nil {
		return nil, err
	}
	return used, nil
}

// build turns the configuration into a listener and a server; background loops (bundle
// and certificate reloads, key rotation) run until ctx ends.
func build(ctx context.Context, cfg *Config, logger *slog.Logger) (_ *app, err error) {
	a := &app{}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	used, err := validate(cfg)
	if err != nil {
		return nil, err
	}
	a.tls = cfg.TLS.CertFile != "" || cfg.TLS.WorkloadAPISocket != ""
	a.dev = used[witissuer.MethodDev]
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() { _ = ln.Close() })
	scheme := "http"
	if cfg.TLS.WorkloadAPISocket != "" {
		getCert, closeSource, err := openWorkloadAPI(ctx, cfg.TLS.WorkloadAPISocket, logger)
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, closeSource)
		ln = tls.NewListener(ln, witissuer.ServerTLSConfig(getCert))
		scheme = "https"
	} else if a.tls {
		fc, err := witissuer.LoadFileCertificate(cfg.TLS.CertFile, cfg.TLS.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
		go watch(ctx, cfg.ReloadInterval, func() {
			if changed, err := fc.ReloadIfChanged(); err != nil {
				logger.Error("serving certificate reload failed; the previous one stays in service", "error", err.Error())
			} else if changed {
				logger.Info("serving certificate reloaded")
			}
		})
		ln = tls.NewListener(ln, witissuer.ServerTLSConfig(fc.GetCertificate))
		scheme = "https"
	}
	a.ln = ln
	a.url = scheme + "://" + ln.Addr().String()
	a.issuer = cfg.Issuer
	if a.issuer == "" {
		a.issuer = a.url
	}

	replay, ready, closeStore, err := openStore(cfg.Store, logger)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, closeStore)

	a.rot, a.keysFrom, err = openKeys(cfg.Keys, cfg.Policy.MaxLifetime+cfg.Skew, time.Now)
	if err != nil {
		return nil, err
	}
	go a.rot.Run(ctx, ticker(ctx, rotationStepInterval), func(err error) {
		logger.Error("key rotation step failed", "error", err.Error())
	})

	methods, err := buildMethods(ctx, cfg, a.issuer, replay, used, logger)
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
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s, err := witissuer.New(witissuer.Config{
		Issuer: a.issuer, PublicURL: firstNonEmpty(cfg.PublicURL, a.url), Keys: a.rot, Replay: replay,
		Policy: witissuer.Policy{TrustDomains: cfg.TrustDomains, AllowedAlgs: cfg.Policy.AllowedAlgs,
			MaxLifetime: cfg.Policy.MaxLifetime, DefaultLifetime: cfg.Policy.DefaultLifetime, Rules: rules},
		Routes: routes, Registry: reg, Logger: logger, ProofWindow: cfg.ProofWindow, Skew: cfg.Skew,
		ReadyChecks: ready,
	})
	if err != nil {
		return nil, err
	}
	tracer, err := tracing.Start(cfg.Tracing, "dialogtrust-wit-issuer")
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() { tracer.ShutdownLogged(logger) })
	if tracer.Enabled() {
		logger.Info("tracing on", "otlp_endpoint", cfg.Tracing.OTLPEndpoint)
	}
	spanRoutes := []string{witissuer.PathWIT, witissuer.PathJWKS, witissuer.PathMetadata}
	for _, r := range cfg.Routes {
		spanRoutes = append(spanRoutes, r.Path)
	}
	a.srv = &http.Server{
		Handler:           a.drain.Handler(tracer.Handler(s.Handler(), spanRoutes...)),
		ConnState:         a.drain.ConnState,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return a, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func openStore(sc StoreConfig, logger *slog.Logger) (store.Replay, []witissuer.ReadyCheck, func(), error) {
	replay, ready, closeFn, err := cmdutil.OpenStore(sc, logger)
	if err != nil || ready == nil {
		return replay, nil, closeFn, err
	}
	return replay, []witissuer.ReadyCheck{ready}, closeFn, nil
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
			go bundles.Watch(ctx, ticker(ctx, cfg.ReloadInterval), func(changed bool, err error) {
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
			d, err := buildDev(cfg.Auth.Dev)
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

func buildDev(dc *DevConfig) (*witissuer.Dev, error) {
	ids := slices.Clone(dc.Workloads)
	prefixes := slices.Clone(dc.Prefixes)
	if dc.WorkloadsFile != "" {
		b, err := os.ReadFile(dc.WorkloadsFile)
		if err != nil {
			return nil, fmt.Errorf("auth.dev.workloads_file: %w", err)
		}
		var f DevWorkloadsFile
		if err := parseYAML(b, &f); err != nil {
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
	return witissuer.NewDev(parsed, prefixes)
}

// ticker delivers ticks every d until ctx ends.
func ticker(ctx context.Context, d time.Duration) <-chan time.Time {
	t := time.NewTicker(d)
	go func() {
		<-ctx.Done()
		t.Stop()
	}()
	return t.C
}

func watch(ctx context.Context, d time.Duration, f func()) {
	tick := ticker(ctx, d)
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

// banner frames lines in asterisks on w, so the development warning is not missed in a
// terminal full of JSON.
func banner(w io.Writer, lines ...string) {
	width := 0
	for _, l := range lines {
		width = max(width, len(l))
	}
	rule := strings.Repeat("*", width+6)
	fmt.Fprintln(w, rule)
	for _, l := range lines {
		fmt.Fprintf(w, "*  %-*s  *\n", width, l)
	}
	fmt.Fprintln(w, rule)
}

// isLoopback accepts only a loopback IP literal: a name such as "localhost" is resolved
// at listen time, and what it resolves to is not ours to vouch for.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
