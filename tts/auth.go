package tts

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
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wic"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// Names of the requester authentication methods (metadata, metrics, logs).
const (
	MethodWPT           = "wit_wpt"
	MethodHTTPSig       = "wit_httpsig"
	MethodTLSClientAuth = "tls_client_auth"
	MethodPrivateKeyJWT = "private_key_jwt"
)

// Requester is the authenticated workload that asks for a Txn-Token: its identifier
// becomes req_wl.
type Requester struct {
	ID identifier.ID
	// Method is the authentication method's name.
	Method string
	// Keys are the keys the workload proved it holds in this request: the WIT's
	// confirmation key, or the registered key of its client assertion. A self_signed
	// subject token must be signed with one of them. Empty for mTLS.
	Keys []*keys.PublicKey
	// WIT is the validated WIT for the WIT-based methods.
	WIT *wit.WIT

	id  string             // ID.String(), computed once per request (see idString)
	key [1]*keys.PublicKey // backs Keys for the methods that prove one key
}

// withKey returns r with Keys set to the one key k, held in r itself (one allocation
// for the requester and its key list).
func (r *Requester) withKey(k *keys.PublicKey) *Requester {
	r.key[0] = k
	r.Keys = r.key[:]
	return r
}

// idString returns ID.String(), building it once: the requester's identifier is
// written into policy lookups, req_wl and the log line of the same request.
func (r *Requester) idString() string {
	if r.id == "" {
		r.id = r.ID.String()
	}
	return r.id
}

