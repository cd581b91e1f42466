package chaining

import (
	"context"
	"fmt"
	"github.com/dialogtrust/dialogtrust/oauth/grantpolicy"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tokenhash"
)

// Access token lifetimes and grant limits of AS B.
const (
	DefaultAccessTokenLifetime = 5 * time.Minute
	MaxAccessTokenLifetime     = time.Hour
	// DefaultMaxGrantAge bounds how far ahead a grant's exp may lie (oauth.md 4.2 item
	// 4: MAY reject an exp far in the future); grants are short-lived (oauth.md 2.3).
	DefaultMaxGrantAge = 5 * time.Minute
	// maxJTI bounds the jti that is written to the replay store.
	maxJTI = 256
)

// BearerPeer is a peer authorization server (AS A) whose grants this AS redeems, and
// the policy of what it may bring in.
type BearerPeer struct {
	// Issuer is the grant's iss, compared exactly (oauth.md 4.2 item 1).
	Issuer string
	// Keys are the peer's signing keys: a JWKS file or URL (keys.NewRemoteSet,
	// keys.LazyRemoteSet) or its RFC 8414 metadata (NewDiscoveredKeys). Never from the
	// grant.
	Keys keys.KeySet
	// Typs are the accepted JOSE typ values (default: exactly GrantTyp).
	Typs []string
	// Algs is the algorithm allow-list (default: every algorithm package keys supports;
	// never none, never a MAC; RS256 and PS256 only with RSA).
	Algs []string
	// RSA admits RS256 and PS256 grants (RFC 7523's mandatory algorithm, the default of
	// Keycloak, Okta and Entra ID); Keys must then be a set opened to RSA (keys.RSAPolicy:
	// 2048 to 8192 bits), since no other set holds RSA keys. Off, such a grant is
	// unsupported_alg whatever Keys holds.
	RSA bool
	// AllowUntyped accepts grants without a typ header (identity-chaining does not
	// require one); a typ that is present must still be one of Typs. It needs Audiences,
	// so that an untyped token of another kind from the same issuer is not taken for a
	// grant. Off, an untyped grant is wrong_type.
	AllowUntyped bool
	// Audiences, when set, are the aud values this peer's grants must name (one at
	// least), in place of this AS's issuer identifier and token endpoint (oauth.md 4.2
	// item 3): the name an identity provider knows this AS by.
	Audiences []string
	// Scopes are the scope tokens a grant of this peer may bring in; the granted scope
	// is the grant's intersected with them. Required: nothing is allowed by default.
	Scopes []string
	// Subject maps the grant's sub to the access token's (default: keep).
	Subject SubjectMap
	// Clients, when set, are the workloads (identifiers, or prefixes ending in "/")
	// that may present this peer's grants. Default: any workload whose WIT this AS
	// trusts.
	Clients []string
	// PeerConditions: CEL over the request, the grant (subject) and the peer
	// (policy.go).
	PeerConditions
	conds *grantpolicy.Conditions
	// AllowUnbound accepts grants without requested_cnf (from peers that do not bind
	// grants to the client's key). Off: a grant must name the presenting workload's key.
	AllowUnbound bool
}

