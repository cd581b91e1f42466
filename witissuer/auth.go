package witissuer

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wic"
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
// certificate) it presented in the TLS handshake.
type X509SVID struct {
	bundles x509bundle.Source
	now     func() time.Time
}

// NewX509SVID verifies client certificates against bundles, chosen by the trust domain
// of the certificate's URI SAN. now defaults to time.Now.
func NewX509SVID(bundles x509bundle.Source, now func() time.Time) *X509SVID {
	if now == nil {
		now = time.Now
	}
	return &X509SVID{bundles: bundles, now: now}
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
	certs := r.TLS.PeerCertificates
	inters := make([][]byte, 0, len(certs)-1)
	for _, c := range certs[1:] {
		inters = append(inters, c.Raw)
	}
	return wic.VerifyWithBundles(certs[0].Raw, inters, a.bundles, a.now(), wic.WithKeyUsages(x509.ExtKeyUsageClientAuth))
}

// Assertion authenticates a registered workload by a signed JWT (RFC 7523 client
// assertion style, typ client-authentication+jwt): iss = sub = the workload, aud = the
// issuer, exp required and short, jti claimed once.
type Assertion struct {
	issuer      string
	workloads   map[string]keys.KeySet
	replay      store.Replay
	now         func() time.Time
	skew        time.Duration
	maxLifetime time.Duration
}

// Assertion defaults.
const (
	DefaultAssertionMaxLifetime = 5 * time.Minute
	DefaultSkew                 = 30 * time.Second
)

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
	a := &Assertion{issuer: issuer, workloads: map[string]keys.KeySet{}, replay: replay, now: o.Now, skew: o.Skew, maxLifetime: o.MaxLifetime}
	if a.now == nil {
		a.now = time.Now
	}
	if a.skew <= 0 {
		a.skew = DefaultSkew
	}
	if a.maxLifetime <= 0 {
		a.maxLifetime = DefaultAssertionMaxLifetime
	}
	for _, w := range workloads {
		if w.ID.IsZero() || len(w.Keys) == 0 {
			return nil, fmt.Errorf("assertion: workload %q needs an identifier and at least one key", w.ID)
		}
		if _, dup := a.workloads[w.ID.String()]; dup {
			return nil, fmt.Errorf("assertion: workload %s registered twice", w.ID)
		}
		set, err := keys.NewStaticSet(w.Keys...)
		if err != nil {
			return nil, fmt.Errorf("assertion: workload %s: %w", w.ID, err)
		}
		a.workloads[w.ID.String()] = set
	}
	return a, nil
}

// Name implements Authenticator.
func (*Assertion) Name() string { return MethodAssertion }

// Present implements Authenticator: either assertion member is in the body.
func (*Assertion) Present(_ *http.Request, req *Request) bool {
	return req.Body.ClientAssertion != "" || req.Body.ClientAssertionType != ""
}

// Authenticate implements Authenticator. The claims are read before the signature is
// checked only to find the registered workload (as a WIT's sub selects its anchors);
// nothing in them counts until the signature verified with that workload's key.
func (a *Assertion) Authenticate(r *http.Request, req *Request) (identifier.ID, error) {
	b := req.Body
	if b.ClientAssertionType != ClientAssertionTypeJWTBearer {
		return identifier.ID{}, errcode.New(errcode.InvalidRequest, "client_assertion_type must be %s", ClientAssertionTypeJWTBearer)
	}
	if b.ClientAssertion == "" {
		return identifier.ID{}, errcode.New(errcode.MissingCredential, "client_assertion is empty")
	}
	t, err := jose.Parse(b.ClientAssertion, MaxTokenSize)
	if err != nil {
		return identifier.ID{}, err
	}
	if err := t.CheckHeader(jose.Options{Typ: AssertionType}); err != nil {
		return identifier.ID{}, err
	}
	var c AssertionClaims
	if err := jose.DecodeClaims(t.Payload, &c); err != nil {
		return identifier.ID{}, err
	}
	if c.Iss == "" {
		return identifier.ID{}, errcode.New(errcode.MissingClaim, "iss is required")
	}
	id, err := identifier.Parse(c.Iss)
	if err != nil {
		return identifier.ID{}, err
	}
	set, ok := a.workloads[id.String()]
	if !ok {
		return identifier.ID{}, errcode.New(errcode.UntrustedIssuer, "workload %s is not registered", id)
	}
	ctx := r.Context()
	key, err := set.LookupKey(ctx, t.Kid)
	if err != nil {
		return identifier.ID{}, err
	}
	if err := t.VerifyWith(key, false); err != nil {
		return identifier.ID{}, err
	}
	if c.Sub != c.Iss {
		return identifier.ID{}, errcode.New(errcode.InvalidClaim, "sub must equal iss in a client assertion")
	}
	if len(c.Aud) != 1 || c.Aud[0] != a.issuer {
		return identifier.ID{}, errcode.New(errcode.AudienceMismatch, "aud must be exactly this issuer's identifier")
	}
	now := a.now()
	if c.Iat == nil {
		return identifier.ID{}, errcode.New(errcode.MissingClaim, "iat is required")
	}
	if err := jose.CheckTimes(jose.TimeRules{Now: now, Skew: a.skew, RequireExp: true, MaxLifetime: a.maxLifetime}, c.Exp, c.Nbf, c.Iat); err != nil {
		return identifier.ID{}, err
	}
	if c.Exp.Time().Sub(c.Iat.Time()) > a.maxLifetime {
		return identifier.ID{}, errcode.New(errcode.LifetimeTooLong, "assertion lives %s, limit %s", c.Exp.Time().Sub(c.Iat.Time()), a.maxLifetime)
	}
	if c.Jti == "" {
		return identifier.ID{}, errcode.New(errcode.MissingClaim, "jti is required")
	}
	if len(c.Jti) > MaxJTILength {
		return identifier.ID{}, errcode.New(errcode.InvalidClaim, "jti longer than %d octets", MaxJTILength)
	}
	// Held until the assertion can no longer be accepted anywhere: exp plus skew.
	ttl := c.Exp.Time().Add(a.skew).Sub(now)
	if err := a.replay.Claim(ctx, replayKey("assertion", id.String(), c.Jti), ttl); err != nil {
		return identifier.ID{}, err
	}
	return id, nil
}

// replayKey scopes a jti by kind and sender; the NUL cannot occur in an identifier, so
// two (sender, jti) pairs never produce the same key.
func replayKey(kind, sender, jti string) string {
	return "witissuer:" + kind + ":" + sender + "\x00" + jti
}

// Dev is development mode: it authenticates nothing. The request's sub is taken as the
// identity when it is listed, exactly or under a listed prefix. Never enable it where a
// workload could be impersonated; the issuer logs a warning on every issuance through it.
type Dev struct {
	ids      map[string]bool
	prefixes []string
}

// NewDev allows the identifiers ids and every identifier under prefixes (each a
// scheme://trust-domain/ prefix ending in "/").
func NewDev(ids []identifier.ID, prefixes []string) (*Dev, error) {
	d := &Dev{ids: map[string]bool{}}
	for _, id := range ids {
		d.ids[id.String()] = true
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
