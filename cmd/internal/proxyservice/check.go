package proxyservice

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// checkProxy applies the defaults and checks what needs nothing opened.
func checkProxy(cfg *Config) error {
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
	needWIT := needsWIT(cfg)
	if needWIT {
		if w.WITIssuer == "" {
			return fmt.Errorf("workload.wit_issuer: required")
		}
		switch w.Auth {
		case "development":
		case "assertion":
			if err := checkKeySource("workload", "assertion_key_file", w.AssertionKeyFile, w.PKCS11, assertionKeyName); err != nil {
				return err
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
		if t.TrustDomain == "" || !t.JWKS.One() {
			return fmt.Errorf("wits[%s]: a trust_domain and one of jwks_url, jwks_file", t.TrustDomain)
		}
	}
	if err := checkProxyKeys(cfg); err != nil {
		return err
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
				return fmt.Errorf("egress.routes[%d].upstream: %w", i, err)
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
		if in.AuthZEN != nil {
			if err := in.AuthZEN.Check("ingress.authzen"); err != nil {
				return err
			}
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
		if t := in.TxnTokens; t != nil && !t.JWKS.One() {
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
		if err := in.Revocations.Check("ingress.revocations", in.Store, false); err != nil {
			return err
		}
		if err := checkIngressAudit(cfg); err != nil {
			return err
		}
		if err := in.Store.Check(); err != nil {
			return fmt.Errorf("ingress.%w", err)
		}
		if err := checkIngressBoundary(in); err != nil {
			return fmt.Errorf("ingress.boundary: %w", err)
		}
		if _, err := ingressRules(cfg); err != nil {
			return err
		}
		if _, err := ingressMetadata(in); err != nil {
			return err
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
	if h == nil || (h.KeyFile == "" && h.PKCS11 == nil) || h.TrustFile == "" {
		return fmt.Errorf("delegate needs the handoff section (key_file or pkcs11, trust_file)")
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
func parseHost(s string) (hostproto.Host, error) {
	switch s {
	case "mcp":
		return hostproto.MCP, nil
	case "a2a03":
		return hostproto.A2A03, nil
	case "a2a10":
		return hostproto.A2A10, nil
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
	case a.Issuer == "" || !a.JWKS.One():
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