// JWTBearerConfig configures a JWTBearer.
type JWTBearerConfig struct {
	// Issuer is this AS's issuer identifier: the aud grants must name (oauth.md 4.2
	// item 3) and the iss of its access tokens.
	Issuer string
	// TokenEndpoint is this AS's token endpoint URL (default Issuer + /token), also
	// accepted as a grant's aud.
	TokenEndpoint string
	// Keys signs access tokens (active key, with kid).
	Keys *keys.Ring
	// Authenticators authenticate the client workload; it must present a WIT
	// (the grant's requested_cnf and the access token's cnf name its key).
	Authenticators []oauth.Authenticator
	// Replay claims every grant's jti once, until its exp plus skew.
	Replay store.Replay
	// Peers whose grants are redeemed.
	Peers []BearerPeer
	// Audiences are the aud values of issued access tokens: the resource audience of
	// this domain (e.g. its trust domain). The first is used unless the request names
	// another with resource (RFC 8707). Required.
	Audiences []string
	// Lifetime of an access token (default 5 minutes, at most an hour).
	Lifetime time.Duration
	// MaxGrantAge bounds exp - now of a grant (default 5 minutes).
	MaxGrantAge time.Duration
	// Skew is the clock skew allowed on exp, nbf and iat (default 30 s).
	Skew time.Duration
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

// JWTBearer is AS B: the RFC 7523 jwt-bearer grant handler that redeems a peer's JWT
// authorization grant for an access token of this domain (oauth.md 2.4, 4.2;
// dialog-binding section 11 step 2). It never issues a refresh token (oauth.md 2.4
// item 6, RFC 7521 section 4.1).
type JWTBearer struct {
	cfg   JWTBearerConfig
	peers map[string]*BearerPeer
	auth  oauth.ClientAuth
	alone *oauth.Endpoint // ServeHTTP
}

// NewJWTBearer checks cfg and builds the handler.
func NewJWTBearer(cfg JWTBearerConfig) (*JWTBearer, error) {
	if cfg.Issuer == "" || cfg.Keys == nil || cfg.Keys.Active() == nil {
		return nil, fmt.Errorf("chaining: a jwt-bearer AS needs its issuer identifier and signing keys")
	}
	if len(cfg.Authenticators) == 0 || cfg.Replay == nil {
		return nil, fmt.Errorf("chaining: a jwt-bearer AS needs authenticators and a replay store")
	}
	if len(cfg.Audiences) == 0 {
		return nil, fmt.Errorf("chaining: a jwt-bearer AS needs the audience of its access tokens")
	}
	if len(cfg.Peers) == 0 {
		return nil, fmt.Errorf("chaining: a jwt-bearer AS needs at least one peer")
	}
	if err := endpointDefaults(cfg.Issuer, &cfg.TokenEndpoint, &cfg.Lifetime, DefaultAccessTokenLifetime, MaxAccessTokenLifetime, "access token", &cfg.Now, &cfg.Logger); err != nil {
		return nil, err
	}
	if cfg.MaxGrantAge <= 0 {
		cfg.MaxGrantAge = DefaultMaxGrantAge
	}
	if cfg.Skew <= 0 {
		cfg.Skew = oauth.DefaultSkew
	}
	b := &JWTBearer{cfg: cfg, peers: map[string]*BearerPeer{}, auth: oauth.ClientAuth{Authenticators: cfg.Authenticators, Missing: noWIT}}
	for _, p := range cfg.Peers {
		switch {
		case p.Issuer == "" || p.Keys == nil:
			return nil, fmt.Errorf("chaining: a jwt-bearer peer needs its issuer identifier and keys")
		case p.Issuer == cfg.Issuer:
			return nil, fmt.Errorf("chaining: peer %s is this AS itself", p.Issuer)
		case len(p.Scopes) == 0:
			return nil, fmt.Errorf("chaining: peer %s: scopes is required (nothing crosses by default)", p.Issuer)
		}
		if _, dup := b.peers[p.Issuer]; dup {
			return nil, fmt.Errorf("chaining: peer %s configured twice", p.Issuer)
		}
		if err := checkScopes(p.Scopes); err != nil {
			return nil, fmt.Errorf("chaining: peer %s: %w", p.Issuer, err)
		}
		if err := p.Subject.Check(); err != nil {
			return nil, fmt.Errorf("chaining: peer %s: %w", p.Issuer, err)
		}
		if err := checkPatterns(p.Clients); err != nil {
			return nil, fmt.Errorf("chaining: peer %s: %w", p.Issuer, err)
		}
		if len(p.Typs) == 0 {
			p.Typs = []string{GrantTyp}
		}
		if p.AllowUntyped && len(p.Audiences) == 0 {
			return nil, fmt.Errorf("chaining: peer %s: accepting untyped grants needs audiences", p.Issuer)
		}
		for _, a := range p.Audiences {
			if a == "" {
				return nil, fmt.Errorf("chaining: peer %s: an empty audience", p.Issuer)
			}
		}
		for _, a := range p.Algs {
			rsaAlg := p.RSA && keys.FamilyOf(a).IsRSA()
			if err := keys.CheckSignatureAlg(a); err != nil && !rsaAlg || keys.IsForbiddenAlg(a) {
				return nil, fmt.Errorf("chaining: peer %s: algorithm %q cannot be allowed", p.Issuer, a)
			}
		}
		conds, err := p.compile()
		if err != nil {
			return nil, err
		}
		p.conds = conds
		b.peers[p.Issuer] = &p
	}
	var err error
	if b.alone, err = oauth.NewEndpoint(oauth.EndpointConfig{Fallback: b, Observer: cfg.Observer, Auditor: cfg.Auditor}); err != nil {
		return nil, err
	}
	return b, nil
}

// AccessTokenResponse is the RFC 6749 section 5.1 response of AS B. It never carries a
// refresh_token.
type AccessTokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
	// Resource is the resource granted when the grant was an ID-JAG naming one.
	Resource string `json:"resource,omitempty"`
}

