package revokeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/revoke"
)

// Client calls the API as an administrator: each request signed with the operator's
// WIT and key (httpsig.Signer), its audience the API's URL. HTTP is the client for the
// transport (mutual TLS, when the operator authenticates with a certificate instead:
// then Signer may be nil).
type Client struct {
	// URL is the API's URL: the admin listener's base URL followed by Path.
	URL    string
	Signer *httpsig.Signer
	HTTP   *http.Client
}

// Revoke asks for the revocation req.
func (c *Client) Revoke(ctx context.Context, req Request) (*revoke.Revocation, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "revocation request")
	}
	var out revoke.Revocation
	return &out, c.do(ctx, http.MethodPost, c.URL, b, http.StatusCreated, &out)
}

// Lift lifts the revocation of kind and id; it reports whether one was live.
func (c *Client) Lift(ctx context.Context, kind revoke.Kind, id string) (bool, error) {
	var out Deleted
	u := c.URL + "?" + url.Values{"kind": {string(kind)}, "id": {id}}.Encode()
	return out.Deleted, c.do(ctx, http.MethodDelete, u, nil, http.StatusOK, &out)
}

// List lists the live revocations.
func (c *Client) List(ctx context.Context) ([]revoke.Revocation, error) {
	var out List
	return out.Revocations, c.do(ctx, http.MethodGet, c.URL, nil, http.StatusOK, &out)
}

// NewSession asks for a one-time login link to the operator's page (POST
// SessionsPath beside the API's URL, signed with the API's URL as its audience, like
// every request of this client). The link works once, within a minute: open it in the
// browser at once and press its Sign in button (opening it spends nothing).
func (c *Client) NewSession(ctx context.Context) (*Session, error) {
	base, ok := strings.CutSuffix(c.URL, Path)
	if !ok {
		return nil, errcode.New(errcode.InvalidRequest, "the admin URL %q does not end in %s", errcode.Cut(c.URL), Path)
	}
	var out Session
	return &out, c.do(ctx, http.MethodPost, base+SessionsPath, []byte("{}"), http.StatusCreated, &out)
}

func (c *Client) do(ctx context.Context, method, u string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return errcode.Wrap(errcode.InvalidRequest, err, "admin URL")
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Signer != nil {
		aud, _, _ := strings.Cut(c.URL, "?")
		if _, err := c.Signer.SignRequest(req, aud); err != nil {
			return err
		}
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the admin API did not answer")
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the admin API's answer could not be read")
	}
	if res.StatusCode != want {
		return problem.Read(res.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the admin API's answer is not JSON")
	}
	return nil
}
