package authzen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// Defaults of a Client.
const (
	DefaultTimeout     = 2 * time.Second
	DefaultMetadataTTL = time.Hour
)

// Client asks one PDP. It is safe for concurrent use.
type Client struct {
	pdp         string // the PDP identifier (policy_decision_point)
	metadataURL string
	evalURL     string // configured; "" to discover
	hc          *http.Client
	timeout     time.Duration
	now         func() time.Time
	maxResponse int64
	metadataTTL time.Duration
	cache       *cache
	cacheSize   int
	cacheTTL    time.Duration
	escapeIDs   bool
	rule        string // "authzen " + pdp

	metaMu          sync.Mutex
	discovered      string
	discoveredUntil time.Time
}

// Option configures a Client.
type Option func(*Client)

// WithClock sets the clock of the cache and the metadata lifetime (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// WithHTTPClient sets the HTTP client (default: one with no redirects followed). Its
// CheckRedirect is replaced: a PDP's redirect is an error, never followed.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithTimeout bounds each call to the PDP, discovery included (default DefaultTimeout).
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithCache keeps up to size decisions, each for ttl (default: no cache). A decision,
// allow or deny, is served from the cache until its ttl has passed; an error never is.
func WithCache(size int, ttl time.Duration) Option {
	return func(c *Client) { c.cacheSize, c.cacheTTL = size, ttl }
}

// WithMetadataURL fetches the metadata from u instead of the URL derived from the PDP
// identifier (for a PDP that publishes it elsewhere, as OpenFGA does per store); the
// document's policy_decision_point must still equal the identifier.
func WithMetadataURL(u string) Option { return func(c *Client) { c.metadataURL = u } }

// WithEvaluationEndpoint skips discovery and asks u (the access_evaluation_endpoint).
func WithEvaluationEndpoint(u string) Option { return func(c *Client) { c.evalURL = u } }

// WithEscapedIDs percent-encodes the subject and resource ids (EscapeID) for a PDP
// that does not take every string as an id: OpenFGA refuses ":", "#", "@" and white
// space in them, and so every WIMSE and SPIFFE identifier.
func WithEscapedIDs() Option { return func(c *Client) { c.escapeIDs = true } }

// WithMaxResponse bounds a response body (default DefaultMaxResponse).
func WithMaxResponse(n int64) Option { return func(c *Client) { c.maxResponse = n } }

// WithMetadataTTL sets how long discovered metadata is used (default DefaultMetadataTTL).
func WithMetadataTTL(d time.Duration) Option { return func(c *Client) { c.metadataTTL = d } }

