package proxyservice

import (
	"fmt"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Config is the configuration file of "dialogtrust proxy" (docs/proxy.md): the
// operational listener and the shared members of the services (Base), the workload
// whose WIT the proxy holds, the trust in other workloads' WITs, and an egress
// section, an ingress section, or both.
type Config struct {
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

	source kit.Source // the file read (SetSource), for errors naming file and line
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
	// PKCS11 keeps the assertion key in a PKCS#11 token, in place of
	// assertion_key_file (keys.pkcs11's vocabulary; label default
	// "dialogtrust-proxy-assertion"): pkcs11.go.
	PKCS11 *kit.PKCS11KeysConfig `yaml:"pkcs11"`
	// WorkloadAPI takes the X.509-SVID and the issuer's bundle from the SPIFFE Workload
	// API, following its rotations; it needs server_id.
	WorkloadAPI *ProxyWorkloadAPIConfig `yaml:"workload_api"`
	ServerID    string                  `yaml:"server_id"`

	assertionKey *keys.PrivateKey // the key of assertion_key_file or pkcs11 (openProxyKeys)
}

// ProxyHandoffConfig: the key that signs the workload's handoff offers and statuses,
// and the trust document binding other agents' keys to their AgentIds
// (handoff.ParseTrust: a JSON object mapping each AgentId to a JWK Set).
type ProxyHandoffConfig struct {
	KeyFile   string `yaml:"key_file"`
	TrustFile string `yaml:"trust_file"`
	// PKCS11 keeps the handoff key in a PKCS#11 token instead (in place of key_file;
	// label default "dialogtrust-proxy-handoff"): pkcs11.go.
	PKCS11 *kit.PKCS11KeysConfig `yaml:"pkcs11"`

	key *keys.PrivateKey // the key of key_file or pkcs11, opened once (openProxyKeys)
}

// ProxyJWKSConfig: one trust domain's WIT issuer keys, by JWKS URL or file.
type ProxyJWKSConfig struct {
	TrustDomain string `yaml:"trust_domain"`
	kit.JWKS    `yaml:",inline"`
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
	Secret kit.InlineSecret[peerClientSecret] `yaml:"secret"`
}

// peerClientSecret is the secret member of peer_client (kit.InlineSecret).
type peerClientSecret struct{}

func (peerClientSecret) SecretMember() (string, string, string) {
	return "peer_client.secret", "secret_file", "secret_env"
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
	// Authorize are allow rules in CEL over what the ingress verified and the host
	// protocol's operation (authorize.go, issue 25): the first that holds lets the
	// request through; when none does it is refused (not_authorized), and a rule that
	// cannot be evaluated refuses (decision_unavailable).
	Authorize []AuthorizeRule `yaml:"authorize"`
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
	// AuthZEN, when set, is a policy decision point asked about every verified request
	// before it reaches the application (issue 25; openIngressDecider).
	AuthZEN *kit.AuthZENConfig `yaml:"authzen"`
	// ResourceMetadata is the protected resource metadata the ingress publishes (RFC
	// 9728; metadata.go).
	ResourceMetadata *IngressResourceMetadataConfig `yaml:"resource_metadata"`
	// Revocations refuses requests in what the trust domain's operator revoked at the
	// TTS (issue 26; dialog.WithRevocations), read from store (which must be the
	// TTS's Redis).
	Revocations kit.RevocationsConfig `yaml:"revocations"`
	// Audit writes one audit record per request the ingress answers (issue 26;
	// audit.go).
	Audit *IngressAuditConfig `yaml:"audit"`
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
	kit.JWKS `yaml:",inline"`
	Audience string `yaml:"audience"`
}

// ProxyTLSConfig: a serving certificate and its key (PEM files).
type ProxyTLSConfig struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// ProxyTxnTrustConfig: the keys Txn-Tokens are verified with.
type ProxyTxnTrustConfig struct {
	kit.JWKS `yaml:",inline"`
	Audience string `yaml:"audience"`
}

// EnvPrefix starts every environment override of the proxy.
const EnvPrefix = "DIALOGTRUST_PROXY_"

const proxyDefaultListen = "127.0.0.1:9480"

// configSpec reads the configuration like the services do: the file named by --config
// or DIALOGTRUST_PROXY_CONFIG (there is no default: the runner refuses to start without
// one), then the environment, then the flags.
var configSpec = kit.Spec[Config]{
	Name: "proxy", EnvPrefix: EnvPrefix,
	Env: append([]kit.EnvVar[Config]{
		{Name: "LISTEN", Member: "listen"},
		{Name: "TRUST_DOMAINS", Member: "trust_domains"},
		{Name: "LOG_LEVEL", Member: "log.level"},
		{Name: "LOG_FORMAT", Member: "log.format"},
		{Name: "WORKLOAD_ID", Member: "workload.id"},
		{Name: "WIT_ISSUER", Member: "workload.wit_issuer"},
		{Name: "EGRESS_LISTEN", Set: func(c *Config, v string) error {
			if c.Egress == nil {
				return fmt.Errorf("the configuration has no egress section")
			}
			c.Egress.Listen = v
			return nil
		}},
		{Name: "INGRESS_LISTEN", Set: func(c *Config, v string) error {
			if c.Ingress == nil {
				return fmt.Errorf("the configuration has no ingress section")
			}
			c.Ingress.Listen = v
			return nil
		}},
		{Name: "INGRESS_UPSTREAM", Set: func(c *Config, v string) error {
			if c.Ingress == nil {
				return fmt.Errorf("the configuration has no ingress section")
			}
			c.Ingress.Upstream = v
			return nil
		}},
	}, kit.RedisEnv("INGRESS_", func(c *Config) (*kit.StoreConfig, error) {
		if c.Ingress == nil {
			return nil, fmt.Errorf("the configuration has no ingress section")
		}
		return &c.Ingress.Store, nil
	})...),
	Flags: []kit.Flag{
		{Name: "listen", Member: "listen", Usage: "operational listener host:port (/healthz, /readyz, /metrics)"},
		{Name: "log-level", Member: "log.level", Usage: "debug, info, warn or error"},
		{Name: "log-format", Member: "log.format", Usage: "json (the default) or text"},
	},
}
