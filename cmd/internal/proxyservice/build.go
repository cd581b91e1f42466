package proxyservice

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// buildProxy opens the listeners and builds both sides.
func buildProxy(ctx context.Context, cfg *Config, logger *slog.Logger) (_ *kit.Server, err error) {
	if err := checkProxy(cfg); err != nil {
		return nil, err
	}
	s := &kit.Server{ShutdownTimeout: cfg.ShutdownTimeout}
	defer s.CloseOnError(&err)
	if err := s.Listen(cfg.Listen); err != nil {
		return nil, err
	}
	if err := openProxyKeys(s, cfg, logger); err != nil {
		return nil, err
	}
	self, _ := identifier.Parse(cfg.Workload.ID)
	var readyChecks []service.ReadyCheck
	retry := cfg.JWKSRetry
	if retry <= 0 {
		retry = 5 * time.Second
	}
	trust := keys.NewTrust()
	for _, t := range cfg.WITs {
		ks, ready, err := kit.OpenJWKS(ctx, "wits["+t.TrustDomain+"]", kit.JWKSSource{JWKS: t.JWKS}, retry)
		if err != nil {
			return nil, err
		}
		trust.AddTrustDomain(t.TrustDomain, ks)
		if ready != nil {
			readyChecks = append(readyChecks, ready)
		}
	}
	wits := wit.NewValidator(trust, wit.WithCache(10000, time.Minute), wit.WithSkew(cfg.Skew))
	var src wit.Source
	if cfg.Egress != nil || cfg.Ingress.SignResponses || cfg.Ingress.Boundary != nil {
		if api := cfg.Workload.WorkloadAPI; api != nil {
			addr, err := workloadAPIAddr(api)
			if err != nil {
				return nil, err
			}
			svids := kit.OpenWorkloadAPI(ctx, addr, "X.509-SVID", logger)
			s.OnClose(svids.Close)
			readyChecks = append(readyChecks, svids.Ready)
			if src, err = workloadAPIWITSource(cfg.Workload, svids); err != nil {
				return nil, err
			}
		} else if src, err = workloadSource(ctx, cfg.Workload); err != nil {
			return nil, err
		}
		readyChecks = append(readyChecks, func(ctx context.Context) error {
			_, err := src.Credential(ctx)
			return err
		})
	}
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dialogtrust_proxy_requests_total",
		Help: "Requests the proxy answered, by side and HTTP status."}, []string{"side", "status"})
	var urls []string
	if e := cfg.Egress; e != nil {
		h, err := buildEgress(cfg, self, src, wits, logger)
		if err != nil {
			return nil, err
		}
		var u string
		if path, unix, _ := kit.UnixPath(e.Listen); unix {
			mode, _ := egressSocketMode(e)
			ln, err := kit.ListenUnix(path, mode)
			if err != nil {
				return nil, fmt.Errorf("egress.listen: %w", err)
			}
			u = s.HandleMoreOn(ln, nil, counted(h, requests, "egress"), logger)
		} else if u, err = s.HandleMore(e.Listen, nil, counted(h, requests, "egress"), logger); err != nil {
			return nil, err
		}
		urls = append(urls, "egress "+u)
	}
	var replay store.Replay
	if in := cfg.Ingress; in != nil {
		h, rp, checks, err := buildIngress(ctx, cfg, s, src, wits, retry, logger)
		if err != nil {
			return nil, err
		}
		replay = rp
		readyChecks = append(readyChecks, checks...)
		var tlsCfg *tls.Config
		if in.TLS.CertFile != "" {
			pair, err := tls.LoadX509KeyPair(in.TLS.CertFile, in.TLS.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("ingress.tls: %w", err)
			}
			tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
		} else if !kit.IsLoopback(in.Listen, "localhost") {
			logger.Warn("ingress without TLS: Txn-Tokens and WITs travel in clear text (ingress.tls)")
		}
		u, err := s.HandleMore(in.Listen, tlsCfg, counted(h, requests, "ingress"), logger)
		if err != nil {
			return nil, err
		}
		urls = append(urls, "ingress "+u)
	}
	ops := chi.NewRouter()
	service.MountOps(ops, service.NewRegistry(requests), service.Readiness{
		SigningKey: func() bool { return true }, Store: replay, Checks: readyChecks, Logger: logger})
	if err := s.Handle(ops, cfg.Tracing, "dialogtrust-proxy", logger); err != nil {
		return nil, err
	}
	s.StartAttrs = []any{"workload", self.String(), "listeners", urls}
	s.Listening = "(" + strings.Join(urls, ", ") + ")"
	return s, nil
}

