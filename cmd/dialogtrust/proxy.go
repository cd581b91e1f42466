package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/service"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/store/redisstore"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// ProxyConfig is the configuration file of "dialogtrust proxy" (docs/proxy.md): the
// operational listener and the shared members of the services (Base), the workload
// whose WIT the proxy holds, the trust in other workloads' WITs, and an egress
// section, an ingress section, or both.
type ProxyConfig struct {
	// Base: listen (the operational routes /healthz, /readyz, /metrics), issuer
	// (unused), trust_domains, log, tracing, skew, shutdown_timeout.
	kit.Base `yaml:",inline"`
	Workload ProxyWorkloadConfig `yaml:"workload"`
	WITs     []ProxyJWKSConfig   `yaml:"wits"`
	Egress   *EgressConfig       `yaml:"egress"`
	Ingress  *IngressConfig      `yaml:"ingress"`
	// Handoff is the workload's handoff key and trust (handoff-context sections 3,
	// 3.4): needed by an egress route with a delegate and by an ingress with
	// handoff_hosts.
	Handoff *ProxyHandoffConfig `yaml:"handoff"`
	// JWKSRetry bounds how often a JWKS URL that has not answered yet is tried again
	// (default 5s).
	JWKSRetry time.Duration `yaml:"jwks_retry"`
}

// ProxyWorkloadConfig: the workload and how it gets its WIT from the WIT issuer.
type ProxyWorkloadConfig struct {
	ID string `yaml:"id"`
	// WITIssuer is the issuer's base URL (its metadata names the endpoint).
	WITIssuer string `yaml:"wit_issuer"`
	// Auth is how the workload authenticates to the issuer: development (the issuer's
	// development method, which authenticates nobody), assertion (a client assertion
	// signed by assertion_key_file) or x509svid (svid_cert_file, svid_key_file and the
	// issuer's bundle_file, or all three from workload_api).
	Auth             string `yaml:"auth"`
	AssertionKeyFile string `yaml:"assertion_key_file"`
	SVIDCertFile     string `yaml:"svid_cert_file"`
	SVIDKeyFile      string `yaml:"svid_key_file"`
	BundleFile       string `yaml:"bundle_file"`
	// WorkloadAPI takes the X.509-SVID and the issuer's bundle from the SPIFFE Workload
	// API, following its rotations; it needs server_id.
	WorkloadAPI *ProxyWorkloadAPIConfig `yaml:"workload_api"`
	ServerID    string                  `yaml:"server_id"`
}

// ProxyHandoffConfig: the key that signs the workload's handoff offers and statuses,
// and the trust document binding other agents' keys to their AgentIds
// (handoff.ParseTrust: a JSON object mapping each AgentId to a JWK Set).
type ProxyHandoffConfig struct {
	KeyFile   string `yaml:"key_file"`
	TrustFile string `yaml:"trust_file"`
}

// ProxyJWKSConfig: one trust domain's WIT issuer keys, by JWKS URL or file.
type ProxyJWKSConfig struct {
	TrustDomain string `yaml:"trust_domain"`
	JWKSURL     string `yaml:"jwks_url"`
	JWKSFile    string `yaml:"jwks_file"`
}

// EgressConfig: the listener for the local agent and its routes.
type EgressConfig struct {
	// Listen is a loopback host:port, or unix:///path/egress.sock: a Unix domain
	// socket, with SocketMode its file mode (four octal digits, quoted; default "0660").
	Listen     string `yaml:"listen"`
	SocketMode string `yaml:"socket_mode"`
	// CAFile holds PEM roots for https upstreams (default: the system's).
	CAFile string           `yaml:"ca_file"`
	TTS    *EgressTTSConfig `yaml:"tts"`
	Routes []RouteConfig    `yaml:"routes"`
	// StreamIdleTimeout bounds the wait between two reads of a response passed
	// through as it comes (proxy.EgressConfig.StreamIdleTimeout; default 5m).
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout"`
	// UpstreamTimeout bounds the wait for an upstream's answer, for every route
	// without one of its own (proxy.EgressConfig.UpstreamTimeout; positive; default
	// 5m, proxy.DefaultUpstreamTimeout). checkProxy fills it in.
	UpstreamTimeout *time.Duration `yaml:"upstream_timeout"`
	// AllowedHosts replaces the Host values the egress answers (default: localhost,
	// 127.0.0.1, [::1] at the listener's port on TCP, any on a Unix socket);
	// AllowedOrigins adds origins whose browser pages may use it (default: its own on
	// TCP). proxy.EgressConfig.AllowedHosts and AllowedOrigins: DNS rebinding, CSRF.
	AllowedHosts   []string `yaml:"allowed_hosts"`
	AllowedOrigins []string `yaml:"allowed_origins"`
}