// bearerResult is the access token response with what the log line says of it.
type bearerResult struct {
	resp   *AccessTokenResponse
	claims *AccessTokenClaims
	kid    string
}

func (b *bearerResult) AppendJSON(buf []byte) []byte {
	return oauth.JSONResponse{V: b.resp}.AppendJSON(buf)
}

// bearerLog is what a refusal's log line says of the grant.
type bearerLog struct{ grantJTI string }

// Name implements oauth.Handler.
func (b *JWTBearer) Name() string { return HandlerNameAccessTokens }

// ServeHTTP serves POST to the token endpoint with this handler alone.
func (b *JWTBearer) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.alone.ServeHTTP(w, r) }

// Check implements oauth.Handler: step 1 of redeem, before the client is
// authenticated.
func (b *JWTBearer) Check(tr *oauth.TokenRequest, rec *oauth.Record) error {
	err := checkBearerRequest(tr)
	if err == nil {
		rec.SubjectSHA256 = tokenhash.Of(tr.Assertion)
	}
	return at(stageRequest, err)
}

// ClientAuth implements oauth.Handler: step 2 of redeem, the configured WIT methods.
// RFC 7523 section 3.1 lets a jwt-bearer request go without client authentication;
// this AS never does, since the access token is bound to the client's WIT key.
func (b *JWTBearer) ClientAuth() *oauth.ClientAuth { return &b.auth }

// Handle implements oauth.Handler.
func (b *JWTBearer) Handle(ctx context.Context, _ *http.Request, tr *oauth.TokenRequest, client *oauth.Client, rec *oauth.Record) (oauth.Response, error) {
	bl := &bearerLog{}
	rec.Detail = bl
	resp, claims, kid, err := b.redeem(ctx, tr, client, rec, bl)
	if err != nil {
		return nil, err
	}
	return &bearerResult{resp: resp, claims: claims, kid: kid}, nil
}

// Done implements oauth.Handler: the log line (the endpoint's Observer counts it).
func (b *JWTBearer) Done(ctx context.Context, r *http.Request, rec *oauth.Record) {
	var grantJTI string
	if bl, ok := rec.Detail.(*bearerLog); ok {
		grantJTI = bl.grantJTI
	}
	if rec.Err != nil {
		b.cfg.Logger.Log(ctx, errcode.LogLevel(rec.Err), "chaining access token refused", "error", rec.Error, "code", string(rec.Code),
			"kind", errcode.KindOf(rec.Err).String(), "peer", rec.Peer, "method", rec.Method, "requester", rec.Requester,
			"grant_sha256", rec.SubjectSHA256, "grant_jti", grantJTI, "remote", r.RemoteAddr, "detail", rec.Err.Error())
		return
	}
	res := rec.Response.(*bearerResult)
	b.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "chaining access token issued", slog.String("peer", rec.Peer),
		slog.String("method", rec.Method), slog.String("requester", rec.Requester), slog.String("grant_sha256", rec.SubjectSHA256),
		slog.String("grant_jti", grantJTI), slog.String("jti", res.claims.Jti), slog.String("access_token_sha256", tokenhash.Of(res.resp.AccessToken)),
		slog.String("kid", res.kid), slog.String("scope", res.claims.Scope), slog.Int64("exp", int64(*res.claims.Exp)), slog.String("remote", r.RemoteAddr))
}