// New returns a client of the PDP whose identifier (the policy_decision_point of its
// metadata, section 9) is pdp.
func New(pdp string, opts ...Option) (*Client, error) {
	c := &Client{pdp: pdp, timeout: DefaultTimeout, now: time.Now, maxResponse: DefaultMaxResponse, metadataTTL: DefaultMetadataTTL}
	for _, o := range opts {
		o(c)
	}
	if _, err := parsePDPURL(pdp, "the PDP identifier"); err != nil {
		return nil, err
	}
	if c.metadataURL == "" {
		u, err := MetadataURL(pdp)
		if err != nil {
			return nil, err
		}
		c.metadataURL = u
	} else if _, err := parsePDPURL(c.metadataURL, "the metadata URL"); err != nil {
		return nil, err
	}
	if c.evalURL != "" {
		if _, err := parsePDPURL(c.evalURL, "the evaluation endpoint"); err != nil {
			return nil, err
		}
	}
	switch {
	case c.timeout <= 0:
		return nil, errors.New("authzen: the timeout must be positive")
	case c.maxResponse <= 0:
		return nil, errors.New("authzen: the response bound must be positive")
	case c.cacheSize < 0 || c.cacheTTL < 0:
		return nil, errors.New("authzen: the cache size and ttl may not be negative")
	case (c.cacheSize == 0) != (c.cacheTTL == 0):
		return nil, errors.New("authzen: a cache needs both a size and a ttl")
	}
	hc := &http.Client{Transport: http.DefaultTransport}
	if c.hc != nil {
		copied := *c.hc
		hc = &copied
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = hc
	c.cache = newCache(c.cacheSize, c.cacheTTL)
	c.rule = "authzen " + pdp
	return c, nil
}

// PDP is the PDP identifier, for the log and the Rule of a decision.
func (c *Client) PDP() string { return c.pdp }

// CacheLen is the number of decisions cached.
func (c *Client) CacheLen() int { return c.cache.len() }

// Evaluate asks the PDP about r (section 6) and returns its decision: Allow is the
// decision, Rule "authzen " and the PDP identifier, Reason what the PDP's response
// context said (for the log only). A decision is served from the cache when one for
// the same request is there and fresh. Any failure (discovery, transport, timeout, a
// status other than 200, a malformed or oversized body) is an error and no decision:
// the caller refuses.
func (c *Client) Evaluate(ctx context.Context, r *EvaluationRequest) (authz.Decision, error) {
	rule := c.rule
	if err := r.check(); err != nil {
		return authz.Decision{Rule: rule}, err
	}
	if c.escapeIDs {
		escaped := *r
		escaped.Subject.ID, escaped.Resource.ID = EscapeID(r.Subject.ID), EscapeID(r.Resource.ID)
		r = &escaped
	}
	body, err := json.Marshal(r)
	if err != nil {
		return authz.Decision{Rule: rule}, fmt.Errorf("authzen: encoding the request: %w", err)
	}
	// The endpoint is known without a call except on first use and after the metadata's
	// lifetime; the timeout (a timer) is set only when the PDP is really asked.
	ep, err := c.cachedEndpoint()
	if ep == "" {
		dctx, cancel := context.WithTimeout(ctx, c.timeout)
		ep, err = c.endpoint(dctx)
		cancel()
	}
	if err != nil {
		return authz.Decision{Rule: rule}, err
	}
	key := keyOf(ep, body)
	if e, ok := c.cache.get(key, c.now()); ok {
		return authz.Decision{Allow: e.allow, Rule: rule, Reason: e.reason}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep, bytes.NewReader(body))
	if err != nil {
		return authz.Decision{Rule: rule}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.do(req)
	if err != nil {
		return authz.Decision{Rule: rule}, fmt.Errorf("authzen: evaluation at %s: %w", ep, err)
	}
	allow, reason, err := ParseEvaluationResponse(resp)
	if err != nil {
		return authz.Decision{Rule: rule}, fmt.Errorf("authzen: evaluation at %s: %w", ep, err)
	}
	c.cache.put(key, allow, reason, c.now())
	return authz.Decision{Allow: allow, Rule: rule, Reason: reason}, nil
}

// do sends req and returns the body of a 200 response, read up to the bound.
func (c *Client) do(req *http.Request) ([]byte, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Drain a little so that the connection can be reused; the body is not shown.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	if resp.ContentLength > c.maxResponse {
		return nil, fmt.Errorf("a body of %d bytes, over the bound of %d", resp.ContentLength, c.maxResponse)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxResponse+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > c.maxResponse {
		return nil, fmt.Errorf("a body over the bound of %d bytes", c.maxResponse)
	}
	return body, nil
}

// decodeObject reads a JSON object strictly (exact member names, none twice).
func decodeObject(body []byte, v any) error {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return errors.New("not a JSON object")
	}
	return netjson.DecodeObject(body, v)
}

// EscapeID percent-encodes "%", ":", "#", "@", white space and control characters in
// id (RFC 3986 style, upper-case hex), and nothing else: wimse://a.example/agent/a1
// becomes wimse%3A//a.example/agent/a1. The encoding is reversible, so distinct ids stay
// distinct.
func EscapeID(id string) string {
	n := 0
	for i := 0; i < len(id); i++ {
		if escapeByte(id[i]) {
			n++
		}
	}
	if n == 0 {
		return id
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(id)+2*n)
	for i := 0; i < len(id); i++ {
		if c := id[i]; escapeByte(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

func escapeByte(c byte) bool {
	return c == '%' || c == ':' || c == '#' || c == '@' || c <= ' ' || c == 0x7f
}