// EgressTTSConfig: where Txn-Tokens come from and the subject token presented.
type EgressTTSConfig struct {
	TokenEndpoint string `yaml:"token_endpoint"`
	// Issuer is the TTS's issuer identifier: the aud of a self-signed subject token.
	Issuer string `yaml:"issuer"`
	// SelfSigned: the workload signs its own subject token for this subject (the
	// TTS's self_signed subject token type), with subject_scope (default: every
	// route's scope).
	SelfSignedSubject string `yaml:"self_signed_subject"`
	SubjectScope      string `yaml:"subject_scope"`
	// SubjectTokenFile holds a subject token of subject_token_type, read for each TTS
	// request (another process keeps it fresh).
	SubjectTokenFile string `yaml:"subject_token_file"`
	SubjectTokenType string `yaml:"subject_token_type"`
}

// RouteConfig: see proxy.Route.
type RouteConfig struct {
	Prefix                string `yaml:"prefix"`
	Upstream              string `yaml:"upstream"`
	AllowPlainHTTP        bool   `yaml:"allow_plain_http"`
	Audience              string `yaml:"audience"`
	Scope                 string `yaml:"scope"`
	Recipient             string `yaml:"recipient"`
	Proof                 string `yaml:"proof"`
	RequireSignedResponse bool   `yaml:"require_signed_response"`
	// BindRequest (proof wpt) binds each request's method, path, query and body
	// through the WPT's oth (proxy.Route.BindRequest).
	BindRequest bool `yaml:"bind_request"`
	// ResponseSigners names the workloads whose signed responses the route believes
	// (identifiers, or prefixes ending in "/"); default the route's own trust domain:
	// workload.id's, or boundary.peer_trust_domain (proxy.Route.ResponseSigners).
	ResponseSigners []string `yaml:"response_signers"`
	// Delegate is the AgentId the route's handoff offers are for; Host the host
	// protocol carrying them: mcp, a2a03 or a2a10 (proxy.Route).
	Delegate string `yaml:"delegate"`
	Host     string `yaml:"host"`
	// Boundary marks the route as crossing a trust boundary (proxy.BoundaryRoute).
	Boundary *RouteBoundaryConfig `yaml:"boundary"`
	// UpstreamTimeout bounds the wait for this route's upstream (positive; default
	// egress.upstream_timeout). checkProxy fills it in.
	UpstreamTimeout *time.Duration `yaml:"upstream_timeout"`
}

// RouteBoundaryConfig: how a route crossing a trust boundary chains into the peer
// domain (dialog-binding section 11; identity chaining). The route's audience and
// scope name the Txn-Token of this domain the grant is asked for with.
type RouteBoundaryConfig struct {
	// GrantEndpoint is AS A's token endpoint (default egress.tts.token_endpoint: the
	// domain's TTS issues the grants).
	GrantEndpoint string `yaml:"grant_endpoint"`
	// PeerIssuer is AS B's issuer identifier (the grant's audience), PeerTokenEndpoint
	// its token endpoint.
	PeerIssuer        string `yaml:"peer_issuer"`
	PeerTokenEndpoint string `yaml:"peer_token_endpoint"`
	// PeerTrustDomain is the peer domain's trust domain, the linked dialog's: its
	// workloads' signed responses are believed (proxy.BoundaryRoute.PeerTrustDomain).
	PeerTrustDomain string `yaml:"peer_trust_domain"`
	// Scope narrows the grant and the access token (default: what the Txn-Token's
	// scope allows to cross).
	Scope string `yaml:"scope"`
	// PeerClient authenticates the egress to AS B as an OAuth client
	// (client_secret_basic) on the redemption, for an AS B that requires it of the
	// jwt-bearer grant (Ory Hydra; proxy.BoundaryRoute.PeerClient). Our own AS B needs
	// none.
	PeerClient *PeerClientConfig `yaml:"peer_client"`
}

// PeerClientConfig: the egress's client at AS B. The secret is never written in the
// configuration: a file holding it (a mounted Secret; a trailing newline is not part
// of it) or an environment variable, exactly one.
type PeerClientConfig struct {
	ClientID   string `yaml:"client_id"`
	SecretFile string `yaml:"secret_file"`
	SecretEnv  string `yaml:"secret_env"`
	// Secret only refuses an inline secret with a message saying what to use.
	Secret inlineSecret `yaml:"secret"`
}

// inlineSecret is a member that no file may give: a secret written into the YAML ends
// up in ConfigMaps, repositories and backups.
type inlineSecret struct{}

