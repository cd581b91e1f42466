package proxyservice

import (
	"fmt"
	"net"
	"net/url"
	"slices"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// checkRouteSigners checks whose signed responses a route believes (issue 22 point 2):
// response_signers of the route's own trust domain, workload.id's, or for a route
// crossing a trust boundary the peer_trust_domain it must name (the linked dialog is
// there; nothing else says which domain that is).
func checkRouteSigners(r RouteConfig, workloadID string) error {
	own, err := identifier.Parse(workloadID)
	if err != nil {
		return err
	}
	td := own.TrustDomain()
	if b := r.Boundary; b != nil {
		switch b.PeerTrustDomain {
		case "":
			return fmt.Errorf("boundary.peer_trust_domain: required: the trust domain of the linked dialog, whose workloads' signed responses the route believes")
		case td:
			return fmt.Errorf("boundary.peer_trust_domain %q is the workload's own trust domain: a route crossing a trust boundary reaches another", td)
		}
		td = b.PeerTrustDomain
	}
	if _, err := agent.TrustDomainSigners(td); err != nil {
		return fmt.Errorf("boundary.peer_trust_domain: %w", err)
	}
	if len(r.ResponseSigners) == 0 {
		return nil
	}
	s, err := agent.ParseSigners(r.ResponseSigners...)
	if err != nil {
		return fmt.Errorf("response_signers: %w", err)
	}
	if s.TrustDomain() != td {
		return fmt.Errorf("response_signers: of trust domain %s, but the route's responses come from %s (a dialog does not cross a trust boundary)", s.TrustDomain(), td)
	}
	return nil
}

// proxyWarnings says which routes' requests the ingress they reach will likely refuse
// with audience_mismatch (issue 22 point 5): the recipient (wimse-aud, the WPT's aud)
// must be one of the values that ingress accepts (ingress.audiences), and a route
// without one names each request's target URI. Only an ingress in the same file can be
// compared; for every other, the warning says what it must accept.
func proxyWarnings(cfg *Config) []string {
	e := cfg.Egress
	if e == nil {
		return nil
	}
	var out []string
	for i, r := range e.Routes {
		prefix := r.Prefix
		if prefix == "" {
			prefix = "/"
		}
		target := defaultRecipient(r.Upstream)
		if r.Recipient == "" {
			out = append(out, fmt.Sprintf("egress.routes[%d] (prefix %s) has no recipient: each request names its target URI as its recipient (wimse-aud, or the WPT's aud): %s for the prefix itself, and that URI with the rest of the agent's path after it for the others, without the query. The receiver behind the upstream refuses every one its audiences do not list (audience_mismatch): list them there (ingress.audiences of a dialogtrust proxy), or set recipient to the one value it lists",
				i, prefix, target))
		}
		in := cfg.Ingress
		if in == nil || !sameListener(r.Upstream, in.Listen) {
			continue
		}
		aud, what := r.Recipient, "recipient"
		if aud == "" {
			aud, what = target, "recipient (the target URI, for the prefix itself)"
		}
		if !slices.Contains(in.Audiences, aud) {
			out = append(out, fmt.Sprintf("egress.routes[%d] (prefix %s) reaches this configuration's ingress (%s), whose audiences %q do not list its %s %q: the ingress refuses its requests with audience_mismatch",
				i, prefix, in.Listen, in.Audiences, what, aud))
		}
	}
	return out
}

// defaultRecipient is what agent.Transport names a request to upstream itself: the
// target URI without query, "/" for an empty path.
func defaultRecipient(upstream string) string {
	u, err := url.Parse(upstream)
	if err != nil {
		return upstream
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}

// sameListener reports whether upstream reaches the listener at listen (host:port): the
// same port, and the same host, or a listener on every address, or both on loopback.
func sameListener(upstream, listen string) bool {
	u, err := url.Parse(upstream)
	if err != nil {
		return false
	}
	lh, lp, err := net.SplitHostPort(listen)
	if err != nil || lp == "0" {
		return false
	}
	up := u.Port()
	if up == "" {
		up = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if up != lp {
		return false
	}
	loopback := func(h string) bool {
		ip := net.ParseIP(h)
		return h == "localhost" || ip != nil && ip.IsLoopback()
	}
	uh := u.Hostname()
	return uh == lh || lh == "" || lh == "0.0.0.0" || lh == "::" || loopback(uh) && loopback(lh)
}
