package witissuer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/wit"
)

// timeNow is the client's default clock.
var timeNow = time.Now

// maxResponseSize bounds what the client reads from an issuer.
const maxResponseSize = 64 << 10

// Client asks a WIT issuer for WITs. Fill Endpoint and Audience directly, or use
// NewClient to take them from the issuer's metadata. A Client is safe for concurrent use
// once configured.
type Client struct {
	// Endpoint is the URL of the issuance endpoint (metadata wit_endpoint).
	Endpoint string
	// Audience is the issuer identifier (metadata issuer): the aud of every request.
	Audience string
	// HTTPClient carries the requests; for the x509svid method its transport presents
	// the workload's SVID (see ClientTLSConfig). Default http.DefaultClient.
	HTTPClient *http.Client
	// Subject, when set, is requested instead of the authenticated identity.
	Subject string
	// TTL, when positive, is the requested lifetime.
	TTL time.Duration
	// Assertion, when set, makes the client assertion for each request (the assertion
	// method); see AssertionFunc.
	Assertion func(ctx context.Context) (string, error)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// AssertionFunc makes a fresh client assertion per request (oauth.NewClientAssertion:
// iss = sub = the workload, aud = the issuer identifier, a fresh jti), signed by the
// workload's registered key, valid for lifetime (a minute when not positive; the issuer
// accepts at most 5 minutes by default).
func AssertionFunc(key *keys.PrivateKey, c *Client, workload identifier.ID, lifetime time.Duration) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		return oauth.NewClientAssertion(key, workload, c.Audience, lifetime, c.now())
	}
}

// Discover fetches an issuer's metadata from baseURL + /.well-known/wit-issuer. The
// endpoints it names must be on the origin of baseURL: metadata must not send a
// workload's credentials elsewhere.
func Discover(ctx context.Context, hc *http.Client, baseURL string) (*Metadata, error) {
	base, err := url.Parse(baseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, errcode.New(errcode.InvalidRequest, "issuer URL must be an absolute http(s) URL")
	}
	u := *base
	u.Path = joinPath(base.Path, PathMetadata)
	u.RawQuery, u.Fragment = "", ""
	var md Metadata
	if err := getJSON(ctx, client(hc), u.String(), &md); err != nil {
		return nil, err
	}
	for _, link := range []string{md.WITEndpoint, md.JWKSURI} {
		l, err := url.Parse(link)
		if err != nil || l.Scheme != base.Scheme || l.Host != base.Host {
			return nil, errcode.New(errcode.IssuerMismatch, "metadata link %q is not on %s://%s", errcode.Cut(link), base.Scheme, base.Host)
		}
	}
	if md.Issuer == "" {
		return nil, errcode.New(errcode.IssuerMismatch, "metadata names no issuer")
	}
	return &md, nil
}

// NewClient discovers the issuer at baseURL and returns a Client for it.
func NewClient(ctx context.Context, hc *http.Client, baseURL string) (*Client, *Metadata, error) {
	md, err := Discover(ctx, hc, baseURL)
	if err != nil {
		return nil, nil, err
	}
	return &Client{Endpoint: md.WITEndpoint, Audience: md.Issuer, HTTPClient: hc}, md, nil
}

// Request asks for a WIT certifying the public half of key.
func (c *Client) Request(ctx context.Context, key *keys.PrivateKey) (*Response, error) {
	reqJWS, err := NewRequestJWS(key, RequestParams{Audience: c.Audience, Subject: c.Subject, TTL: c.TTL, Now: c.now()})
	if err != nil {
		return nil, err
	}
	body := RequestBody{Request: reqJWS}
	if c.Assertion != nil {
		a, err := c.Assertion(ctx)
		if err != nil {
			return nil, err
		}
		body.ClientAssertionType, body.ClientAssertion = ClientAssertionTypeJWTBearer, a
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "issuer endpoint")
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	res, err := client(c.HTTPClient).Do(hr)
	if err != nil {
		return nil, transportError(err, "WIT request")
	}
	defer res.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(res.Body, maxResponseSize+1))
	if err != nil {
		return nil, errcode.Unavailable(errcode.IssuerUnavailable, err, "reading the issuer's answer")
	}
	if len(rb) > maxResponseSize {
		return nil, errcode.Unavailable(errcode.IssuerUnavailable, nil, "issuer's answer over %d octets", maxResponseSize)
	}
	if res.StatusCode != http.StatusOK {
		return nil, problem.Read(res.StatusCode, rb)
	}
	var out Response
	if err := netjson.DecodeObject(rb, &out); err != nil || out.WIT == "" {
		return nil, errcode.Unavailable(errcode.IssuerUnavailable, err, "issuer's answer is not a WIT response")
	}
	if err := checkIssued(out.WIT, out.ExpiresAt, key); err != nil {
		return nil, err
	}
	return &out, nil
}

// checkIssued makes sure the WIT certifies key. It does not verify the issuer's
// signature (the workload is not the WIT's relying party); it only keeps a workload
// from holding a WIT whose proofs it cannot make.
func checkIssued(tok string, expiresAt int64, key *keys.PrivateKey) error {
	t, err := jose.Parse(tok, 0)
	if err != nil {
		return err
	}
	var c wit.Claims
	if err := netjson.DecodeClaims(t.Payload, &c); err != nil {
		return err
	}
	got, err := wit.ConfirmationKey(c.Cnf, nil)
	if err != nil {
		return err
	}
	want, _ := key.Public().ConfirmationJSON()
	have, _ := got.ConfirmationJSON()
	if !bytes.Equal(want, have) {
		return errcode.New(errcode.InvalidClaim, "the issued WIT does not certify the requested key")
	}
	if c.Exp == nil || int64(*c.Exp) != expiresAt {
		return errcode.New(errcode.InvalidClaim, "the issued WIT's exp is not the expires_at of the answer")
	}
	return nil
}

// Fetch is Request shaped as a wit.FetchFunc.
func (c *Client) Fetch(ctx context.Context, key *keys.PrivateKey) (string, time.Time, error) {
	r, err := c.Request(ctx, key)
	if err != nil {
		return "", time.Time{}, err
	}
	return r.WIT, time.Unix(r.ExpiresAt, 0), nil
}

// Source returns a refreshing wit.Source that obtains its WITs from this issuer, with a
// fresh key for each (WIT-3).
func (c *Client) Source(opts ...wit.SourceOption) *wit.RefreshingSource {
	return wit.NewRefreshingSource(c.Fetch, opts...)
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return timeNow()
}

func client(hc *http.Client) *http.Client {
	if hc == nil {
		return http.DefaultClient
	}
	return hc
}

func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return errcode.Wrap(errcode.InvalidRequest, err, "URL")
	}
	req.Header.Set("Accept", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return transportError(err, "GET "+u)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxResponseSize+1))
	if err != nil || len(b) > maxResponseSize {
		return errcode.Unavailable(errcode.IssuerUnavailable, err, "reading %s", u)
	}
	if res.StatusCode != http.StatusOK {
		return problem.Read(res.StatusCode, b)
	}
	if err := netjson.DecodeObject(b, v); err != nil {
		return errcode.Unavailable(errcode.IssuerUnavailable, err, "%s is not the expected JSON", u)
	}
	return nil
}

func joinPath(base, p string) string {
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	return base + p
}

// transportError keeps the code of a refusal made during the TLS handshake (the issuer's
// certificate did not verify, or named another workload); anything else is an issuer
// that could not be reached.
func transportError(err error, what string) error {
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return ce
	}
	return errcode.Unavailable(errcode.IssuerUnavailable, err, "%s", what)
}