func (inlineSecret) UnmarshalYAML(func(any) error) error {
	return fmt.Errorf("a client secret is never written in the configuration: name a file (secret_file) or an environment variable (secret_env) holding it")
}

// secret reads the client secret from its file or environment variable
// (kit.ReadSecret).
func (pc PeerClientConfig) secret() (string, error) {
	return kit.ReadSecret("peer_client.secret", pc.SecretFile, pc.SecretEnv)
}

// IngressConfig: the listener for remote callers, the application behind it and the
// receiver's checks (section 12).
type IngressConfig struct {
	// Listen is a host:port (TCP, with tls for remote callers).
	Listen string `yaml:"listen"`
	// Upstream is the application's base URL, or unix:///path/app.sock with
	// UpstreamPath its base path (default /) (proxy.IngressConfig).
	Upstream       string `yaml:"upstream"`
	UpstreamPath   string `yaml:"upstream_path"`
	AllowPlainHTTP bool   `yaml:"allow_plain_http"`
	// Audiences are the wimse-aud and WPT aud values accepted.
	Audiences []string `yaml:"audiences"`
	// Proofs accepted: httpsig, wpt (default both).
	Proofs []string `yaml:"proofs"`
	// TxnTokens: the TTS's keys; Audience defaults to the first trust domain.
	TxnTokens                *ProxyTxnTrustConfig `yaml:"txn_tokens"`
	RequireTxnToken          bool                 `yaml:"require_txn_token"`
	RequireDialog            bool                 `yaml:"require_dialog"`
	RequireVerifiedInitiator bool                 `yaml:"require_verified_initiator"`
	// RequireSignatureForBody refuses a request with a body proved by a WPT: a body is
	// taken only under an HTTP signature (dialog.RequireSignatureForBody). Needs
	// httpsig among the proofs.
	RequireSignatureForBody bool `yaml:"require_signature_for_body"`
	// Stateful makes the ingress a participant that establishes and tracks dialogs
	// (section 5); else it is stateless, like a tool.
	Stateful bool `yaml:"stateful"`
	// SignResponses signs responses to HTTP-signed requests with the workload's WIT.
	SignResponses bool `yaml:"sign_responses"`
	// StreamUnsigned (with SignResponses) passes an event stream to a request that did
	// not ask for a signed response unsigned, as it comes (dialog.WithStreamingUnsigned);
	// off, every response is signed and a stream reaches the caller when it ends.
	StreamUnsigned bool            `yaml:"stream_unsigned"`
	Store          kit.StoreConfig `yaml:"store"`
	// HandoffHosts are the host protocols whose handoffs the ingress checks and
	// answers (mcp, a2a03, a2a10); none: handoffs are not read.
	HandoffHosts []string `yaml:"handoff_hosts"`
	// ForwardProvenance hands the application the provenance to forward when it calls
	// on in the dialog (proxy.IngressConfig.ForwardProvenance; section 9). Off by
	// default: the value holds earlier hops' WITs and Txn-Tokens.
	ForwardProvenance bool `yaml:"forward_provenance"`
	// TLS is the ingress listener's certificate; without it the ingress speaks plain
	// HTTP (said at the start when it does not listen on loopback).
	TLS ProxyTLSConfig `yaml:"tls"`
	// Boundary makes the ingress face a trust boundary (proxy.BoundaryIngress).
	Boundary *IngressBoundaryConfig `yaml:"boundary"`
	// StreamIdleTimeout bounds the wait between two reads of a response passed
	// through as it comes (proxy.IngressConfig.StreamIdleTimeout; default 5m).
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout"`
	// UpstreamTimeout bounds the wait for the application's answer
	// (proxy.IngressConfig.UpstreamTimeout; positive; default 5m,
	// proxy.DefaultUpstreamTimeout). checkProxy fills it in.
	UpstreamTimeout *time.Duration `yaml:"upstream_timeout"`
}

// IngressBoundaryConfig: a boundary-facing ingress (dialog-binding section 11 steps 3
// and 4). Callers from other trust domains present an access token of this domain's
// AS in a linked dialog they initiate, never a Txn-Token; the ingress exchanges it at
// this domain's TTS for a Txn-Token recording the linked dialog, which txn_tokens
// validates.
type IngressBoundaryConfig struct {
	// AccessTokens: the AS's issuer identifier and keys; audience default the first
	// trust domain.
	AccessTokens ProxyAccessTokenConfig `yaml:"access_tokens"`
	// TTSTokenEndpoint is this domain's TTS.
	TTSTokenEndpoint string `yaml:"tts_token_endpoint"`
	// Scope of the Txn-Token (default the access token's).
	Scope string `yaml:"scope"`
}

