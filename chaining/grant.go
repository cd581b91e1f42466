package chaining

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Grant lifetimes (oauth.md 2.3: short; the draft's example is 60 s).
const (
	DefaultGrantLifetime = 60 * time.Second
	MaxGrantLifetime     = 5 * time.Minute
)

// TxnTokenVerifier validates a Txn-Token of this trust domain (tts.Server's
// TxnTokenVerifier: its keys, served trust domains and issuer).
type TxnTokenVerifier interface {
	Verify(ctx context.Context, raw string) (*txntoken.Claims, error)
}

// GrantPeer is a peer authorization server (AS B) this AS issues grants for, and the
// policy of what crosses to it.
type GrantPeer struct {
	// Issuer is AS B's issuer identifier: the grant's aud (one string, oauth.md 4.3),
	// and a name a request may give as audience or resource.
	Issuer string
	// TokenEndpoint is AS B's token endpoint URL, also accepted as resource.
	TokenEndpoint string
	// Audiences are further names a request may give as audience (logical names).
	Audiences []string
	// Scopes, when set, are the only scope tokens that may cross to this peer.
	Scopes []string
	// Subject transcribes the Txn-Token's sub into the grant's (default: keep).
	Subject SubjectMap
	// Workloads, when set, are the workloads (identifiers, or prefixes ending in "/")
	// that may ask for grants for this peer. Default: any workload of the Txn-Token's
	// trust domain.
	Workloads []string
	// PeerConditions: CEL over the request, its Txn-Token and the peer (policy.go).
	PeerConditions
	conds *grantpolicy.Conditions
	// IDJAG lets this AS issue ID-JAGs (requested_token_type ...:id-jag) for this peer
	// (idjag.go). Off, such a request is unsupported_token_type.
	IDJAG bool
	// Resources are the protected resources of the peer's domain (absolute URIs without
	// fragment, or prefixes of them ending in "/") a request may name as resource: with
	// audience naming the peer, a grant then carries it as its resource claim (Txn-Token
	// chaining profile section 4.3.1; fletcher.go), and an ID-JAG likewise (idjag.go;
	// another is resource_not_allowed there). Default: none.
	Resources []string
}

// GrantIssuerConfig configures a GrantIssuer.
type GrantIssuerConfig struct {
	// Issuer is this AS's issuer identifier (the TTS's): the grant's iss.
	Issuer string
	// TokenEndpoint is the URL the proofs name (default Issuer + /token).
	TokenEndpoint string
	// Keys signs grants (its active key, with kid); the TTS's ring, published at its
	// JWKS, so that peers find the keys through the TTS's RFC 8414 metadata.
	Keys *keys.Ring
	// Authenticators authenticate the requesting workload. Only methods that yield a
	// WIT (WIT + HTTP signature or WPT) can be used: the grant binds the workload's WIT
	// key (requested_cnf).
	Authenticators []oauth.Authenticator
	// TxnTokens validates the subject Txn-Token.
	TxnTokens TxnTokenVerifier
	// IDTokens are the identity providers whose ID tokens this AS accepts as the
	// subject of an ID-JAG request (idjag.go); none: only Txn-Tokens.
	IDTokens []IDTokenIssuer
	// Peers this AS issues grants for.
	Peers []GrantPeer
	// Lifetime of a grant (default 60 s, at most 5 minutes); never beyond the subject
	// Txn-Token's exp.
	Lifetime time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger for JSON logs (default: discard). Tokens appear only as SHA-256 hashes.
	Logger *slog.Logger
	// Observer, when set, is told the outcomes of requests served by ServeHTTP (at a
	// TTS's token endpoint, the endpoint's observer is told; oauthmetrics counts them).
	Observer oauth.Observer
	// Auditor, when set, records the outcomes of requests served by ServeHTTP (at a
	// TTS's token endpoint, the endpoint's auditor does).
	Auditor oauth.Auditor
}

// GrantIssuer is AS A: the token exchange handler that turns a Txn-Token of this
// domain into a JWT authorization grant for a peer AS (oauth.md 2.2, 2.3;
// dialog-binding section 11 step 1).
type GrantIssuer struct {
	cfg   GrantIssuerConfig
	peers []GrantPeer
	auth  oauth.ClientAuth
	alone *oauth.Endpoint // ServeHTTP
}

// pathToken is the token endpoint's path on the issuer (the TTS's).
const pathToken = "/token"

// endpointDefaults fills the settings the grant issuer (AS A) and the jwt-bearer AS
// (AS B) default alike: the token endpoint on the issuer, the lifetime of what they
// issue (def when unset, at most limit; what names it in the error), the clock and
// the logger.
func endpointDefaults(issuer string, endpoint *string, lifetime *time.Duration, def, limit time.Duration, what string, now *func() time.Time, logger **slog.Logger) error {
	if *endpoint == "" {
		*endpoint = strings.TrimSuffix(issuer, "/") + pathToken
	}
	if *lifetime <= 0 {
		*lifetime = def
	}
	if *lifetime > limit {
		return fmt.Errorf("chaining: %s lifetime %s is over the limit %s", what, *lifetime, limit)
	}
	if *now == nil {
		*now = time.Now
	}
	if *logger == nil {
		*logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// NewGrantIssuer checks cfg and builds the handler.
func NewGrantIssuer(cfg GrantIssuerConfig) (*GrantIssuer, error) {
	if cfg.Issuer == "" || cfg.Keys == nil || cfg.Keys.Active() == nil {
		return nil, fmt.Errorf("chaining: a grant issuer needs its issuer identifier and signing keys")
	}
	if len(cfg.Authenticators) == 0 || cfg.TxnTokens == nil {
		return nil, fmt.Errorf("chaining: a grant issuer needs authenticators and a Txn-Token verifier")
	}
	if len(cfg.Peers) == 0 {
		return nil, fmt.Errorf("chaining: a grant issuer needs at least one peer")
	}
	if err := endpointDefaults(cfg.Issuer, &cfg.TokenEndpoint, &cfg.Lifetime, DefaultGrantLifetime, MaxGrantLifetime, "grant", &cfg.Now, &cfg.Logger); err != nil {
		return nil, err
	}
	g := &GrantIssuer{cfg: cfg, auth: oauth.ClientAuth{Authenticators: cfg.Authenticators, Missing: noWIT}}
	names := map[string]string{}
	for _, p := range cfg.Peers {
		if p.Issuer == "" {
			return nil, fmt.Errorf("chaining: a grant peer needs its issuer identifier")
		}
		if p.Issuer == cfg.Issuer {
			return nil, fmt.Errorf("chaining: peer %s is this AS itself", p.Issuer)
		}
		if err := p.Subject.Check(); err != nil {
			return nil, fmt.Errorf("chaining: peer %s: %w", p.Issuer, err)
		}
		if err := checkPatterns(p.Workloads); err != nil {
			return nil, fmt.Errorf("chaining: peer %s: %w", p.Issuer, err)
		}
		if err := checkScopes(p.Scopes); err != nil {
			return nil, fmt.Errorf("chaining: peer %s: %w", p.Issuer, err)
		}
		conds, err := p.compile()
		if err != nil {
			return nil, err
		}
		p.conds = conds
		if err := CheckResources(p.Resources); err != nil {
			return nil, fmt.Errorf("chaining: peer %s: %w", p.Issuer, err)
		}
		for _, n := range p.names() {
			if other, dup := names[n]; dup && other != p.Issuer {
				return nil, fmt.Errorf("chaining: %q names two peers (%s, %s)", n, other, p.Issuer)
			} else if dup {
				continue
			}
			names[n] = p.Issuer
		}
		g.peers = append(g.peers, p)
	}
	if err := checkIDTokenIssuers(cfg.IDTokens); err != nil {
		return nil, err
	}
	var err error
	if g.alone, err = oauth.NewEndpoint(oauth.EndpointConfig{Fallback: g, Observer: cfg.Observer, Auditor: cfg.Auditor}); err != nil {
		return nil, err
	}
	return g, nil
}

func (p *GrantPeer) names() []string {
	n := []string{p.Issuer}
	if p.TokenEndpoint != "" {
		n = append(n, p.TokenEndpoint)
	}
	return append(n, p.Audiences...)
}

// peer resolves audience and resource to one peer: each present value must name it.
func (g *GrantIssuer) peer(audience, resource string) (*GrantPeer, error) {
	var found *GrantPeer
	for _, v := range []struct{ val, param string }{{audience, "audience"}, {resource, "resource"}} {
		if v.val == "" {
			continue
		}
		p := g.lookup(v.val)
		if p == nil {
			return nil, errcode.New(errcode.UnknownPeer, "%s %q names no peer authorization server this AS issues grants for", v.param, errcode.Cut(v.val))
		}
		if found != nil && found != p {
			return nil, errcode.New(errcode.UnknownPeer, "audience and resource name different peers")
		}
		found = p
	}
	return found, nil
}

func (g *GrantIssuer) lookup(name string) *GrantPeer {
	for i := range g.peers {
		if slices.Contains(g.peers[i].names(), name) {
			return &g.peers[i]
		}
	}
	return nil
}

// IsPeer reports whether name (an audience or resource value) names a peer AS; Mux uses
// it to route a token exchange without requested_token_type.
func (g *GrantIssuer) IsPeer(name string) bool { return name != "" && g.lookup(name) != nil }

// GrantResponse is the RFC 8693 section 2.2.1 response carrying a grant (oauth.md 2.2).
type GrantResponse struct {
	AccessToken     string `json:"access_token"`
	IssuedTokenType string `json:"issued_token_type"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	Scope           string `json:"scope,omitempty"`
}

// HandlerNameGrants and HandlerNameAccessTokens are the names of AS A's and AS B's
// handlers at the token endpoint (oauth.Record.Handler).
const (
	HandlerNameGrants       = oauth.HandlerChainingGrants
	HandlerNameAccessTokens = oauth.HandlerChainingAccessTokens
)

// grantResult is the grant response with what the log line says of it.
type grantResult struct {
	resp   *GrantResponse
	claims *GrantClaims
	kid    string
}

func (g *grantResult) AppendJSON(b []byte) []byte { return oauth.JSONResponse{V: g.resp}.AppendJSON(b) }

// Name implements oauth.Handler.
func (g *GrantIssuer) Name() string { return HandlerNameGrants }

// ServeHTTP serves POST to the token endpoint with this handler alone.
func (g *GrantIssuer) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.alone.ServeHTTP(w, r) }

// Check implements oauth.Handler: step 1 of issue, before the client is authenticated.
func (g *GrantIssuer) Check(tr *oauth.TokenRequest, rec *oauth.Record) error {
	if err := checkGrantRequest(tr); err != nil {
		return at(stageRequest, err)
	}
	rec.SubjectSHA256 = tokenhash.Of(tr.SubjectToken)
	if tr.RequestedTokenType == TokenTypeIDJAG {
		return at(stageRequest, g.checkIDJAGSubjectType(tr.SubjectTokenType))
	}
	if tr.SubjectTokenType != oauth.TokenTypeTxnToken {
		return at(stageRequest, errcode.New(errcode.UnsupportedTokenType, "subject_token_type must be %s: a grant is issued on a Txn-Token of this domain", oauth.TokenTypeTxnToken))
	}
	return nil
}

// ClientAuth implements oauth.Handler: step 2 of issue, the configured WIT methods.
func (g *GrantIssuer) ClientAuth() *oauth.ClientAuth { return &g.auth }

// Handle implements oauth.Handler.
func (g *GrantIssuer) Handle(ctx context.Context, _ *http.Request, tr *oauth.TokenRequest, client *oauth.Client, rec *oauth.Record) (oauth.Response, error) {
	resp, claims, kid, err := g.issue(ctx, tr, client, rec)
	if err != nil {
		return nil, err
	}
	return &grantResult{resp: resp, claims: claims, kid: kid}, nil
}

// Done implements oauth.Handler: the log line (the endpoint's Observer counts it).
func (g *GrantIssuer) Done(ctx context.Context, r *http.Request, rec *oauth.Record) {
	if rec.Err != nil {
		g.cfg.Logger.Log(ctx, errcode.LogLevel(rec.Err), "chaining grant refused", "error", rec.Error, "code", string(rec.Code),
			"kind", errcode.KindOf(rec.Err).String(), "peer", rec.Peer, "method", rec.Method, "requester", rec.Requester,
			"subject_token_sha256", rec.SubjectSHA256, "remote", r.RemoteAddr, "detail", rec.Err.Error())
		return
	}
	res := rec.Response.(*grantResult)
	g.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "chaining grant issued", slog.String("peer", rec.Peer),
		slog.String("method", rec.Method), slog.String("requester", rec.Requester), slog.String("subject_token_sha256", rec.SubjectSHA256),
		slog.String("jti", res.claims.Jti), slog.String("grant_sha256", tokenhash.Of(res.resp.AccessToken)), slog.String("kid", res.kid),
		slog.Int64("exp", int64(*res.claims.Exp)), slog.String("remote", r.RemoteAddr))
}

// issue runs a grant request through its steps, cheap and stateless checks first
// (steps 1 and 2 are Check's and the endpoint's):
//
//  1. form, bounds, grant type, requested and subject token types, REQUIRED
//     parameters;
//  2. client authentication: a WIT and a proof (its key is what requested_cnf binds;
//     boundClient);
//  3. the peer named by audience or resource (invalid_target), and whether the
//     workload may ask for it (unauthorized_client);
//  4. the subject Txn-Token: this TTS's, for a trust domain it serves, not expired;
//     presented by a workload of that trust domain (oauth.md 2.2 item 5: no lateral
//     movement across domains);
//  5. scope: never broader than the Txn-Token's, nor than the peer's allowed scopes;
//  6. subject transcription, claims, signature.
func (g *GrantIssuer) issue(ctx context.Context, tr *oauth.TokenRequest, req *oauth.Client, rec *oauth.Record) (*GrantResponse, *GrantClaims, string, error) {
	if err := boundClient(tr, req); err != nil {
		return nil, nil, "", err
	}
	if tr.RequestedTokenType == TokenTypeIDJAG {
		return g.issueIDJAG(ctx, tr, req, rec)
	}
	peer, resource, err := g.resolvePeer(tr.Audience, tr.Resource)
	if err != nil {
		return nil, nil, "", at(stageRequest, err)
	}
	rec.Peer = peer.Issuer
	if len(peer.Workloads) > 0 && !matchWorkload(peer.Workloads, req.ID) {
		return nil, nil, "", at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "%s may not request grants for %s", req.ID, peer.Issuer))
	}
	txn, err := g.cfg.TxnTokens.Verify(ctx, tr.SubjectToken)
	if err != nil {
		return nil, nil, "", at(stageRequest, err)
	}
	rec.Detail = txn // the audit trail records the subject's txn and dlg (oauth.Auditor)
	if len(txn.Aud) != 1 || txn.Aud[0] != req.ID.TrustDomain() {
		return nil, nil, "", at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "%s is not a workload of the Txn-Token's trust domain", req.ID))
	}
	scope, err := grantScope(tr.Scope, txn.ScopeList(), peer.Scopes)
	if err != nil {
		return nil, nil, "", err
	}
	if peer.conds != nil {
		if scope, err = decidePeer(ctx, peer.conds, peer.Issuer, tr, req, txnSubject(txn), requestedGrant(tr, req, peer.Issuer, resource), peer.Issuer, peer.names(), scope); err != nil {
			return nil, nil, "", err
		}
	}
	sub, err := peer.Subject.Map(txn.Sub)
	if err != nil {
		return nil, nil, "", at(stageRequest, err)
	}
	now := g.cfg.Now()
	exp := now.Add(g.cfg.Lifetime)
	if te := txn.Exp.Time(); te.Before(exp) {
		// A grant does not outlive the authorization it was made from (oauth.md 1.5
		// step 10 by analogy).
		exp = te
	}
	iat, e := jose.NumericDate(now.Unix()), jose.NumericDate(exp.Unix())
	if e <= iat {
		return nil, nil, "", at(stageRequest, errcode.New(errcode.Expired, "the subject Txn-Token expires within the second"))
	}
	sc := strings.Join(scope, " ")
	// Only these claims, by construction: nothing of the Txn-Token but its subject (as
	// policy transcribes it) and a scope within its own crosses to the peer.
	claims := &GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: g.cfg.Issuer, Sub: sub, Aud: jose.Audience{peer.Issuer}, Iat: &iat, Exp: &e},
		Jti: newJTI(), Scope: &sc, RequestedCnf: &Confirmation{JKT: Thumbprint(req.WIT.Key)}, Resource: grantResourceClaim(resource)}
	key := g.cfg.Keys.Active()
	tok, err := jose.SignClaims(GrantTyp, key, true, claims)
	if err != nil {
		return nil, nil, "", at(stageIssue, errcode.Wrap(errcode.Internal, err, "signing"))
	}
	return &GrantResponse{AccessToken: tok, IssuedTokenType: TokenTypeJWT, TokenType: "N_A",
		ExpiresIn: int64(e - iat), Scope: sc}, claims, key.KID(), nil
}

// grantScope: requested (or, when nothing is requested, the whole subject scope) must
// lie within the subject's scope and, when the peer limits it, the peer's. A request
// for more is refused, never trimmed; an unrequested default is narrowed to what may
// cross, and refused when nothing may.
func grantScope(requested, subject, allowed []string) ([]string, error) {
	if requested == nil {
		var out []string
		for _, s := range subject {
			if len(allowed) == 0 || slices.Contains(allowed, s) {
				out = append(out, s)
			}
		}
		if len(out) == 0 {
			return nil, at(stageRequest, errcode.New(errcode.ScopeTooBroad, "no scope of the Txn-Token may cross to this peer"))
		}
		return out, nil
	}
	for _, s := range requested {
		if !slices.Contains(subject, s) {
			return nil, at(stageRequest, errcode.New(errcode.ScopeTooBroad, "scope %q is not within the Txn-Token's scope", errcode.Cut(s)))
		}
		if len(allowed) > 0 && !slices.Contains(allowed, s) {
			return nil, at(stageRequest, errcode.New(errcode.ScopeTooBroad, "scope %q may not cross to this peer", errcode.Cut(s)))
		}
	}
	return requested, nil
}

// noWIT is the rejection of a request that carries no WIT method's credential.
const noWIT = "no client authentication this AS accepts: a WIT with an HTTP signature or a WPT"

// boundClient: identity chaining binds the grant and the access token to the client's
// WIT key, so a client authenticated without a WIT is refused, and a client_id, when
// sent, must name the authenticated workload (both invalid_client).
func boundClient(tr *oauth.TokenRequest, req *oauth.Client) error {
	if req.WIT == nil || req.WIT.Key == nil {
		return at(stageClient, errcode.New(errcode.Unauthenticated, "identity chaining requires a WIT: the grant and the access token are bound to its key"))
	}
	if id := tr.ClientID; id != "" && id != req.IDString() {
		return at(stageClient, errcode.New(errcode.InvalidClaim, "client_id is not the authenticated workload"))
	}
	return nil
}

// checkPatterns: identifiers, or prefixes ending in "/" that name a whole trust
// domain and path segments.
func checkPatterns(ps []string) error {
	for _, p := range ps {
		probe := p
		if strings.HasSuffix(p, "/") {
			probe = p + "x"
		}
		if _, err := identifier.Parse(probe); err != nil {
			return fmt.Errorf("workload %q is not an identifier or a prefix ending in /: %w", p, err)
		}
	}
	return nil
}

func matchWorkload(ps []string, id identifier.ID) bool {
	s := id.String()
	for _, p := range ps {
		if p == s || strings.HasSuffix(p, "/") && strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func checkScopes(ss []string) error {
	for _, s := range ss {
		if sc, err := oauth.ParseScope(s); err != nil || len(sc) != 1 {
			return fmt.Errorf("%q is not one scope token", s)
		}
	}
	return nil
}

// newJTI returns 128 random bits, base64url.
func newJTI() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