// redeem runs a jwt-bearer request through its steps, first failure wins, the replay
// store last so that nothing unauthenticated or invalid is ever written to it:
//
//  1. form, bounds, grant_type, one assertion (invalid_request): Check;
//  2. client authentication with a WIT and a proof (invalid_client): the endpoint, as
//     ClientAuth says, and boundClient;
//  3. resource, if any, is an audience this AS issues for (invalid_target);
//  4. the grant (oauth.md 4.2, everything invalid_grant): iss a configured peer; typ
//     one of the peer's (or none, where the peer allows untyped grants); alg allowed
//     (RS256 and PS256 only for a peer opened to RSA); the key by kid from the peer's
//     keys only; the signature; sub; aud naming this AS (issuer identifier or token
//     endpoint, or the peer's audiences, exact);
//     exp required and at most MaxGrantAge ahead, nbf, iat not in the future; jti;
//     requested_cnf.jkt equal to the thumbprint of the client's WIT key;
//  5. the client may present this peer's grants (unauthorized_client);
//  6. scope: the grant's, intersected with the peer's allowed scopes, and what the
//     request asks within that (invalid_scope);
//  7. subject mapping (invalid_grant: the subject cannot be identified, oauth.md 2.4);
//  8. the grant's jti claimed once until exp plus skew (replayed: invalid_grant; a store
//     that does not answer: temporarily_unavailable);
//  9. the RFC 9068 access token, bound to the client's WIT key (cnf.jkt).
func (b *JWTBearer) redeem(ctx context.Context, tr *oauth.TokenRequest, req *oauth.Client, rec *oauth.Record, bl *bearerLog) (*AccessTokenResponse, *AccessTokenClaims, string, error) {
	if err := boundClient(tr, req); err != nil {
		return nil, nil, "", err
	}
	aud := b.cfg.Audiences[0]
	if tr.Resource != "" {
		if !slices.Contains(b.cfg.Audiences, tr.Resource) {
			return nil, nil, "", at(stageRequest, errcode.New(errcode.AudienceNotServed, "resource %q is not served by this authorization server", errcode.Cut(tr.Resource)))
		}
		aud = tr.Resource
	}
	now := b.cfg.Now()
	peer, g, err := b.verifyGrant(ctx, tr.Assertion, now)
	if peer != nil {
		rec.Peer = peer.Issuer
	}
	if g != nil {
		bl.grantJTI = errcode.Cut(g.Jti)
	}
	if err != nil {
		return nil, nil, "", at(stageGrant, err)
	}
	holder := Thumbprint(req.WIT.Key)
	bound, member := g.RequestedCnf, "requested_cnf"
	var jag *idjagGrant
	if g.isIDJAG {
		// ID-JAG draft sections 4.4.1 (client_id, resource, authorization_details)
		// and 8.6.1 (cnf).
		if jag, err = b.checkIDJAG(g, req.IDString(), tr.Resource); err != nil {
			return nil, nil, "", at(stageGrant, err)
		}
		bound, member = g.Cnf, "cnf"
	}
	switch {
	case bound == nil && !peer.AllowUnbound:
		return nil, nil, "", at(stageGrant, errcode.New(errcode.GrantBindingMismatch, "the grant names no %s: it is not bound to a client", member))
	case bound != nil && bound.JKT != holder:
		return nil, nil, "", at(stageGrant, errcode.New(errcode.GrantBindingMismatch, "the grant was issued for another workload's key (%s.jkt)", member))
	}
	if jag != nil {
		aud = jag.audience // its resources were checked with the ID-JAG (checkIDJAG)
	} else if aud, err = b.grantResource(aud, tr.Resource, g.Resource); err != nil {
		return nil, nil, "", at(stageRequest, err)
	}
	if len(peer.Clients) > 0 && !matchWorkload(peer.Clients, req.ID) {
		return nil, nil, "", at(stagePolicy, errcode.New(errcode.WorkloadNotAllowed, "%s may not present grants of %s", req.ID, peer.Issuer))
	}
	scope, err := bearerScope(tr.Scope, g.Scope, peer.Scopes)
	if err != nil {
		return nil, nil, "", at(stageRequest, err)
	}
	if peer.conds != nil {
		if scope, err = decidePeer(ctx, peer.conds, peer.Issuer, tr, req, grantSubject(g, g.Iss, g.Sub, scope), presentedGrant(g), peer.Issuer, peer.Audiences, scope); err != nil {
			return nil, nil, "", err
		}
	}
	sub, err := peer.Subject.Map(g.Sub)
	if err != nil {
		return nil, nil, "", at(stageGrant, err)
	}
	// Held until the grant can no longer be accepted: exp plus skew.
	ttl := g.Exp.Time().Add(b.cfg.Skew).Sub(now)
	if err := b.cfg.Replay.Claim(ctx, "chaining:grant:"+peer.Issuer+"\x00"+g.Jti, ttl); err != nil {
		return nil, nil, "", at(stageGrant, err)
	}
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(b.cfg.Lifetime).Unix())
	sc := strings.Join(scope, " ")
	claims := &AccessTokenClaims{Iss: b.cfg.Issuer, Sub: sub, Aud: jose.Audience{aud}, ClientID: req.ID.String(),
		Scope: sc, Iat: &iat, Exp: &exp, Jti: newJTI(), Cnf: &Confirmation{JKT: holder}}
	key := b.cfg.Keys.Active()
	tok, err := jose.SignClaims(AccessTokenTyp, key, true, claims)
	if err != nil {
		return nil, nil, "", at(stageIssue, errcode.Wrap(errcode.Internal, err, "signing"))
	}
	resp := &AccessTokenResponse{AccessToken: tok, TokenType: "Bearer", ExpiresIn: int64(exp - iat), Scope: sc}
	if jag != nil && jag.resource {
		// ID-JAG draft section 4.4.1: the granted resource is in the response.
		resp.Resource = aud
	}
	return resp, claims, key.KID(), nil
}