// ProxyAccessTokenConfig: the RFC 9068 access tokens of one AS.
type ProxyAccessTokenConfig struct {
	Issuer   string `yaml:"issuer"`
	JWKSURL  string `yaml:"jwks_url"`
	JWKSFile string `yaml:"jwks_file"`
	Audience string `yaml:"audience"`
}

// ProxyTLSConfig: a serving certificate and its key (PEM files).
type ProxyTLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// ProxyTxnTrustConfig: the keys Txn-Tokens are verified with.
type ProxyTxnTrustConfig struct {
	JWKSURL  string `yaml:"jwks_url"`
	JWKSFile string `yaml:"jwks_file"`
	Audience string `yaml:"audience"`
}

// ProxyEnvPrefix starts every environment override of the proxy.
const ProxyEnvPrefix = "DIALOGTRUST_PROXY_"

const proxyDefaultListen = "127.0.0.1:9480"

// proxySpec reads the configuration like the services do: the file named by -config
// or DIALOGTRUST_PROXY_CONFIG (the embedded default has neither side and is refused),
// then the environment, then the flags.
var proxySpec = kit.Spec[ProxyConfig]{
	Name: "proxy", EnvPrefix: ProxyEnvPrefix, Default: []byte("trust_domains: []\n"),
	Env: append([]kit.EnvVar[ProxyConfig]{
		{Name: "LISTEN", Member: "listen"},
		{Name: "TRUST_DOMAINS", Member: "trust_domains"},
		{Name: "LOG_LEVEL", Member: "log.level"},
		{Name: "WORKLOAD_ID", Member: "workload.id"},
		{Name: "WIT_ISSUER", Member: "workload.wit_issuer"},
		{Name: "EGRESS_LISTEN", Set: func(c *ProxyConfig, v string) error {
			if c.Egress == nil {
				return fmt.Errorf("the configuration has no egress section")
			}
			c.Egress.Listen = v
			return nil
		}},
		{Name: "INGRESS_LISTEN", Set: func(c *ProxyConfig, v string) error {
			if c.Ingress == nil {
				return fmt.Errorf("the configuration has no ingress section")
			}
			c.Ingress.Listen = v
			return nil
		}},
		{Name: "INGRESS_UPSTREAM", Set: func(c *ProxyConfig, v string) error {
			if c.Ingress == nil {
				return fmt.Errorf("the configuration has no ingress section")
			}
			c.Ingress.Upstream = v
			return nil
		}},
	}, kit.RedisEnv("INGRESS_", func(c *ProxyConfig) (*kit.StoreConfig, error) {
		if c.Ingress == nil {
			return nil, fmt.Errorf("the configuration has no ingress section")
		}
		return &c.Ingress.Store, nil
	})...),
	Flags: []kit.Flag{
		{Name: "listen", Member: "listen", Usage: "operational listener host:port (/healthz, /readyz, /metrics)"},
		{Name: "log-level", Member: "log.level", Usage: "debug, info, warn or error"},
	},
}

var proxyProgram = kit.Program[ProxyConfig]{Name: "proxy", Config: proxySpec, Check: checkProxy, Build: buildProxy, Warnings: proxyWarnings}

// proxyRun is "dialogtrust proxy": the service runner until SIGTERM or SIGINT.
func proxyRun(args []string, _ io.Reader, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return kit.Run(ctx, proxyProgram, args, os.Environ(), stdout, stderr, nil)
}