// workloadSource is the workload's refreshing WIT from its issuer.
func workloadSource(ctx context.Context, w ProxyWorkloadConfig) (wit.Source, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	if w.Auth == "x509svid" {
		var sid identifier.ID
		if w.ServerID != "" {
			var err error
			if sid, err = identifier.Parse(w.ServerID); err != nil {
				return nil, err
			}
		}
		tr, err := kit.WITIssuerTransport(w.SVIDCertFile, w.SVIDKeyFile, w.BundleFile, sid)
		if err != nil {
			return nil, err
		}
		hc.Transport = tr
	}
	c, _, err := witissuer.NewClient(ctx, hc, w.WITIssuer)
	if err != nil {
		return nil, fmt.Errorf("workload.wit_issuer: %w", err)
	}
	id, _ := identifier.Parse(w.ID)
	switch w.Auth {
	case "development":
		c.Subject = id.String()
	case "assertion":
		c.Assertion = witissuer.AssertionFunc(w.assertionKey, c, id, time.Minute)
	}
	return c.Source(), nil
}

func buildEgress(cfg *Config, self identifier.ID, src wit.Source, wits *wit.Validator, logger *slog.Logger) (http.Handler, error) {
	e := cfg.Egress
	ec := proxy.EgressConfig{Self: self, WIT: src, Responses: httpsig.NewVerifier(wits), StreamIdleTimeout: e.StreamIdleTimeout,
		UpstreamTimeout: upstreamTimeoutOf(e.UpstreamTimeout), Log: logger, AllowedHosts: e.AllowedHosts, AllowedOrigins: e.AllowedOrigins}
	if e.CAFile != "" {
		pem, err := os.ReadFile(e.CAFile)
		if err != nil {
			return nil, fmt.Errorf("egress.ca_file: %w", err)
		}
		ec.RootCAs = x509.NewCertPool()
		if !ec.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("egress.ca_file: no PEM certificate")
		}
	}
	var scopes []string
	if cfg.Handoff != nil {
		var err error
		if ec.HandoffKey, ec.HandoffTrust, err = loadHandoff(cfg.Handoff); err != nil {
			return nil, err
		}
	}
	for i, r := range e.Routes {
		m, _ := parseProof(r.Proof)
		rt := proxy.Route{Prefix: r.Prefix, Upstream: r.Upstream, AllowPlainHTTP: r.AllowPlainHTTP,
			TxnAudience: r.Audience, TxnScope: r.Scope, Recipient: r.Recipient, Proof: m, RequireSignedResponse: r.RequireSignedResponse, BindRequest: r.BindRequest,
			UpstreamTimeout: upstreamTimeoutOf(r.UpstreamTimeout), ResponseSigners: r.ResponseSigners}
		if b := r.Boundary; b != nil {
			grant := b.GrantEndpoint
			if grant == "" {
				grant = e.TTS.TokenEndpoint
			}
			rt.Boundary = &proxy.BoundaryRoute{GrantEndpoint: grant, PeerIssuer: b.PeerIssuer, PeerTokenEndpoint: b.PeerTokenEndpoint, PeerTrustDomain: b.PeerTrustDomain, Scope: b.Scope}
			if pc := b.PeerClient; pc != nil {
				secret, err := pc.secret()
				if err != nil {
					return nil, fmt.Errorf("egress.routes[%d].boundary.%w", i, err)
				}
				rt.Boundary.PeerClient = &proxy.PeerClient{ID: pc.ClientID, Secret: secret}
			}
		}
		if r.Delegate != "" {
			rt.Delegate, _ = identifier.Parse(r.Delegate)
			rt.Host, _ = parseHost(r.Host)
		}
		ec.Routes = append(ec.Routes, rt)
		for _, sc := range strings.Fields(r.Scope) {
			if !strings.Contains(" "+strings.Join(scopes, " ")+" ", " "+sc+" ") {
				scopes = append(scopes, sc)
			}
		}
	}
	if t := e.TTS; t != nil {
		// A Txn-Token per dialog: the requests of concurrent new dialogs go to the TTS
		// at once.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = proxy.MaxIdleConnsPerUpstream
		ec.TTS = &txntoken.Client{TokenEndpoint: t.TokenEndpoint, WITSource: src, Proof: proof.WPT, HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
		if t.SelfSignedSubject != "" {
			scope := t.SubjectScope
			if scope == "" {
				scope = strings.Join(scopes, " ")
			}
			ec.Subject = func(ctx context.Context) (string, string, error) {
				c, err := src.Credential(ctx)
				if err != nil {
					return "", "", err
				}
				tok, err := txntoken.NewSelfSignedToken(c.Key, self, t.SelfSignedSubject, t.Issuer, scope, time.Minute, time.Now())
				return tok, oauth.TokenTypeSelfSigned, err
			}
		} else {
			file, typ := t.SubjectTokenFile, t.SubjectTokenType
			ec.Subject = func(context.Context) (string, string, error) {
				b, err := os.ReadFile(file)
				if err != nil {
					return "", "", fmt.Errorf("egress.tts.subject_token_file: %w", err)
				}
				return strings.TrimSpace(string(b)), typ, nil
			}
		}
	}
	return proxy.NewEgress(ec)
}

