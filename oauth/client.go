package oauth

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// MaxResponseSize bounds what a TokenClient reads of a token endpoint's answer.
const MaxResponseSize = 64 << 10

// TokenClient is a workload's side of one token endpoint: it posts a token request form
// (RFC 6749 section 3.2) authenticated with the workload's WIT and a fresh proof of
// possession of its key, and reads the answer. What the form asks for is the caller's:
// txntoken.Client builds Txn-Token requests on it, chaining.Client grant requests and
// their redemption. A configured TokenClient is safe for concurrent use.
type TokenClient struct {
	// TokenEndpoint is the token endpoint URL (metadata token_endpoint).
	TokenEndpoint string
	// ProofAudience is the recipient the proof names (default TokenEndpoint).
	ProofAudience string
	// HTTPClient carries the requests (default http.DefaultClient). Its transport must
	// not add credentials of its own.
	HTTPClient *http.Client
	// Credentials: a WIT source, or a fixed WIT and the key its cnf names.
	WITSource wit.Source
	WIT       string
	Key       *keys.PrivateKey
	// Proof is proof.HTTPSig (the zero value: it also signs the form through
	// Content-Digest) or proof.WPT.
	Proof proof.Method
	// Credential, when set, replaces the WIT and its proof: the client authenticates
	// as a server outside WIMSE knows it (clientcred.go).
	Credential ClientCredential
	// Now is the clock of the proofs (default time.Now).
	Now func() time.Time
	// Unavailable is the code of a request that could not be completed: the endpoint
	// did not answer, its answer could not be read, or it answered 5xx without a code
	// of ours. Default errcode.ASUnavailable; a TTS client sets errcode.TTSUnavailable.
	Unavailable errcode.Code
}

// Token posts form to the token endpoint and returns its token response. A refusal is
// an *errcode.Error: the server's code and kind when the error document carries one of
// ours (see ReadError), could-not-be-completed with c.Unavailable when the request
// could not be completed. The caller checks the issued token's type: what fits depends
// on the grant.
func (c *TokenClient) Token(ctx context.Context, form url.Values) (*TokenResponse, error) {
	if c.TokenEndpoint == "" {
		return nil, errcode.New(errcode.InvalidRequest, "the client has no token endpoint")
	}
	h := http.Header{}
	if c.Credential != nil {
		// The form is the caller's: the credential goes into a copy.
		cp := make(url.Values, len(form)+2)
		for k, v := range form {
			cp[k] = v
		}
		if err := c.Credential.AddTo(ctx, cp, h); err != nil {
			return nil, err
		}
		form = cp
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "token endpoint URL")
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if c.Credential == nil {
		if err := c.prove(ctx, req); err != nil {
			return nil, err
		}
	}
	unavailable := c.Unavailable
	if unavailable == "" {
		unavailable = errcode.ASUnavailable
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, errcode.Unavailable(unavailable, err, "token endpoint did not answer")
	}
	defer res.Body.Close()
	// One byte past the bound tells an oversize answer from one that fits exactly.
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseSize+1))
	if err != nil {
		return nil, errcode.Unavailable(unavailable, err, "reading the token response")
	}
	oversize := len(b) > MaxResponseSize
	if oversize {
		b = b[:MaxResponseSize]
	}
	if res.StatusCode != http.StatusOK {
		err := ReadError(res.StatusCode, b)
		if errcode.CodeOf(err) == errcode.TokenRefused && res.StatusCode >= 500 {
			return nil, errcode.Unavailable(unavailable, err, "HTTP %d", res.StatusCode)
		}
		return nil, err
	}
	if oversize {
		return nil, errcode.New(errcode.InvalidEncoding, "the token response exceeds %d bytes", MaxResponseSize)
	}
	var tr TokenResponse
	if err := netjson.DecodeObject(b, &tr); err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "the token response is not JSON")
	}
	return &tr, nil
}

// prove adds the proof of possession of the WIT key to req.
func (c *TokenClient) prove(ctx context.Context, req *http.Request) error {
	witRaw, key := c.WIT, c.Key
	if c.WITSource != nil {
		cred, err := c.WITSource.Credential(ctx)
		if err != nil {
			return err
		}
		witRaw, key = cred.WIT, cred.Key
	}
	if witRaw == "" || key == nil {
		return errcode.New(errcode.MissingCredential, "the client has no WIT and key")
	}
	aud := c.ProofAudience
	if aud == "" {
		aud = c.TokenEndpoint
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	switch c.Proof {
	case proof.HTTPSig:
		_, err := httpsig.NewSigner(key, witRaw, httpsig.WithClock(now)).SignRequest(req, aud)
		return err
	case proof.WPT:
		return wpt.SignRequest(req, key, witRaw, aud, wpt.RequestOptions{}, wpt.WithClock(now))
	}
	return errcode.New(errcode.InvalidRequest, "unknown proof method %d (httpsig or wpt)", int(c.Proof))
}

// ReadError turns a token endpoint's error document (RFC 6749 section 5.2) back into
// an *errcode.Error. When the document carries a code of ours (the code and kind
// members of ErrorResponse) the error has that code and kind; a plain RFC 6749 error
// of a foreign server, or an answer that is no error document, is
// errcode.TokenRefused (could not be completed for a 503), with the OAuth error in the
// detail.
func ReadError(status int, body []byte) error {
	var d ErrorResponse
	if err := netjson.DecodeObject(body, &d); err != nil || d.Error == "" {
		if status == http.StatusServiceUnavailable {
			return errcode.Unavailable(errcode.TokenRefused, nil, "HTTP %d without an error document", status)
		}
		return errcode.New(errcode.TokenRefused, "HTTP %d without an error document", status)
	}
	code := errcode.Code(d.Code)
	if !isCode(d.Code) {
		code = errcode.TokenRefused
	}
	kind := errcode.Failed
	if d.Kind == errcode.Incomplete.String() {
		kind = errcode.Incomplete
	}
	return &errcode.Error{Code: code, Kind: kind, Detail: "token endpoint: " + clientClip(d.Error) + ": " + clientClip(d.ErrorDescription)}
}

// isCode reports whether s has the shape of an errcode.Code: 1 to 64 lower-case
// letters, digits and underscores. Anything else a server sends as its code is not one
// of ours, and must not reach logs and metrics as one.
func isCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < 'a' || b > 'z') && (b < '0' || b > '9') && b != '_' {
			return false
		}
	}
	return true
}

// clientClip bounds a server-supplied string quoted in an error.
func clientClip(s string) string {
	const max = 256
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