// checkProxy applies the defaults and checks what needs nothing opened.
func checkProxy(cfg *ProxyConfig) error {
	cfg.SetDefaults(proxyDefaultListen, time.Minute)
	if err := cfg.Base.Check(); err != nil {
		return err
	}
	if cfg.Egress == nil && cfg.Ingress == nil {
		return fmt.Errorf("an egress section, an ingress section or both are required (-config FILE)")
	}
	w := cfg.Workload
	if _, err := identifier.Parse(w.ID); err != nil {
		return fmt.Errorf("workload.id: %w", err)
	}
	needWIT := cfg.Egress != nil || (cfg.Ingress != nil && (cfg.Ingress.SignResponses || cfg.Ingress.Boundary != nil))
	if needWIT {
		if w.WITIssuer == "" {
			return fmt.Errorf("workload.wit_issuer: required")
		}
		switch w.Auth {
		case "development":
		case "assertion":
			if w.AssertionKeyFile == "" {
				return fmt.Errorf("workload.assertion_key_file: required with auth assertion")
			}
		case "x509svid":
			if w.WorkloadAPI != nil {
				if err := checkWorkloadAPI(w); err != nil {
					return err
				}
			} else if w.SVIDCertFile == "" || w.SVIDKeyFile == "" || w.BundleFile == "" {
				return fmt.Errorf("workload: auth x509svid needs svid_cert_file, svid_key_file and bundle_file")
			}
		default:
			return fmt.Errorf("workload.auth %q: development, assertion or x509svid", w.Auth)
		}
		if w.WorkloadAPI != nil && w.Auth != "x509svid" {
			return fmt.Errorf("workload.workload_api: only with auth x509svid")
		}
	}
	if len(cfg.WITs) == 0 {
		return fmt.Errorf("wits: the WIT trust of at least one trust domain is required")
	}
	for _, t := range cfg.WITs {
		if t.TrustDomain == "" || (t.JWKSURL == "") == (t.JWKSFile == "") {
			return fmt.Errorf("wits[%s]: a trust_domain and one of jwks_url, jwks_file", t.TrustDomain)
		}
	}
	if h := cfg.Handoff; h != nil && (h.KeyFile == "" || h.TrustFile == "") {
		return fmt.Errorf("handoff: key_file and trust_file are required")
	}
	if e := cfg.Egress; e != nil {
		if err := checkLoopbackListen("egress.listen", e.Listen); err != nil {
			return err
		}
		if _, err := egressSocketMode(e); err != nil {
			return err
		}
		if err := proxy.CheckAllowedHosts(e.AllowedHosts); err != nil {
			return fmt.Errorf("egress.allowed_hosts: %w", err)
		}
		if err := proxy.CheckAllowedOrigins(e.AllowedOrigins); err != nil {
			return fmt.Errorf("egress.allowed_origins: %w", err)
		}
		if len(e.Routes) == 0 {
			return fmt.Errorf("egress.routes: at least one")
		}
		if e.StreamIdleTimeout < 0 {
			return fmt.Errorf("egress.stream_idle_timeout: must not be negative")
		}
		if err := defaultUpstreamTimeout(&e.UpstreamTimeout, proxy.DefaultUpstreamTimeout); err != nil {
			return fmt.Errorf("egress.upstream_timeout: %w", err)
		}
		for i := range e.Routes {
			if err := defaultUpstreamTimeout(&e.Routes[i].UpstreamTimeout, *e.UpstreamTimeout); err != nil {
				return fmt.Errorf("egress.routes[%d].upstream_timeout: %w", i, err)
			}
		}
		for i, r := range e.Routes {
			if _, err := proxy.CheckUpstream(r.Upstream, r.AllowPlainHTTP); err != nil {
				return fmt.Errorf("egress.routes[%d]: %w", i, err)
			}
			if _, err := parseProof(r.Proof); err != nil {
				return fmt.Errorf("egress.routes[%d]: %w", i, err)
			}
			if r.Proof == "wpt" && r.RequireSignedResponse {
				return fmt.Errorf("egress.routes[%d]: require_signed_response needs proof httpsig (a WPT covers no response)", i)
			}
			if r.BindRequest && r.Proof != "wpt" {
				return fmt.Errorf("egress.routes[%d]: bind_request is for proof wpt (an HTTP signature covers the request always)", i)
			}
			if r.Audience != "" && e.TTS == nil {
				return fmt.Errorf("egress.routes[%d]: audience needs egress.tts", i)
			}
			if err := checkRouteBoundary(r, e.TTS); err != nil {
				return fmt.Errorf("egress.routes[%d].boundary: %w", i, err)
			}
			if err := checkRouteHandoff(r, cfg.Handoff); err != nil {
				return fmt.Errorf("egress.routes[%d]: %w", i, err)
			}
			if err := checkRouteSigners(r, w.ID); err != nil {
				return fmt.Errorf("egress.routes[%d]: %w", i, err)
			}
		}
		if t := e.TTS; t != nil {
			switch {
			case t.TokenEndpoint == "":
				return fmt.Errorf("egress.tts.token_endpoint: required")
			case (t.SelfSignedSubject == "") == (t.SubjectTokenFile == ""):
				return fmt.Errorf("egress.tts: one of self_signed_subject, subject_token_file")
			case t.SelfSignedSubject != "" && t.Issuer == "":
				return fmt.Errorf("egress.tts.issuer: required with self_signed_subject")
			case t.SubjectTokenFile != "" && t.SubjectTokenType == "":
				return fmt.Errorf("egress.tts.subject_token_type: required with subject_token_file")
			}
		}
	}
	if in := cfg.Ingress; in != nil {
		if in.Listen == "" {
			return fmt.Errorf("ingress.listen: required")
		}
		if strings.HasPrefix(in.Listen, kit.UnixScheme) {
			return fmt.Errorf("ingress.listen %q: the ingress faces remote callers on TCP (with tls); a Unix socket is for the egress and the application", in.Listen)
		}
		if (in.TLS.CertFile == "") != (in.TLS.KeyFile == "") {
			return fmt.Errorf("ingress.tls: cert_file and key_file go together")
		}
		if err := proxy.CheckIngressUpstream(in.Upstream, in.UpstreamPath, in.AllowPlainHTTP); err != nil {
			return fmt.Errorf("ingress.upstream: %w", err)
		}
		if len(in.Audiences) == 0 {
			return fmt.Errorf("ingress.audiences: at least one")
		}
		if in.StreamIdleTimeout < 0 {
			return fmt.Errorf("ingress.stream_idle_timeout: must not be negative")
		}
		if err := defaultUpstreamTimeout(&in.UpstreamTimeout, proxy.DefaultUpstreamTimeout); err != nil {
			return fmt.Errorf("ingress.upstream_timeout: %w", err)
		}
		for _, p := range in.Proofs {
			if _, err := parseProof(p); err != nil || p == "" {
				return fmt.Errorf("ingress.proofs: %q: httpsig or wpt", p)
			}
		}
		if in.RequireSignatureForBody && len(in.Proofs) > 0 && !slices.Contains(in.Proofs, "httpsig") {
			return fmt.Errorf("ingress.require_signature_for_body needs httpsig in ingress.proofs: no request with a body could be accepted")
		}
		if t := in.TxnTokens; t != nil && (t.JWKSURL == "") == (t.JWKSFile == "") {
			return fmt.Errorf("ingress.txn_tokens: one of jwks_url, jwks_file")
		}
		if in.RequireTxnToken && in.TxnTokens == nil {
			return fmt.Errorf("ingress.require_txn_token needs ingress.txn_tokens")
		}
		for _, h := range in.HandoffHosts {
			if _, err := parseHost(h); err != nil {
				return fmt.Errorf("ingress.handoff_hosts: %w", err)
			}
		}
		if len(in.HandoffHosts) > 0 && cfg.Handoff == nil {
			return fmt.Errorf("ingress.handoff_hosts needs the handoff section (key_file, trust_file)")
		}
		if in.StreamUnsigned && !in.SignResponses {
			return fmt.Errorf("ingress.stream_unsigned needs sign_responses: without it no response is signed")
		}
		if in.Store.Type == "" {
			in.Store.Type = "memory"
		}
		if err := in.Store.Check(); err != nil {
			return fmt.Errorf("ingress.%w", err)
		}
		if err := checkIngressBoundary(in); err != nil {
			return fmt.Errorf("ingress.boundary: %w", err)
		}
	}
	return nil
}

