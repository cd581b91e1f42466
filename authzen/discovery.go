package authzen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// WellKnownPath is the well-known URI string of the PDP metadata (section 9).
const WellKnownPath = "/.well-known/authzen-configuration"

// MetadataURL is where a PDP whose identifier is pdp publishes its metadata: the
// well-known URI string inserted between the host and the path (section 9, as RFC 8414
// section 3 does for authorization servers).
func MetadataURL(pdp string) (string, error) {
	u, err := parsePDPURL(pdp, "the PDP identifier")
	if err != nil {
		return "", err
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("authzen: the PDP identifier has no query or fragment")
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	u.Path, u.RawPath = "", ""
	return u.String() + WellKnownPath + path, nil
}

// parsePDPURL accepts an absolute http or https URL with a host.
func parsePDPURL(s, what string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("authzen: %s: %w", what, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("authzen: %s %q is not an absolute http(s) URL without user information", what, s)
	}
	return u, nil
}

// discover fetches and validates the PDP's metadata (section 9): a 200 response within
// the size bound holding a JSON object whose policy_decision_point is identical to the
// identifier the client was configured with (else the metadata "MUST NOT be used": a
// PDP mix-up) and whose access_evaluation_endpoint is an absolute http(s) URL.
func (c *Client) discover(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.metadataURL, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	body, err := c.do(req)
	if err != nil {
		return "", fmt.Errorf("authzen: metadata %s: %w", c.metadataURL, err)
	}
	var md Metadata
	if err := decodeObject(body, &md); err != nil {
		return "", fmt.Errorf("authzen: metadata %s: %w", c.metadataURL, err)
	}
	if md.PolicyDecisionPoint != c.pdp {
		return "", fmt.Errorf("authzen: metadata %s names policy_decision_point %q, not %q", c.metadataURL, cut(md.PolicyDecisionPoint), c.pdp)
	}
	if md.AccessEvaluationEndpoint == "" {
		return "", fmt.Errorf("authzen: metadata %s has no access_evaluation_endpoint", c.metadataURL)
	}
	if _, err := parsePDPURL(md.AccessEvaluationEndpoint, "access_evaluation_endpoint"); err != nil {
		return "", err
	}
	return md.AccessEvaluationEndpoint, nil
}

// cachedEndpoint is the evaluation endpoint when it is known without a call: the
// configured one, or the discovered one while its metadata is fresh ("" otherwise).
func (c *Client) cachedEndpoint() (string, error) {
	if c.evalURL != "" {
		return c.evalURL, nil
	}
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	if c.discovered != "" && c.now().Before(c.discoveredUntil) {
		return c.discovered, nil
	}
	return "", nil
}

// endpoint is the evaluation endpoint: the configured one, or the discovered one,
// fetched on first use and again after metadataTTL. A failed discovery is not kept:
// the next evaluation tries again (and is refused meanwhile).
func (c *Client) endpoint(ctx context.Context) (string, error) {
	if c.evalURL != "" {
		return c.evalURL, nil
	}
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	now := c.now()
	if c.discovered != "" && now.Before(c.discoveredUntil) {
		return c.discovered, nil
	}
	ep, err := c.discover(ctx)
	if err != nil {
		return "", err
	}
	c.discovered, c.discoveredUntil = ep, now.Add(c.metadataTTL)
	return ep, nil
}

func cut(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