// Authenticator is one way for a workload to authenticate to the token endpoint
// (oauth.md 1.9). The Server tries its authenticators in order; the first whose
// credential is Present decides, and its result is final: a present but invalid
// credential is a rejection, never a reason to try a weaker method.
type Authenticator interface {
	Name() string
	// Present reports whether the request carries this method's credential at all.
	Present(r *http.Request, tr *TokenRequest) bool
	// Authenticate verifies the credential. Every error is an *errcode.Error. The
	// request body has been read; r.Body is a fresh reader over the same octets.
	Authenticate(ctx context.Context, r *http.Request, tr *TokenRequest) (*Requester, error)
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
func (a *WPTAuth) Authenticate(ctx context.Context, r *http.Request, _ *TokenRequest) (*Requester, error) {
	res, err := a.v.VerifyRequest(ctx, r, wpt.RequestOptions{})
	if err != nil {
		return nil, err
	}
	return (&Requester{ID: res.WIT.Subject, Method: MethodWPT, WIT: res.WIT, id: res.WIT.SubjectString()}).withKey(res.WIT.Key), nil
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
func (a *HTTPSigAuth) Authenticate(ctx context.Context, r *http.Request, _ *TokenRequest) (*Requester, error) {
	res, err := a.v.VerifyRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	return (&Requester{ID: res.WIT.Subject, Method: MethodHTTPSig, WIT: res.WIT, id: res.WIT.SubjectString()}).withKey(res.WIT.Key), nil
}

// WIMSEAuthenticators returns the primary methods of oauth.md 1.9, HTTP signature first
// (it also signs the body), then WPT, both validating WITs with wits and claiming
// nonces and jtis in replay. audiences are the values a proof may name as its
// recipient: the token endpoint URL (and, if wanted, the issuer identifier).
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

// Authenticate implements Authenticator.
func (a *TLSClientAuth) Authenticate(_ context.Context, r *http.Request, tr *TokenRequest) (*Requester, error) {
	certs := r.TLS.PeerCertificates
	inters := make([][]byte, 0, len(certs)-1)
	for _, c := range certs[1:] {
		inters = append(inters, c.Raw)
	}
	id, err := wic.VerifyWithBundles(certs[0].Raw, inters, a.bundles, a.now(), wic.WithKeyUsages(x509.ExtKeyUsageClientAuth))
	if err != nil {
		return nil, err
	}
	if tr.ClientID != "" && tr.ClientID != id.String() {
		return nil, errcode.New(errcode.InvalidClaim, "client_id is not the certificate's identifier")
	}
	return &Requester{ID: id, Method: MethodTLSClientAuth}, nil
}

// PrivateKeyJWT authenticates a registered workload by a client assertion (RFC 7523
// section 2.2, OpenID private_key_jwt) with explicit typing: typ
// client-authentication+jwt, iss = sub = the workload identifier, aud = this TTS (its
// issuer identifier, a single string; the token endpoint URL is accepted too, oauth.md
// 4.3), exp required and short, jti claimed once.
type PrivateKeyJWT struct {
	audiences   []string
	workloads   map[string]keys.KeySet
	replay      store.Replay
	now         func() time.Time
	skew        time.Duration
	maxLifetime time.Duration
}

// RegisteredClient is a workload that may authenticate with private_key_jwt, and the
// keys (a static set or a JWKS URL) its assertions are signed with.
type RegisteredClient struct {
	ID   identifier.ID
	Keys keys.KeySet
}

// Defaults of PrivateKeyJWT.
const (
	DefaultAssertionMaxLifetime = 5 * time.Minute
	DefaultSkew                 = 30 * time.Second
)

// NewPrivateKeyJWT returns the private_key_jwt method. audiences are this TTS's issuer
// identifier and token endpoint URL.
func NewPrivateKeyJWT(audiences []string, clients []RegisteredClient, replay store.Replay, now func() time.Time, skew time.Duration) (*PrivateKeyJWT, error) {
	if len(audiences) == 0 || replay == nil {
		return nil, fmt.Errorf("tts: private_key_jwt needs its audiences and a replay store")
	}
	if now == nil {
		now = time.Now
	}
	if skew <= 0 {
		skew = DefaultSkew
	}
	p := &PrivateKeyJWT{audiences: audiences, workloads: map[string]keys.KeySet{}, replay: replay, now: now, skew: skew, maxLifetime: DefaultAssertionMaxLifetime}
	for _, c := range clients {
		if c.ID.IsZero() || c.Keys == nil {
			return nil, fmt.Errorf("tts: registered client %q needs an identifier and keys", c.ID)
		}
		if _, dup := p.workloads[c.ID.String()]; dup {
			return nil, fmt.Errorf("tts: client %s registered twice", c.ID)
		}
		p.workloads[c.ID.String()] = c.Keys
	}
	return p, nil
}

// Name implements Authenticator.
func (*PrivateKeyJWT) Name() string { return MethodPrivateKeyJWT }

// Present implements Authenticator.
func (*PrivateKeyJWT) Present(_ *http.Request, tr *TokenRequest) bool {
	return tr.ClientAssertion != "" || tr.ClientAssertionType != ""
}

// AssertionClaims are the claims of a client assertion.
type AssertionClaims struct {
	Iss string            `json:"iss"`
	Sub string            `json:"sub"`
	Aud jose.Audience     `json:"aud"`
	Iat *jose.NumericDate `json:"iat"`
	Nbf *jose.NumericDate `json:"nbf,omitempty"`
	Exp *jose.NumericDate `json:"exp"`
	Jti string            `json:"jti"`
}

// Authenticate implements Authenticator. The claims are read before the signature is
// checked only to find the registered workload (as a WIT's sub selects its anchors);
// nothing in them counts until the signature verified with that workload's key.
func (p *PrivateKeyJWT) Authenticate(ctx context.Context, _ *http.Request, tr *TokenRequest) (*Requester, error) {
	if tr.ClientAssertionType != ClientAssertionTypeJWTBearer {
		return nil, errcode.New(errcode.InvalidRequest, "client_assertion_type must be %s", ClientAssertionTypeJWTBearer)
	}
	if tr.ClientAssertion == "" {
		return nil, errcode.New(errcode.MissingCredential, "client_assertion is empty")
	}
	t, err := jose.Parse(tr.ClientAssertion, maxClientAssertion)
	if err != nil {
		return nil, err
	}
	if err := t.CheckHeader(jose.Options{Typ: ClientAssertionType}); err != nil {
		return nil, err
	}
	var c AssertionClaims
	if err := jose.DecodeClaims(t.Payload, &c); err != nil {
		return nil, err
	}
	if c.Iss == "" {
		return nil, errcode.New(errcode.MissingClaim, "iss is required")
	}
	id, err := identifier.Parse(c.Iss)
	if err != nil {
		return nil, err
	}
	set, ok := p.workloads[id.String()]
	if !ok {
		return nil, errcode.New(errcode.UntrustedIssuer, "workload %s is not registered for private_key_jwt", id)
	}
	key, err := set.LookupKey(ctx, t.Kid)
	if err != nil {
		return nil, err
	}
	if err := t.VerifyWith(key, false); err != nil {
		return nil, err
	}
	if c.Sub != c.Iss {
		return nil, errcode.New(errcode.InvalidClaim, "sub must equal iss in a client assertion")
	}
	if tr.ClientID != "" && tr.ClientID != c.Sub {
		return nil, errcode.New(errcode.InvalidClaim, "client_id is not the assertion's sub")
	}
	if len(c.Aud) == 0 || !anyOf(c.Aud, p.audiences) {
		return nil, errcode.New(errcode.AudienceMismatch, "aud must name this TTS")
	}
	now := p.now()
	if c.Iat == nil {
		return nil, errcode.New(errcode.MissingClaim, "iat is required")
	}
	if err := jose.CheckTimes(jose.TimeRules{Now: now, Skew: p.skew, RequireExp: true, MaxLifetime: p.maxLifetime}, c.Exp, c.Nbf, c.Iat); err != nil {
		return nil, err
	}
	if c.Exp.Time().Sub(c.Iat.Time()) > p.maxLifetime {
		return nil, errcode.New(errcode.LifetimeTooLong, "assertion lives %s, limit %s", c.Exp.Time().Sub(c.Iat.Time()), p.maxLifetime)
	}
	if c.Jti == "" || len(c.Jti) > 256 {
		return nil, errcode.New(errcode.MissingClaim, "jti is required (at most 256 octets)")
	}
	// Held until the assertion can no longer be accepted: exp plus skew.
	ttl := c.Exp.Time().Add(p.skew).Sub(now)
	if err := p.replay.Claim(ctx, "tts:assertion:"+id.String()+"\x00"+c.Jti, ttl); err != nil {
		return nil, err
	}
	return (&Requester{ID: id, Method: MethodPrivateKeyJWT}).withKey(key), nil
}

// NewClientAssertion mints a private_key_jwt client assertion for workload, for the
// TTS named audience, valid for lifetime from now.
func NewClientAssertion(key *keys.PrivateKey, workload identifier.ID, audience string, lifetime time.Duration, now time.Time) (string, error) {
	if lifetime <= 0 {
		lifetime = time.Minute
	}
	iat := jose.NumericDate(now.Unix())
	exp := jose.NumericDate(now.Add(lifetime).Unix())
	return jose.SignClaims(ClientAssertionType, key, true, AssertionClaims{
		Iss: workload.String(), Sub: workload.String(), Aud: jose.Audience{audience},
		Iat: &iat, Exp: &exp, Jti: newTxn(),
	})
}

// presentedTxnToken reports a Txn-Token offered as a credential (oauth.md 1.9 item 4):
// as the bearer or proof of the Authorization field, as a WIT, as a client assertion,
// or in the Txn-Token field of a request that carries no credential at all. Only the
// JOSE header is looked at; nothing is verified.
func presentedTxnToken(r *http.Request, tr *TokenRequest, anyCredential bool) bool {
	if isTxnToken(tr.ClientAssertion) {
		return true
	}
	for _, v := range r.Header.Values("Authorization") {
		if _, cred, _ := cutSpace(v); isTxnToken(strings.TrimSpace(cred)) {
			return true
		}
	}
	for _, name := range []string{wit.HeaderName, wpt.LegacyHeader} {
		for _, v := range r.Header.Values(name) {
			if isTxnToken(strings.TrimSpace(v)) {
				return true
			}
		}
	}
	return !anyCredential && len(r.Header.Values(txntoken.HeaderName)) > 0
}

func isTxnToken(s string) bool {
	if s == "" || strings.Count(s, ".") != 2 {
		return false
	}
	t, err := jose.Parse(s, jose.DefaultMaxTokenSize)
	return err == nil && jose.TypeMatches(t.Typ, txntoken.Type)
}

func cutSpace(s string) (string, string, bool) {
	s = strings.TrimSpace(s)
	a, b, ok := strings.Cut(s, " ")
	return a, strings.TrimLeft(b, " "), ok
}

func anyOf(have, want []string) bool {
	for _, h := range have {
		for _, w := range want {
			if h == w {
				return true
			}
		}
	}
	return false
}