// defaultUpstreamTimeout refuses an upstream timeout given that is not positive (0
// would not mean the default, and no wait at all would answer nothing), and sets one
// not given to def.
func defaultUpstreamTimeout(d **time.Duration, def time.Duration) error {
	if *d == nil {
		*d = &def
		return nil
	}
	if **d <= 0 {
		return fmt.Errorf("must be positive")
	}
	return nil
}

// upstreamTimeoutOf is *d, or 0 (the proxy package's default) without one.
func upstreamTimeoutOf(d *time.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return *d
}

// checkRouteHandoff: a route that makes handoff offers names its delegate and host
// protocol, has a Txn-Token (the offer's grant is its digest) and the workload's
// handoff key and trust.
func checkRouteHandoff(r RouteConfig, h *ProxyHandoffConfig) error {
	if r.Delegate == "" && r.Host == "" {
		return nil
	}
	if r.Delegate == "" || r.Host == "" {
		return fmt.Errorf("delegate and host go together (handoff offers)")
	}
	if r.Boundary != nil {
		return fmt.Errorf("delegate: a route crossing a trust boundary makes no handoff offers")
	}
	if _, err := identifier.Parse(r.Delegate); err != nil {
		return fmt.Errorf("delegate: %w", err)
	}
	if _, err := parseHost(r.Host); err != nil {
		return err
	}
	if r.Audience == "" {
		return fmt.Errorf("delegate needs audience: the offer's grant is the digest of the route's Txn-Token")
	}
	if h == nil || h.KeyFile == "" || h.TrustFile == "" {
		return fmt.Errorf("delegate needs the handoff section (key_file, trust_file)")
	}
	return nil
}

