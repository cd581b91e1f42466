package wpt

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
)

// The oth keys of a proof that binds its request (RequestOptions.BindRequest). wpt-02
// binds the fields of the request it names in oth, and leaves to an application profile
// where a key's value is found: this package's profile finds @method, @path and @query
// where RFC 9421 section 2.2 derives them (the method; the path as sent, "/" when
// empty; "?" and the query, "?" alone without one), and content-digest in its field
// (RFC 9530), which names the body. Nothing else in a WPT binds them: aud names the
// recipient, which is a fixed value on most routes, and wpt-02 section 3.3 leaves the
// method and the body unprotected.
const (
	OthMethod        = "@method"
	OthPath          = "@path"
	OthQuery         = "@query"
	OthContentDigest = "content-digest"
)

// RequestBinding is the request a proof is for, as the oth keys of a bound request
// name it: its method, path and query and its Content-Digest field.
type RequestBinding struct {
	Method, Path, Query string
	// ContentDigest is the Content-Digest field as carried; nil without one.
	ContentDigest *string
}

// requestBinding reads req as RFC 9421 derives @method, @path and @query; a repeated
// Content-Digest field is refused, as other bound fields are.
func requestBinding(req *http.Request) (*RequestBinding, error) {
	rb := &RequestBinding{Method: req.Method, Path: req.URL.EscapedPath(), Query: "?" + req.URL.RawQuery}
	if rb.Method == "" {
		rb.Method = http.MethodGet // net/http's meaning of an empty client method
	}
	if rb.Path == "" {
		rb.Path = "/"
	}
	d, err := optional(req.Header, "Content-Digest")
	if err != nil {
		return nil, err
	}
	rb.ContentDigest = d
	return rb, nil
}

// values are the oth keys rb binds and their values (content-digest only when the
// field is there).
func (rb *RequestBinding) values() map[string]string {
	m := map[string]string{OthMethod: rb.Method, OthPath: rb.Path, OthQuery: rb.Query}
	if rb.ContentDigest != nil {
		m[OthContentDigest] = *rb.ContentDigest
	}
	return m
}

// isRequestKey reports whether an oth key is one of a bound request's.
func isRequestKey(k string) bool {
	return k == OthMethod || k == OthPath || k == OthQuery || k == OthContentDigest
}

// checkRequest checks the request keys that oth names against rb. A key oth does not
// name binds nothing (the sender did not bind the request); one it names must match,
// and content-digest needs its field. Without rb (Verify given no request) a request key
// is not understood, and wpt-02 section 2 refuses a WPT with an oth entry not
// understood.
func checkRequest(oth map[string]string, rb *RequestBinding) error {
	var vals map[string]string
	if rb != nil {
		vals = rb.values()
	}
	for _, k := range [...]string{OthMethod, OthPath, OthQuery, OthContentDigest} {
		h, named := oth[k]
		if !named {
			continue
		}
		val, ok := vals[k]
		switch {
		case rb == nil:
			return errcode.New(errcode.OtherTokenBindingMismatch, "oth names %q, and no request was given to check it against", k)
		case !ok:
			return errcode.New(errcode.OtherTokenBindingMismatch, "oth names %q, which the request does not carry", k)
		case h != boundHash(val):
			return errcode.New(errcode.OtherTokenBindingMismatch, "oth[%q] does not match the request", k)
		}
	}
	return nil
}

// BindsContent reports whether the proof binds the request's Content-Digest field, and
// through it the body (RequestOptions.BindRequest).
func (c *Claims) BindsContent() bool {
	_, ok := c.Oth[OthContentDigest]
	return ok
}

// BindsRequest reports whether the proof binds the method, path, query and body of its
// request (RequestOptions.BindRequest).
func (c *Claims) BindsRequest() bool {
	for _, k := range [...]string{OthMethod, OthPath, OthQuery, OthContentDigest} {
		if _, ok := c.Oth[k]; !ok {
			return false
		}
	}
	return true
}

// bindRequest prepares req for a proof that binds it: Content-Digest is set over the
// body (read and put back, through GetBody when set, so that a retry can replay it),
// even an empty one, so that a body added on the way is caught.
func bindRequest(req *http.Request) (*RequestBinding, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		rc := req.Body
		if req.GetBody != nil {
			var err error
			if rc, err = req.GetBody(); err != nil {
				return nil, errcode.Wrap(errcode.InvalidRequest, err, "the request body cannot be read to bind it")
			}
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "the request body cannot be read to bind it")
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	d, err := httpsig.ContentDigest(body)
	if err != nil {
		return nil, err
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Digest", d)
	return requestBinding(req)
}

// Pending is a request whose WPT verified over its fields and whose body, when the
// proof binds it, is not read yet; its jti is not claimed yet either.
type Pending struct {
	v   *Verifier
	req *http.Request
	res *Result
}

// Result is what verified so far: the sender's WIT and the proof's claims.
func (p *Pending) Result() *Result { return p.res }

// Finish completes VerifyRequest: when the proof binds Content-Digest, the body is read
// within the verifier's bound (WithMaxBodySize) and compared with it (the codes of
// httpsig's SIG-4 step: content_digest_mismatch, body_too_large), req.Body then being
// the octets checked; then the jti is claimed, last, so that only a request
// authenticated content and all spends one.
func (p *Pending) Finish(ctx context.Context) (*Result, error) {
	if p.res.Claims.BindsContent() {
		if err := httpsig.CheckRequestContent(p.req, p.v.maxBody); err != nil {
			return nil, err
		}
	}
	if err := p.v.claim(ctx, p.res); err != nil {
		return nil, err
	}
	return p.res, nil
}
