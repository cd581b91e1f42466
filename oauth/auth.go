package oauth

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wic"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// Names of the client authentication methods of a token endpoint (oauth.md 1.9): in
// configuration (auth.methods), metadata (token_endpoint_auth_methods_supported),
// metrics and logs.
const (
	MethodWPT           = "wit_wpt"
	MethodHTTPSig       = "wit_httpsig"
	MethodTLSClientAuth = "tls_client_auth"
	MethodPrivateKeyJWT = "private_key_jwt"
)

// Client is the authenticated workload of a token request: for the TTS its identifier
// becomes req_wl; identity chaining binds its WIT key.
type Client struct {
	ID identifier.ID
	// Method is the authentication method's name.
	Method string
	// Keys are the keys the workload proved it holds in this request: the WIT's
	// confirmation key, or the registered key of its client assertion. Empty for mTLS.
	Keys []*keys.PublicKey
	// WIT is the validated WIT for the WIT-based methods.
	WIT *wit.WIT

	id  string             // ID.String(), computed once per request (see IDString)
	key [1]*keys.PublicKey // backs Keys for the methods that prove one key
}

// newClient returns a client of one proven key (one allocation for the client and its
// key list). idString is ID.String() when the caller has it already, else "".
func newClient(id identifier.ID, method string, w *wit.WIT, k *keys.PublicKey, idString string) *Client {
	c := &Client{ID: id, Method: method, WIT: w, id: idString}
	if k != nil {
		c.key[0] = k
		c.Keys = c.key[:]
	}
	return c
}

// IDString returns ID.String(), building it once: the client's identifier is written
// into policy lookups, req_wl and the log line of the same request.
func (c *Client) IDString() string {
	if c.id == "" {
		c.id = c.ID.String()
	}
	return c.id
}

// Authenticator is one way for a workload to authenticate to the token endpoint
// (oauth.md 1.9; RFC 6749 section 2.3). A grant tries its authenticators in order
// (FirstPresent); the first whose credential is Present decides, and its result is
// final: a present but invalid credential is a rejection, never a reason to try a
// weaker method.
type Authenticator interface {
	Name() string
	// Present reports whether the request carries this method's credential at all.
	Present(r *http.Request, tr *TokenRequest) bool
	// Authenticate verifies the credential. Every error is an *errcode.Error. The
	// request body has been read; r.Body is a fresh reader over the same octets.
	Authenticate(ctx context.Context, r *http.Request, tr *TokenRequest) (*Client, error)
}

// FirstPresent returns the first of auths whose credential the request carries, or nil.
func FirstPresent(auths []Authenticator, r *http.Request, tr *TokenRequest) Authenticator {
	for _, a := range auths {
		if a.Present(r, tr) {
			return a
		}
	}
	return nil
}