// checkRouteBoundary checks the chaining configuration of a route crossing a trust
// boundary (nothing for another route).
func checkRouteBoundary(r RouteConfig, t *EgressTTSConfig) error {
	b := r.Boundary
	if b == nil {
		return nil
	}
	switch {
	case r.Audience == "" || t == nil:
		return fmt.Errorf("the route needs audience (and egress.tts): the grant is asked for with the dialog's Txn-Token")
	case r.Proof == "wpt":
		return fmt.Errorf("needs proof httpsig: a WPT occupies the Authorization field that carries the access token")
	case b.PeerIssuer == "" || b.PeerTokenEndpoint == "":
		return fmt.Errorf("peer_issuer and peer_token_endpoint (AS B) are required")
	case b.PeerClient != nil && (b.PeerClient.ClientID == "" || (b.PeerClient.SecretFile == "") == (b.PeerClient.SecretEnv == "")):
		return fmt.Errorf("peer_client: a client_id and exactly one of secret_file, secret_env")
	}
	for _, ep := range []string{b.GrantEndpoint, b.PeerTokenEndpoint} {
		if ep == "" {
			continue // grant_endpoint: the TTS's
		}
		if _, err := proxy.CheckUpstream(ep, r.AllowPlainHTTP); err != nil {
			return err
		}
	}
	return nil
}

// parseHost reads a host protocol name of the configuration.
func parseHost(s string) (dialog.Host, error) {
	switch s {
	case "mcp":
		return dialog.MCP, nil
	case "a2a03":
		return dialog.A2A03, nil
	case "a2a10":
		return dialog.A2A10, nil
	}
	return 0, fmt.Errorf("host %q: mcp, a2a03 or a2a10", s)
}

// checkIngressBoundary checks a boundary-facing ingress (nothing for another).
func checkIngressBoundary(in *IngressConfig) error {
	b := in.Boundary
	if b == nil {
		return nil
	}
	a := b.AccessTokens
	switch {
	case a.Issuer == "" || (a.JWKSURL == "") == (a.JWKSFile == ""):
		return fmt.Errorf("access_tokens: an issuer and one of jwks_url, jwks_file")
	case b.TTSTokenEndpoint == "":
		return fmt.Errorf("tts_token_endpoint: required (step 4: the Txn-Token of the linked dialog)")
	case in.TxnTokens == nil:
		return fmt.Errorf("needs ingress.txn_tokens: the keys of this domain's TTS validate the Txn-Token it returns")
	case in.RequireTxnToken:
		return fmt.Errorf("excludes require_txn_token: a Txn-Token never crosses a trust boundary")
	case !in.Stateful:
		return fmt.Errorf("needs stateful: the ingress creates the linked dialog (section 11 step 3)")
	case len(in.Proofs) > 0 && !slices.Contains(in.Proofs, "httpsig"):
		return fmt.Errorf("needs proof httpsig: the access token is covered by the caller's HTTP signature")
	}
	_, err := proxy.CheckUpstream(b.TTSTokenEndpoint, in.AllowPlainHTTP)
	return err
}

