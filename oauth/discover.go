package oauth

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// discoveryWellKnown is the RFC 8414 section 3 well-known URI suffix.
const discoveryWellKnown = "/.well-known/oauth-authorization-server"

// Discover fetches the RFC 8414 metadata of the authorization server whose issuer
// identifier is issuer and checks it: the well-known suffix goes between host and path
// (section 3.1), the document's issuer must be issuer (section 3.3), and token_endpoint
// and jwks_uri must be on the issuer's origin, so that metadata cannot point trust
// elsewhere. hc carries the request (default http.DefaultClient).
//
// An issuer that is not an absolute http(s) URL without query or fragment is
// invalid_request; a server that does not answer 200 is as_unavailable (could not be
// completed); a document that is not JSON is invalid_encoding; a wrong issuer or a link
// off the origin is issuer_mismatch.
func Discover(ctx context.Context, hc *http.Client, issuer string) (*Metadata, error) {
	base, err := url.Parse(issuer)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.RawQuery != "" || base.Fragment != "" {
		return nil, errcode.New(errcode.InvalidRequest, "the issuer identifier must be an absolute http(s) URL without query or fragment")
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	u := *base
	u.Path = discoveryWellKnown + strings.TrimSuffix(base.Path, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "metadata request")
	}
	req.Header.Set("Accept", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return nil, errcode.Unavailable(errcode.ASUnavailable, err, "fetching the metadata")
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseSize))
	if err != nil || res.StatusCode != http.StatusOK {
		return nil, errcode.Unavailable(errcode.ASUnavailable, err, "metadata: HTTP %d", res.StatusCode)
	}
	var md Metadata
	if err := netjson.DecodeObject(b, &md); err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "metadata")
	}
	if md.Issuer != strings.TrimSuffix(issuer, "/") && md.Issuer != issuer {
		return nil, errcode.New(errcode.IssuerMismatch, "metadata issuer %q is not %q", clientClip(md.Issuer), clientClip(issuer))
	}
	for _, link := range []string{md.TokenEndpoint, md.JWKSURI} {
		l, err := url.Parse(link)
		if err != nil || l.Scheme != base.Scheme || l.Host != base.Host {
			return nil, errcode.New(errcode.IssuerMismatch, "metadata link %q is not on %s://%s", clientClip(link), base.Scheme, base.Host)
		}
	}
	return &md, nil
}
