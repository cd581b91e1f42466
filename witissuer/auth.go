package witissuer

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
)

// Names of the authentication methods, as used in configuration and metrics.
const (
	MethodX509SVID  = "x509svid"
	MethodAssertion = "assertion"
	MethodDev       = "dev"
)

// Authenticator is one way for a workload to prove who it is.
//
// A route tries its methods in order; the first whose credential is Present decides,
// and its Authenticate result is final: a present but invalid credential is a rejection,
// never a reason to try the next, weaker method.
type Authenticator interface {
	// Name is the method's configuration name.
	Name() string
	// Present reports whether the request carries this method's credential at all.
	Present(r *http.Request, req *Request) bool
	// Authenticate verifies the credential and returns the authenticated identity.
	// req's proof of possession has already verified. Every error is an *errcode.Error.
	Authenticate(r *http.Request, req *Request) (identifier.ID, error)
}

// X509SVID authenticates a workload by the X.509-SVID (or any workload identity
// certificate) it presented in the TLS handshake: the token endpoint's tls_client_auth
// (package oauth), behind the WIT issuer's interface.
type X509SVID struct{ tls *oauth.TLSClientAuth }

// NewX509SVID verifies client certificates against bundles, chosen by the trust domain
// of the certificate's URI SAN. now defaults to time.Now.
func NewX509SVID(bundles x509bundle.Source, now func() time.Time) *X509SVID {
	return &X509SVID{tls: oauth.NewTLSClientAuth(bundles, now)}
}

// Name implements Authenticator.
func (*X509SVID) Name() string { return MethodX509SVID }

// Present implements Authenticator: a client certificate was presented.
func (*X509SVID) Present(r *http.Request, _ *Request) bool {
	return r.TLS != nil && len(r.TLS.PeerCertificates) > 0
}

// Authenticate implements Authenticator. It runs on every request, including requests on
// resumed sessions and on connections opened before a bundle reload, so the chain is
// always judged by the bundles as they are now (creds-02 section 9.3).
func (a *X509SVID) Authenticate(r *http.Request, _ *Request) (identifier.ID, error) {
	return a.tls.Verify(r)
}

// Assertion authenticates a registered workload by a signed JWT (the token endpoint's
// private_key_jwt of package oauth: RFC 7523 client assertion, typ
// client-authentication+jwt): iss = sub = the workload, aud = exactly the issuer, exp
// required and short, jti claimed once.
type Assertion struct{ p *oauth.PrivateKeyJWT }

// RegisteredWorkload is a workload and the keys its assertions may be signed with.
type RegisteredWorkload struct {
	ID   identifier.ID
	Keys []*keys.PublicKey
}

// AssertionOptions tune NewAssertion; zero values take the defaults.
type AssertionOptions struct {
	Now         func() time.Time
	Skew        time.Duration
	MaxLifetime time.Duration
}

// NewAssertion returns the assertion method of the issuer named issuer.
func NewAssertion(issuer string, workloads []RegisteredWorkload, replay store.Replay, o AssertionOptions) (*Assertion, error) {
	if issuer == "" || replay == nil {
		return nil, fmt.Errorf("assertion: issuer and replay store are required")
	}
	clients := make([]oauth.RegisteredClient, 0, len(workloads))
	seen := map[string]bool{}
	for _, w := range workloads {
		if w.ID.IsZero() || len(w.Keys) == 0 {
			return nil, fmt.Errorf("assertion: workload %q needs an identifier and at least one key", w.ID)
		}
		if seen[w.ID.String()] {
			return nil, fmt.Errorf("assertion: workload %s registered twice", w.ID)
		}
		seen[w.ID.String()] = true
		set, err := keys.NewStaticSet(w.Keys...)
		if err != nil {
			return nil, fmt.Errorf("assertion: workload %s: %w", w.ID, err)
		}
		clients = append(clients, oauth.RegisteredClient{ID: w.ID, Keys: set})
	}
	p, err := oauth.NewPrivateKeyJWTWith(oauth.PrivateKeyJWTConfig{Audiences: []string{issuer}, SingleAudience: true,
		Clients: clients, Replay: replay, ReplayPrefix: "witissuer:assertion:", Now: o.Now, Skew: o.Skew, MaxLifetime: o.MaxLifetime})
	if err != nil {
		return nil, fmt.Errorf("assertion: %w", err)
	}
	return &Assertion{p: p}, nil
}