// checkLoopbackListen: the egress signs as the workload for whoever reaches it, so it
// listens on loopback only, or on a Unix socket (local, and reachable only as its file
// mode allows).
func checkLoopbackListen(what, addr string) error {
	if addr == "" {
		return fmt.Errorf("%s: required", what)
	}
	if _, unix, err := kit.UnixPath(addr); unix {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	if !kit.IsLoopback(addr, "localhost") {
		return fmt.Errorf("%s %q: the egress signs as the workload for whoever reaches it, so it must listen on loopback", what, addr)
	}
	return nil
}

// egressSocketMode reads egress.socket_mode: octal permission bits, only with a Unix
// socket listener; default kit.DefaultSocketMode.
func egressSocketMode(e *EgressConfig) (fs.FileMode, error) {
	if _, unix, _ := kit.UnixPath(e.Listen); !unix {
		if e.SocketMode != "" {
			return 0, fmt.Errorf("egress.socket_mode: only with a Unix socket listener (listen: unix:///path)")
		}
		return 0, nil
	}
	if e.SocketMode == "" {
		return kit.DefaultSocketMode, nil
	}
	// Four octal digits in quotes: YAML reads an unquoted 0660 as the number 432, which
	// must not pass for mode 0432.
	m, err := strconv.ParseUint(e.SocketMode, 8, 32)
	if err != nil || len(e.SocketMode) != 4 || e.SocketMode[0] != '0' || m&0o600 != 0o600 {
		return 0, fmt.Errorf("egress.socket_mode %q: four octal digits in quotes, such as \"0660\", that let the owner read and write", e.SocketMode)
	}
	return fs.FileMode(m), nil
}

func parseProof(s string) (proof.Method, error) {
	switch s {
	case "", "httpsig":
		return proof.HTTPSig, nil
	case "wpt":
		return proof.WPT, nil
	}
	return 0, fmt.Errorf("proof %q: httpsig or wpt", s)
}

// buildProxy opens the listeners and builds both sides.
func buildProxy(ctx context.Context, cfg *ProxyConfig, logger *slog.Logger) (_ *kit.Server, err error) {
	if err := checkProxy(cfg); err != nil {
		return nil, err
	}
	s := &kit.Server{ShutdownTimeout: cfg.ShutdownTimeout}
	defer s.CloseOnError(&err)
	if err := s.Listen(cfg.Listen); err != nil {
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
		ks, ready, err := proxyKeySource(ctx, retry, "wits["+t.TrustDomain+"]", t.JWKSURL, t.JWKSFile)
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
			svids := openSVIDSource(ctx, addr, logger)
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

func proxyKeySource(ctx context.Context, retry time.Duration, what, url, file string) (keys.KeySet, service.ReadyCheck, error) {
	if url != "" {
		l := keys.NewLazyRemoteSet(ctx, url, retry, nil)
		return l, l.Ready, nil
	}
	set, err := keys.LoadJWKSFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	return set, nil, nil
}

// workloadSource is the workload's refreshing WIT from its issuer.
func workloadSource(ctx context.Context, w ProxyWorkloadConfig) (wit.Source, error) {
	hc := &http.Client{Timeout: 30 * time.Second}
	if w.Auth == "x509svid" {
		tr, err := witRequestTransport(w.SVIDCertFile, w.SVIDKeyFile, w.BundleFile, w.ServerID, true)
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
		key, err := loadPrivateKey(w.AssertionKeyFile, nil)
		if err != nil {
			return nil, fmt.Errorf("workload.assertion_key_file: %w", err)
		}
		c.Assertion = witissuer.AssertionFunc(key, c, id, time.Minute)
	}
	return c.Source(), nil
}

func buildEgress(cfg *ProxyConfig, self identifier.ID, src wit.Source, wits *wit.Validator, logger *slog.Logger) (http.Handler, error) {
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

func buildIngress(ctx context.Context, cfg *ProxyConfig, s *kit.Server, src wit.Source, wits *wit.Validator, retry time.Duration, logger *slog.Logger) (http.Handler, store.Replay, []service.ReadyCheck, error) {
	in := cfg.Ingress
	replay, storeReady, closeStore, err := kit.OpenStore(in.Store, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	s.OnClose(closeStore)
	var checks []service.ReadyCheck
	if storeReady != nil {
		checks = append(checks, storeReady)
	}
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
		ks, ready, err := proxyKeySource(ctx, retry, "ingress.txn_tokens", t.JWKSURL, t.JWKSFile)
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
		ks, ready, err := proxyKeySource(ctx, retry, "ingress.boundary.access_tokens", a.JWKSURL, a.JWKSFile)
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
		records, closeRecords, err := openRecords(in.Store)
		if err != nil {
			return nil, nil, nil, err
		}
		s.OnClose(closeRecords)
		opts = append(opts, dialog.WithRegistry(dialog.NewRegistry(records)))
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
		records, closeRecords, err := openRecords(in.Store)
		if err != nil {
			return nil, nil, nil, err
		}
		s.OnClose(closeRecords)
		var hosts []dialog.Host
		for _, name := range in.HandoffHosts {
			h, _ := parseHost(name)
			hosts = append(hosts, h)
		}
		// An offer's grant must name the credential that came with it (section 5.7).
		hr = handoff.NewReceiver(cfg.Workload.ID, trust, records, handoff.WithStatusKey(key), handoff.WithGrantRequired())
		opts = append(opts, dialog.WithHandoffsIn(hr, hosts...))
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

// loadHandoff reads the workload's handoff key and the trust document.
func loadHandoff(h *ProxyHandoffConfig) (*keys.PrivateKey, handoff.Trust, error) {
	key, err := loadPrivateKey(h.KeyFile, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("handoff.key_file: %w", err)
	}
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

// openRecords opens the dialog records of a stateful ingress in the replay store's
// backend.
func openRecords(sc kit.StoreConfig) (store.Records, func(), error) {
	if sc.Type != "redis" {
		return store.NewMemoryRecords(), func() {}, nil
	}
	client, err := kit.RedisClient(sc.Redis)
	if err != nil {
		return nil, nil, err
	}
	var opts []redisstore.Option
	if sc.Redis.Prefix != "" {
		opts = append(opts, redisstore.WithPrefix(sc.Redis.Prefix))
	}
	if sc.Redis.Timeout > 0 {
		opts = append(opts, redisstore.WithTimeout(sc.Redis.Timeout))
	}
	return redisstore.NewRecords(client, opts...), func() { _ = client.Close() }, nil
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
