package kit

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/dialogtrust/dialogtrust/authzen"
	"github.com/dialogtrust/dialogtrust/internal/loopback"
)

// Defaults of an authzen section.
const (
	DefaultAuthZENCacheSize = 10000
	DefaultAuthZENCacheTTL  = 30 * time.Second
)

// AuthZENConfig is an authzen section (the TTS's `authzen`, the proxy's
// `ingress.authzen`): an OpenID AuthZEN 1.0 policy decision point asked before a token
// is issued or a request reaches the application (package authzen). Documented in
// docs/tts.md and docs/proxy.md ("AuthZEN setup").
type AuthZENConfig struct {
	// URL is the PDP identifier, the policy_decision_point of its metadata, which is
	// fetched from the well-known URL derived from it unless MetadataURL names another
	// (OpenFGA publishes per store). EvaluationURL skips discovery.
	URL           string `yaml:"url"`
	MetadataURL   string `yaml:"metadata_url"`
	EvaluationURL string `yaml:"evaluation_url"`
	// Timeout bounds each call (default 2s); CacheTTL (default 30s) and CacheSize
	// (default 10000) bound the decision cache.
	Timeout   time.Duration `yaml:"timeout"`
	CacheTTL  time.Duration `yaml:"cache_ttl"`
	CacheSize int           `yaml:"cache_size"`
	// CAFile holds the CA certificates the PDP's certificate must chain to (default:
	// the system's roots).
	CAFile string `yaml:"ca_file"`
	// EscapeIDs percent-encodes ":", "#", "@", "%" and white space in the subject and
	// resource ids (authzen.WithEscapedIDs), for OpenFGA, which refuses them.
	EscapeIDs bool `yaml:"escape_ids"`
}

// SetDefaults fills the timeout and the cache bounds.
func (c *AuthZENConfig) SetDefaults() {
	if c.Timeout == 0 {
		c.Timeout = authzen.DefaultTimeout
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = DefaultAuthZENCacheTTL
	}
	if c.CacheSize == 0 {
		c.CacheSize = DefaultAuthZENCacheSize
	}
}

// Check refuses a section that could not work, or that would ask a PDP in the clear
// over the network: every URL is https, or http to a loopback address (AuthZEN
// Security Considerations: the PEP-PDP connection MUST be secured).
func (c *AuthZENConfig) Check(section string) error {
	if c.URL == "" {
		return fmt.Errorf("%s: url (the PDP identifier) is required", section)
	}
	for name, u := range map[string]string{"url": c.URL, "metadata_url": c.MetadataURL, "evaluation_url": c.EvaluationURL} {
		if u == "" {
			continue
		}
		p, err := url.Parse(u)
		if err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http") {
			return fmt.Errorf("%s.%s: %q is not an absolute http(s) URL", section, name, u)
		}
		if p.Scheme == "http" && !loopback.IsHost(p.Hostname()) {
			return fmt.Errorf("%s.%s: %q: a PDP is asked over https (http only on a loopback address)", section, name, u)
		}
	}
	if c.Timeout < 0 || c.CacheTTL < 0 || c.CacheSize < 0 {
		return fmt.Errorf("%s: timeout, cache_ttl and cache_size may not be negative", section)
	}
	_, err := authzen.New(c.URL, c.options(nil)...)
	if err != nil {
		return fmt.Errorf("%s: %w", section, err)
	}
	return nil
}

func (c *AuthZENConfig) options(now func() time.Time) []authzen.Option {
	cfg := *c
	cfg.SetDefaults()
	opts := []authzen.Option{authzen.WithTimeout(cfg.Timeout), authzen.WithCache(cfg.CacheSize, cfg.CacheTTL)}
	if now != nil {
		opts = append(opts, authzen.WithClock(now))
	}
	if c.MetadataURL != "" {
		opts = append(opts, authzen.WithMetadataURL(c.MetadataURL))
	}
	if c.EvaluationURL != "" {
		opts = append(opts, authzen.WithEvaluationEndpoint(c.EvaluationURL))
	}
	if c.EscapeIDs {
		opts = append(opts, authzen.WithEscapedIDs())
	}
	return opts
}

// OpenAuthZEN opens the section's client (now: the clock, nil for time.Now).
func OpenAuthZEN(section string, c *AuthZENConfig, now func() time.Time) (*authzen.Client, error) {
	if err := c.Check(section); err != nil {
		return nil, err
	}
	opts := c.options(now)
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s.ca_file: %w", section, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s.ca_file: no certificate in %s", section, c.CAFile)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		opts = append(opts, authzen.WithHTTPClient(&http.Client{Transport: tr}))
	}
	cl, err := authzen.New(c.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", section, err)
	}
	return cl, nil
}