// verifyGrant applies oauth.md 4.2 to a grant through the one typed-token path
// (package jose). The claims are decoded before the signature is checked only to find
// the peer by iss (as a WIT's sub selects its anchors); nothing in them counts until the
// signature verified with that peer's key.
func (b *JWTBearer) verifyGrant(ctx context.Context, raw string, now time.Time) (*BearerPeer, *GrantClaims, error) {
	t, err := jose.Parse(raw, MaxAssertion)
	if err != nil {
		return nil, nil, err
	}
	var g GrantClaims
	if err := netjson.DecodeClaims(t.Payload, &g); err != nil {
		return nil, nil, err
	}
	if g.Iss == "" {
		return nil, nil, errcode.New(errcode.MissingClaim, "the grant has no iss")
	}
	peer, ok := b.peers[g.Iss]
	if !ok {
		return nil, nil, errcode.New(errcode.UntrustedIssuer, "grants of %q are not accepted here", errcode.Cut(g.Iss))
	}
	typ := peer.Typs[0]
	for _, ty := range peer.Typs {
		if jose.TypeMatches(t.Typ, ty) {
			typ = ty
			break
		}
	}
	if err := t.CheckHeader(jose.Options{Typ: typ, Algs: peer.Algs, RSA: peer.RSA, AllowUntyped: peer.AllowUntyped}); err != nil {
		return peer, nil, err
	}
	key, err := peer.Keys.LookupKey(ctx, t.Kid)
	if err != nil {
		return peer, nil, err
	}
	if err := t.VerifyWith(key, false); err != nil {
		return peer, nil, err
	}
	auds := peer.Audiences
	if len(auds) == 0 {
		auds = []string{b.cfg.Issuer, b.cfg.TokenEndpoint}
	}
	g.isIDJAG, g.typ = t.Typ != "" && jose.TypeMatches(t.Typ, IDJAGTyp), t.Typ
	switch {
	case g.Sub == "":
		return peer, &g, errcode.New(errcode.MissingClaim, "the grant has no sub")
	case g.isIDJAG && (len(g.Aud) != 1 || g.Aud[0] != b.cfg.Issuer):
		// ID-JAG draft section 4.4.1: aud is this AS's issuer identifier, a string or
		// an array of exactly that one element; nothing else.
		return peer, &g, errcode.New(errcode.AudienceMismatch, "the ID-JAG's aud is not exactly this authorization server's issuer identifier")
	case !g.isIDJAG && !slices.ContainsFunc(auds, g.Aud.Contains):
		return peer, &g, errcode.New(errcode.AudienceMismatch, "the grant's aud does not name this authorization server")
	case g.isIDJAG && g.Iat == nil:
		// Section 3.1: iat REQUIRED.
		return peer, &g, errcode.New(errcode.MissingClaim, "the ID-JAG has no iat")
	}
	if err := jose.CheckTimes(jose.TimeRules{Now: now, Skew: b.cfg.Skew, RequireExp: true, MaxLifetime: b.cfg.MaxGrantAge}, g.Exp, g.Nbf, g.Iat); err != nil {
		return peer, &g, err
	}
	if g.Jti == "" || len(g.Jti) > maxJTI {
		return peer, &g, errcode.New(errcode.MissingClaim, "the grant needs a jti of at most %d octets: it is redeemed once", maxJTI)
	}
	return peer, &g, nil
}

// bearerScope: what may be granted is the grant's scope within the peer's allowed
// scopes; a request asks within that (more is refused, never trimmed), or takes all of
// it. A grant without scope says nothing about what it authorizes: refused
// (scope_unknown), never treated as unconstrained.
func bearerScope(requested []string, grant *string, allowed []string) ([]string, error) {
	if grant == nil {
		return nil, errcode.New(errcode.ScopeUnknown, "the grant carries no scope")
	}
	gs, err := oauth.ParseScope(*grant)
	if err != nil {
		return nil, errcode.New(errcode.ScopeUnknown, "the grant's scope is not a valid scope")
	}
	var may []string
	for _, s := range gs {
		if slices.Contains(allowed, s) {
			may = append(may, s)
		}
	}
	if requested == nil {
		if len(may) == 0 {
			return nil, errcode.New(errcode.ScopeTooBroad, "no scope of the grant may be granted in this domain")
		}
		return may, nil
	}
	for _, s := range requested {
		if !slices.Contains(may, s) {
			return nil, errcode.New(errcode.ScopeTooBroad, "scope %q is not within the grant's scope as this domain allows it", errcode.Cut(s))
		}
	}
	return requested, nil
}