// ByName picks authenticators by method name, in the order of names; a name none of
// auths has, or one given twice, is an error.
func ByName(auths []Authenticator, names ...string) ([]Authenticator, error) {
	out := make([]Authenticator, 0, len(names))
	for i, n := range names {
		for _, m := range names[:i] {
			if m == n {
				return nil, fmt.Errorf("oauth: authentication method %s named twice", n)
			}
		}
		var found Authenticator
		for _, a := range auths {
			if a != nil && a.Name() == n {
				found = a
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("oauth: no authentication method %s", n)
		}
		out = append(out, found)
	}
	return out, nil
}

// WPTAuth authenticates with a WIT and a WPT (wpt-02 carriage, or wpt-01's
// Workload-Proof-Token field). The WPT's jti is claimed in the verifier's replay store.
//
// A WPT does not cover the request body; the form parameters are protected by TLS only.
// Deployments that want the body signed use HTTPSigAuth, which requires Content-Digest.
type WPTAuth struct{ v *wpt.Verifier }

// NewWPTAuth wraps a WPT verifier, which must have its audiences (the token endpoint
// URL) and a replay store set.
func NewWPTAuth(v *wpt.Verifier) *WPTAuth { return &WPTAuth{v: v} }

// Name implements Authenticator.
func (*WPTAuth) Name() string { return MethodWPT }

// Present implements Authenticator: Authorization: WPT, or a Workload-Proof-Token field.
func (*WPTAuth) Present(r *http.Request, _ *TokenRequest) bool {
	if len(r.Header.Values(wpt.LegacyHeader)) > 0 {
		return true
	}
	for _, v := range r.Header.Values("Authorization") {
		if s, _, _ := cutSpace(v); strings.EqualFold(s, wpt.AuthScheme) {
			return true
		}
	}
	return false
}

// Authenticate implements Authenticator.
func (a *WPTAuth) Authenticate(ctx context.Context, r *http.Request, _ *TokenRequest) (*Client, error) {
	res, err := a.v.VerifyRequest(ctx, r, wpt.RequestOptions{})
	if err != nil {
		return nil, err
	}
	return newClient(res.WIT.Subject, MethodWPT, res.WIT, res.WIT.Key, res.WIT.SubjectString()), nil
}

// HTTPSigAuth authenticates with a WIT and a WIMSE HTTP signature. The signature must
// cover Content-Digest, so the form parameters are signed too; the nonce is claimed in
// the verifier's replay store.
type HTTPSigAuth struct{ v *httpsig.Verifier }

// NewHTTPSigAuth wraps an HTTP signature verifier, which must have its audiences, a
// replay store and `"content-digest"` among its required components (WIMSEAuthenticators
// builds one so).
func NewHTTPSigAuth(v *httpsig.Verifier) *HTTPSigAuth { return &HTTPSigAuth{v: v} }

// Name implements Authenticator.
func (*HTTPSigAuth) Name() string { return MethodHTTPSig }

// Present implements Authenticator: the request carries Signature-Input or Signature.
func (*HTTPSigAuth) Present(r *http.Request, _ *TokenRequest) bool {
	return len(r.Header.Values("Signature-Input")) > 0 || len(r.Header.Values("Signature")) > 0
}

// Authenticate implements Authenticator.
func (a *HTTPSigAuth) Authenticate(ctx context.Context, r *http.Request, _ *TokenRequest) (*Client, error) {
	res, err := a.v.VerifyRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	return newClient(res.WIT.Subject, MethodHTTPSig, res.WIT, res.WIT.Key, res.WIT.SubjectString()), nil
}

// WIMSEAuthenticators returns the primary methods of oauth.md 1.9, HTTP signature first
// (it also signs the body), then WPT, both validating WITs with wits and claiming
// nonces and jtis in replay. audiences are the values a proof may name as its
// recipient: the token endpoint URL (and, if wanted, the issuer identifier). Pick
// among them with ByName.
func WIMSEAuthenticators(wits *wit.Validator, replay store.Replay, audiences ...string) []Authenticator {
	hs := httpsig.NewVerifier(wits, httpsig.WithAudiences(audiences...), httpsig.WithReplay(replay),
		httpsig.WithRequiredComponents(`"content-digest"`, `"workload-identity-token"`))
	wp := wpt.NewVerifier(wits, wpt.WithAudiences(audiences...), wpt.WithReplay(replay))
	return []Authenticator{NewHTTPSigAuth(hs), NewWPTAuth(wp)}
}

// TLSClientAuth authenticates a workload by the X.509-SVID (or other workload identity
// certificate) it presented in the TLS handshake (RFC 8705 tls_client_auth with the
// WIMSE mutual-TLS profile). The chain is verified on every request against the bundle
// of the trust domain its URI SAN names, so resumed sessions and bundle changes are
// covered (libraries.md section 3).
type TLSClientAuth struct {
	bundles x509bundle.Source
	now     func() time.Time
}

// NewTLSClientAuth verifies client certificates against bundles; now defaults to
// time.Now.
func NewTLSClientAuth(bundles x509bundle.Source, now func() time.Time) *TLSClientAuth {
	if now == nil {
		now = time.Now
	}
	return &TLSClientAuth{bundles: bundles, now: now}
}

// Name implements Authenticator.
func (*TLSClientAuth) Name() string { return MethodTLSClientAuth }

// Present implements Authenticator: a client certificate was presented.
func (*TLSClientAuth) Present(r *http.Request, _ *TokenRequest) bool {
	return r.TLS != nil && len(r.TLS.PeerCertificates) > 0
}

// Verify verifies the client certificate chain of a request that has one (Present),
// as it is now: it runs on every request, including requests on resumed sessions and
// on connections opened before a bundle reload (creds-02 section 9.3).
func (a *TLSClientAuth) Verify(r *http.Request) (identifier.ID, error) {
	certs := r.TLS.PeerCertificates
	inters := make([][]byte, 0, len(certs)-1)
	for _, c := range certs[1:] {
		inters = append(inters, c.Raw)
	}
	return wic.VerifyWithBundles(certs[0].Raw, inters, a.bundles, a.now(), wic.WithKeyUsages(x509.ExtKeyUsageClientAuth))
}

// Authenticate implements Authenticator.
func (a *TLSClientAuth) Authenticate(_ context.Context, r *http.Request, tr *TokenRequest) (*Client, error) {
	id, err := a.Verify(r)
	if err != nil {
		return nil, err
	}
	if tr.ClientID != "" && tr.ClientID != id.String() {
		return nil, errcode.New(errcode.InvalidClaim, "client_id is not the certificate's identifier")
	}
	return &Client{ID: id, Method: MethodTLSClientAuth}, nil
}