func buildIngress(ctx context.Context, cfg *Config, s *kit.Server, src wit.Source, wits *wit.Validator, retry time.Duration, logger *slog.Logger) (http.Handler, store.Replay, []service.ReadyCheck, error) {
	in := cfg.Ingress
	// One store section, one Redis client: the replay store, the dialog records of a
	// stateful ingress and the handoff records share it.
	st, err := kit.OpenStoreOn(s, in.Store, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	replay := st.Replay
	checks := st.ReadyChecks()
	proofs := in.Proofs
	if len(proofs) == 0 {
		proofs = []string{"httpsig", "wpt"}
	}
	var opts []dialog.ReceiverOption
	for _, p := range proofs {
		switch p {
		case "httpsig":
			opts = append(opts, dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(in.Audiences...), httpsig.WithReplay(replay))))
		case "wpt":
			opts = append(opts, dialog.WithWPT(wpt.NewVerifier(wits, wpt.WithAudiences(in.Audiences...), wpt.WithReplay(replay))))
		}
	}
	var txnVerifier *txntoken.Verifier
	txnAud := cfg.TrustDomains[0]
	if t := in.TxnTokens; t != nil {
		ks, ready, err := kit.OpenJWKS(ctx, "ingress.txn_tokens", kit.JWKSSource{JWKS: t.JWKS}, retry)
		if err != nil {
			return nil, nil, nil, err
		}
		if ready != nil {
			checks = append(checks, ready)
		}
		if t.Audience != "" {
			txnAud = t.Audience
		}
		txnVerifier = txntoken.NewVerifier(ks, txnAud)
		opts = append(opts, dialog.WithTxnTokens(txnVerifier))
	}
	var boundary *proxy.BoundaryIngress
	if b := in.Boundary; b != nil {
		a := b.AccessTokens
		ks, ready, err := kit.OpenJWKS(ctx, "ingress.boundary.access_tokens", kit.JWKSSource{JWKS: a.JWKS}, retry)
		if err != nil {
			return nil, nil, nil, err
		}
		if ready != nil {
			checks = append(checks, ready)
		}
		aud := a.Audience
		if aud == "" {
			aud = cfg.TrustDomains[0]
		}
		// The receiver's Txn-Token verifier is never used here (a request carrying a
		// Txn-Token is refused first); txnVerifier validates what this domain's TTS
		// returns for the linked dialog.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil // the TTS request carries the access token
		// One exchange per linked dialog, and linked dialogs arrive concurrently.
		tr.MaxIdleConnsPerHost = proxy.MaxIdleConnsPerUpstream
		boundary = &proxy.BoundaryIngress{TxnTokens: txnVerifier, Acceptor: &agent.LinkAcceptor{
			TTS: &txntoken.Client{TokenEndpoint: b.TTSTokenEndpoint, WITSource: src, Proof: proof.WPT,
				HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second}},
			AccessTokens: &chaining.AccessTokenVerifier{Keys: ks, Issuer: a.Issuer, Audience: aud, Skew: cfg.Skew},
			TrustDomain:  txnAud, Scope: b.Scope,
		}}
	}
	if in.RequireTxnToken {
		opts = append(opts, dialog.RequireTxnToken())
	}
	if in.RequireDialog {
		opts = append(opts, dialog.RequireDialog())
	}
	if in.RequireVerifiedInitiator {
		opts = append(opts, dialog.RequireVerifiedInitiator())
	}
	if in.RequireSignatureForBody {
		opts = append(opts, dialog.RequireSignatureForBody())
	}
	opts = append(opts, dialog.WithProvenance(dialog.NewProvenanceVerifier(wits, 0)))
	if in.Stateful {
		opts = append(opts, dialog.WithRegistry(dialog.NewRegistry(st.Records())))
	}
	if in.SignResponses {
		opts = append(opts, dialog.WithResponseSigner(func(ctx context.Context) (*httpsig.Signer, error) {
			c, err := src.Credential(ctx)
			if err != nil {
				return nil, err
			}
			return httpsig.NewSigner(c.Key, c.WIT), nil
		}))
		if in.StreamUnsigned {
			opts = append(opts, dialog.WithStreamingUnsigned())
		}
	}
	var hr *handoff.Receiver
	if len(in.HandoffHosts) > 0 {
		key, trust, err := loadHandoff(cfg.Handoff)
		if err != nil {
			return nil, nil, nil, err
		}
		records := st.Records()
		var hosts []hostproto.Host
		for _, name := range in.HandoffHosts {
			h, _ := parseHost(name)
			hosts = append(hosts, h)
		}
		// An offer's grant must name the credential that came with it (section 5.7).
		hr = handoff.NewReceiver(cfg.Workload.ID, trust, records, handoff.WithStatusKey(key), handoff.WithGrantRequired())
		opts = append(opts, dialog.WithHandoffsIn(hr, hosts...))
	}
	if _, checker, err := kit.OpenRevocations(s, st, in.Revocations); err != nil {
		return nil, nil, nil, err
	} else if checker != nil {
		opts = append(opts, dialog.WithRevocations(checker))
	}
	auditOpts, err := ingressAudit(ctx, s, cfg, st, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	opts = append(opts, auditOpts...)
	authorizer, err := ingressAuthorizer(cfg, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	if authorizer != nil {
		opts = append(opts, dialog.WithAuthorizer(authorizer))
	}
	md, err := ingressMetadata(in)
	if err != nil {
		return nil, nil, nil, err
	}
	if md != nil {
		opts = append(opts, dialog.WithResourceMetadata(*md))
	}
	rc, err := dialog.NewReceiver(opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	h, err := proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: in.Upstream, UpstreamPath: in.UpstreamPath, AllowPlainHTTP: in.AllowPlainHTTP, Boundary: boundary, Handoffs: hr, ForwardProvenance: in.ForwardProvenance,
		StreamIdleTimeout: in.StreamIdleTimeout, UpstreamTimeout: upstreamTimeoutOf(in.UpstreamTimeout), Log: logger})
	if err != nil {
		return nil, nil, nil, err
	}
	return h, replay, checks, nil
}

// readPrivateKey reads a private JWK file the configuration names.
func readPrivateKey(path string) (*keys.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return keys.ParsePrivateJWK(b)
}

// loadHandoff reads the trust document; the workload's handoff key was opened first
// (openProxyKeys).
func loadHandoff(h *ProxyHandoffConfig) (*keys.PrivateKey, handoff.Trust, error) {
	key := h.key
	b, err := os.ReadFile(h.TrustFile)
	if err != nil {
		return nil, nil, fmt.Errorf("handoff.trust_file: %w", err)
	}
	trust, err := handoff.ParseTrust(b)
	if err != nil {
		return nil, nil, fmt.Errorf("handoff.trust_file: %w", err)
	}
	return key, trust, nil
}

// counted counts the answers of h by status.
func counted(h http.Handler, c *prometheus.CounterVec, side string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		c.WithLabelValues(side, strconv.Itoa(sw.status)).Inc()
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the connection's writer: the proxies flush a
// response they pass through as it comes.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}