// Name implements Authenticator.
func (*Assertion) Name() string { return MethodAssertion }

// Present implements Authenticator: either assertion member is in the body.
func (*Assertion) Present(_ *http.Request, req *Request) bool {
	return req.Body.ClientAssertion != "" || req.Body.ClientAssertionType != ""
}

// Authenticate implements Authenticator (oauth.PrivateKeyJWT.Verify).
func (a *Assertion) Authenticate(r *http.Request, req *Request) (identifier.ID, error) {
	id, _, err := a.p.Verify(r.Context(), req.Body.ClientAssertionType, req.Body.ClientAssertion, "")
	return id, err
}

// replayKey scopes a jti by kind and sender; the NUL cannot occur in an identifier, so
// two (sender, jti) pairs never produce the same key.
func replayKey(kind, sender, jti string) string {
	return "witissuer:" + kind + ":" + sender + "\x00" + jti
}

// Dev is development mode: it authenticates nothing. The request's sub is taken as the
// identity when it is listed, exactly or under a listed prefix, and not registered with
// a key (DevOptions.Registered). Never enable it where a workload could be
// impersonated; the issuer logs a warning on every issuance through it.
type Dev struct {
	ids        map[string]bool
	prefixes   []string
	registered map[string]bool
}

// DevOptions tune the dev method.
type DevOptions struct {
	// Registered are identities that prove a key of their own (the assertion method's
	// registered workloads). The dev method never issues them, even under a listed
	// prefix: it authenticates nobody, so it would hand what only the key's holder may
	// have to whoever can reach the issuer. `dialogtrust dev` registers its operator,
	// the administrator of revocations, this way.
	Registered []identifier.ID
}

// NewDev allows the identifiers ids and every identifier under prefixes (each a
// scheme://trust-domain/ prefix ending in "/"), except o.Registered.
func NewDev(ids []identifier.ID, prefixes []string, o DevOptions) (*Dev, error) {
	d := &Dev{ids: map[string]bool{}, registered: map[string]bool{}}
	for _, id := range ids {
		d.ids[id.String()] = true
	}
	for _, id := range o.Registered {
		d.registered[id.String()] = true
	}
	for _, p := range prefixes {
		if err := checkPrefix(p); err != nil {
			return nil, fmt.Errorf("dev: %w", err)
		}
	}
	d.prefixes = slices.Clone(prefixes)
	return d, nil
}

// Name implements Authenticator.
func (*Dev) Name() string { return MethodDev }

// Present implements Authenticator: development mode needs no credential, so it is
// always present; put it last in a route.
func (*Dev) Present(*http.Request, *Request) bool { return true }

// Authenticate implements Authenticator.
func (d *Dev) Authenticate(_ *http.Request, req *Request) (identifier.ID, error) {
	if req.Sub.IsZero() {
		return identifier.ID{}, errcode.New(errcode.Unauthenticated, "development mode names the workload by the request's sub, and there is none")
	}
	s := req.Sub.String()
	if d.registered[s] {
		return identifier.ID{}, errcode.New(errcode.Unauthenticated, "%s is registered with a key: development mode does not issue it (prove the key with a client assertion)", s)
	}
	if d.ids[s] {
		return req.Sub, nil
	}
	for _, p := range d.prefixes {
		if strings.HasPrefix(s, p) {
			return req.Sub, nil
		}
	}
	return identifier.ID{}, errcode.New(errcode.Unauthenticated, "%s is not a development workload", s)
}
