package proxy

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/httpbody"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Fields the egress sets on the response of a route crossing a trust boundary: what it
// did on the other side (section 11). Only the egress knows that the linked dialog
// continues the agent's; the agent goes on naming its own dialog.
const (
	// LinkedDialogField: the identifier (dlg) of the linked dialog in the other trust
	// domain that carries the agent's dialog there, the workload its initiator.
	LinkedDialogField = "Dialogtrust-Linked-Dialog"
	// LinkedEstablishedField: "true" when this request started the linked dialog
	// (identity chaining ran: Figure 5 steps 1 to 3), "false" when it continued one.
	LinkedEstablishedField = "Dialogtrust-Linked-Established"
)

// BoundaryRoute marks a Route as crossing a trust boundary (dialog-binding section 11,
// Figure 5). A dialog does not cross one: for a request in a dialog D1 of this domain
// the egress gets D1's Txn-Token from the TTS (the route's TxnAudience and TxnScope),
// sends it to AS A for a JWT authorization grant for AS B (identity chaining, the only
// place it is ever sent), redeems the grant at AS B for an access token of the peer
// domain, and starts a linked dialog D2 with the upstream, the workload as initiator,
// with the access token (agent.Linker). Later requests in D1 continue D2 with the same
// access token, obtained again (steps 1 and 2, D2 kept) shortly before it or the WIT it
// is bound to expires. Neither D1 nor its Txn-Token nor provenance reaches the other
// domain (section 13, domain separation).
type BoundaryRoute struct {
	// GrantEndpoint is AS A's token endpoint: this domain's TTS, which issues the
	// grants.
	GrantEndpoint string
	// PeerIssuer is AS B's issuer identifier, the audience of the grant.
	PeerIssuer string
	// PeerTokenEndpoint is AS B's token endpoint, in the other domain.
	PeerTokenEndpoint string
	// PeerTrustDomain is the other domain's trust domain, the one the linked dialog is
	// in (required): the route believes a signed response only from a workload of it
	// (Route.ResponseSigners narrows it).
	PeerTrustDomain string
	// Scope narrows the grant and the access token (space-separated); "" takes what
	// the Txn-Token's scope allows to cross.
	Scope string
	// HTTPClient carries the requests to AS A and AS B (default: the system's or the
	// egress's roots, no environment proxy, MaxIdleConnsPerUpstream idle connections
	// per host, 30 s timeout).
	HTTPClient *http.Client
	// PeerClient, when set, also authenticates the egress to AS B as an OAuth client
	// with client_secret_basic (RFC 6749 section 2.3.1), beside the WIT and its proof:
	// an AS B that is not ours may require client authentication for the jwt-bearer
	// grant (Ory Hydra always does; docs/hydra.md). The secret goes in the requests to
	// PeerTokenEndpoint and nowhere else: not to AS A, not to the upstream, not to a
	// redirect's target.
	PeerClient *PeerClient
}

// PeerClient is the egress's OAuth client at AS B (BoundaryRoute.PeerClient): its
// client_id and client secret there.
type PeerClient struct {
	ID     string
	Secret string
}

// maxLinks bounds the egress's dialog links per route.
const maxLinks = 4096

// linkMargin is how long before the access token or its WIT expires a new one is
// obtained for the linked dialog.
const linkMargin = 30 * time.Second

// boundaryLink is the state of one route crossing a trust boundary: how to chain, and
// the link of each dialog of this domain to its linked dialog in the other.
type boundaryLink struct {
	cfg       BoundaryRoute
	self      identifier.ID
	txn       agent.TxnTokenSource // D1's Txn-Token, from this domain's TTS
	source    wit.Source
	transport *agent.Transport // signing, without a Txn-Token source
	tokens    *chaining.Client
	now       func() time.Time

	mu    sync.Mutex
	links map[string]*link
}

// link is one D1 -> D2 link. sem is held while the link is made or its access token
// renewed, so that concurrent first requests in D1 start one D2.
type link struct {
	sem chan struct{}

	// Set under sem; read under sem.
	d2          *dialog.Context
	accessToken string
	cred        *wit.Credential
	renew       time.Time
	txnToken    string // the last Txn-Token of D1, for the guard only

	lastUse time.Time // under boundaryLink.mu
}

// newBoundaryLink checks a boundary route and takes its Txn-Token source away from t:
// the request to the other domain never carries one (t keeps signing for the link).
func newBoundaryLink(cfg EgressConfig, prefix string, rt Route, t *agent.Transport) (*boundaryLink, error) {
	b := rt.Boundary
	switch {
	case rt.Proof != proof.HTTPSig:
		return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a route crossing a trust boundary needs the HTTP signature: a WPT occupies the Authorization field that carries the access token", prefix)
	case t.Tokens == nil:
		return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a route crossing a trust boundary needs a Txn-Token audience: the grant is asked for with the dialog's Txn-Token", prefix)
	case b.GrantEndpoint == "" || b.PeerIssuer == "" || b.PeerTokenEndpoint == "":
		return nil, errcode.New(errcode.InvalidRequest, "egress route %s: a route crossing a trust boundary needs AS A's grant endpoint, AS B's issuer and AS B's token endpoint", prefix)
	case len(b.PeerIssuer) > 2048:
		return nil, errcode.New(errcode.InvalidRequest, "egress route %s: the peer issuer is over 2048 octets", prefix)
	}
	for _, ep := range []string{b.GrantEndpoint, b.PeerTokenEndpoint} {
		if _, err := CheckUpstream(ep, rt.AllowPlainHTTP); err != nil {
			return nil, errcode.Wrap(errcode.InvalidRequest, err, "egress route %s: token endpoint", prefix)
		}
	}
	hc := b.HTTPClient
	if hc == nil {
		tr := upstreamTransport() // the grant request carries the Txn-Token; every link's grants and token requests
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: cfg.RootCAs}
		hc = &http.Client{Transport: tr, Timeout: upstreamTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	if pc := b.PeerClient; pc != nil {
		// Both parsed as the token clients' requests are (CheckUpstream parsed them).
		peer, _ := url.Parse(b.PeerTokenEndpoint)
		grant, _ := url.Parse(b.GrantEndpoint)
		switch {
		case pc.ID == "" || pc.Secret == "":
			return nil, errcode.New(errcode.InvalidRequest, "egress route %s: the client at AS B needs its client_id and secret", prefix)
		case peer.String() == grant.String():
			// The secret would ride along with the Txn-Token in the grant request.
			return nil, errcode.New(errcode.InvalidRequest, "egress route %s: the client secret of AS B is sent to AS B's token endpoint only, and it is AS A's too", prefix)
		}
		withAuth := *hc
		withAuth.Transport = &peerClientAuth{base: hc.Transport, endpoint: peer.String(),
			basic: "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(pc.ID)+":"+url.QueryEscape(pc.Secret)))}
		hc = &withAuth
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	l := &boundaryLink{cfg: *b, self: cfg.Self, txn: t.Tokens, source: cfg.WIT, transport: t,
		// The proofs to AS A and AS B carry the time as the signing transport's do;
		// cfg.Now drives the link's renewal.
		tokens: &chaining.Client{HTTPClient: hc, Proof: proof.HTTPSig, Now: time.Now}, now: now, links: map[string]*link{}}
	t.Tokens = nil
	return l, nil
}

// peerClientAuth adds the egress's client authentication at AS B (client_secret_basic)
// to the requests to AS B's token endpoint, after the proof is made: AS B reads it
// beside the WIT and the signature, which do not cover it.
type peerClientAuth struct {
	base     http.RoundTripper
	endpoint string
	basic    string // "Basic " and the form-encoded client_id:secret (RFC 6749 section 2.3.1)
}

func (p *peerClientAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	base := p.base
	if base == nil {
		base = http.DefaultTransport
	}
	if r.Method != http.MethodPost || r.URL.String() != p.endpoint {
		return base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", p.basic)
	return base.RoundTrip(r)
}

// serve sends out, the agent's request already cleaned (egress.serve), in the linked
// dialog of dc, and writes the answer for the agent.
func (b *boundaryLink) serve(ctx context.Context, w http.ResponseWriter, out *http.Request, dc *dialog.Context, start bool, note refusalNote) error {
	if start || dc == nil {
		return errcode.New(errcode.InvalidRequest, "a route crossing a trust boundary continues a dialog of this domain in a linked dialog: send that dialog's Dialog-Context (section 11)")
	}
	// The access token travels in Authorization; the agent's own would be signed over
	// and sent to the other domain beside it.
	out.Header.Del("Authorization")
	for _, vals := range out.Header {
		for _, v := range vals {
			if containsToken(v, dc.DLG()) {
				return errcode.New(errcode.CrossesTrustBoundary, "a request to another trust domain carries the identifier of this domain's dialog")
			}
		}
	}
	l := b.entry(dc)
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return errcode.Unavailable(errcode.UpstreamUnavailable, ctx.Err(), "the linked dialog is being set up by another request")
	}
	if l.d2 == nil {
		defer func() { <-l.sem }()
		return b.start(ctx, w, out, dc, l, note)
	}
	if !b.now().Before(l.renew) {
		if err := b.renew(ctx, dc, l); err != nil {
			<-l.sem
			return err
		}
	}
	d2, at, cred, txn := l.d2, l.accessToken, l.cred, l.txnToken
	<-l.sem
	out.Header.Set("Authorization", "Bearer "+at)
	peer := *b.transport
	peer.Source = cred.Expiring(b.now) // the one credential the link's access token is bound to (cnf.jkt)
	peer.Base = linkGuard{base: b.transport.Base, d1: dc.DLG(), d2: d2.DLG(), txnToken: txn}
	a := &agent.Agent{Self: b.self, Client: &http.Client{Transport: &peer, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
	res, err := a.Continue(ctx, out, d2, nil)
	if err != nil {
		return upstreamError(err)
	}
	defer res.Body.Close()
	return writeLinked(w, res, dc, d2, true, false, note)
}

// start is Figure 5 steps 1 to 3 for the first request in D1 (l.sem held).
func (b *boundaryLink) start(ctx context.Context, w http.ResponseWriter, out *http.Request, dc *dialog.Context, l *link, note refusalNote) error {
	txn, err := b.txn.TxnToken(ctx, dc.DLG())
	if err != nil {
		return upstreamError(err)
	}
	linker := &agent.Linker{Self: b.self, Transport: b.transport, Tokens: b.tokens, Now: b.now}
	linked, err := linker.Link(ctx, agent.LinkConfig{TxnToken: txn, GrantEndpoint: b.cfg.GrantEndpoint, PeerIssuer: b.cfg.PeerIssuer,
		PeerTokenEndpoint: b.cfg.PeerTokenEndpoint, Scope: b.cfg.Scope, Request: out, PeerTrustDomain: b.cfg.PeerTrustDomain, Signers: b.transport.ResponseSigners})
	if err != nil {
		return upstreamError(err)
	}
	defer linked.Response.Body.Close()
	if linked.Response.StatusCode < 300 {
		// D2 exists at the peer only once it accepted the first request (section 5); a
		// refused one leaves nothing to continue.
		l.d2, l.accessToken, l.cred, l.txnToken = linked.Dialog, linked.AccessToken, linked.Credential, txn
		l.renew = renewAt(b.now(), linked.Expiry, linked.Credential.Expiry)
	}
	return writeLinked(w, linked.Response, dc, linked.Dialog, l.d2 != nil, true, note)
}

// renew obtains a new access token for l's D2 (steps 1 and 2 again, with the WIT the
// source gives now; l.sem held).
func (b *boundaryLink) renew(ctx context.Context, dc *dialog.Context, l *link) error {
	txn, err := b.txn.TxnToken(ctx, dc.DLG())
	if err != nil {
		return upstreamError(err)
	}
	cred, err := b.source.Credential(ctx)
	if err != nil {
		return upstreamError(err)
	}
	tokens := *b.tokens
	tokens.WITSource, tokens.WIT, tokens.Key = nil, cred.WIT, cred.Key
	g, err := tokens.Grant(ctx, chaining.GrantParams{TokenEndpoint: b.cfg.GrantEndpoint, TxnToken: txn, Audience: b.cfg.PeerIssuer, Scope: b.cfg.Scope})
	if err != nil {
		return upstreamError(err)
	}
	at, err := tokens.Redeem(ctx, b.cfg.PeerTokenEndpoint, g.AccessToken, b.cfg.Scope)
	if err != nil {
		return upstreamError(err)
	}
	now := b.now()
	l.accessToken, l.cred, l.txnToken = at.AccessToken, cred, txn
	l.renew = renewAt(now, now.Add(time.Duration(at.ExpiresIn)*time.Second), cred.Expiry)
	return nil
}

// renewAt is when a link's access token is obtained again: linkMargin before it or
// its WIT expires, or half-way for a short-lived one.
func renewAt(now, tokenExpiry, witExpiry time.Time) time.Time {
	end := tokenExpiry
	if witExpiry.Before(end) {
		end = witExpiry
	}
	life := end.Sub(now)
	if life <= 2*linkMargin {
		return now.Add(life / 2)
	}
	return end.Add(-linkMargin)
}

// entry is the link of dc, made (empty) if there is none; the least recently used
// link goes when there are maxLinks.
func (b *boundaryLink) entry(dc *dialog.Context) *link {
	key := dc.DLG() + " " + dc.Initiator().String()
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if l, ok := b.links[key]; ok {
		l.lastUse = now
		return l
	}
	if len(b.links) >= maxLinks {
		var oldest string
		var at time.Time
		for k, l := range b.links {
			if oldest == "" || l.lastUse.Before(at) {
				oldest, at = k, l.lastUse
			}
		}
		delete(b.links, oldest)
	}
	l := &link{sem: make(chan struct{}, 1), lastUse: now}
	b.links[key] = l
	return l
}

// writeLinked answers the agent with the peer's response, in the agent's dialog: the
// peer's Dialog-Context (D2) is replaced by the agent's (D1), and the peer's signature
// over D2, its WIT and any Txn-Token, provenance or Dialogtrust-* field it sent are
// removed. linked says whether D2 exists (a refused first request leaves none), and
// established whether this request started it.
func writeLinked(w http.ResponseWriter, res *http.Response, d1, d2 *dialog.Context, linked, established bool, note refusalNote) error {
	body, err := httpbody.Read(res.Body, MaxBody, "upstream response")
	if err != nil {
		return errcode.Unavailable(errcode.UpstreamUnavailable, err, "the upstream's response is not usable")
	}
	echoed, _ := dialog.FromHeader(res.Header)
	for _, f := range []string{dialog.HeaderName, "Signature", "Signature-Input", wit.HeaderName, txntoken.HeaderName, dialog.ProvenanceHeader} {
		res.Header.Del(f)
	}
	removePrefixed(res.Header)
	if echoed != nil && echoed.Equal(d2) {
		res.Header.Set(dialog.HeaderName, d1.Value())
	}
	if linked {
		res.Header.Set(LinkedDialogField, d2.DLG())
		res.Header.Set(LinkedEstablishedField, boolText(established))
	}
	note(res, body) // a refusal of the peer's is marked and logged as the upstream's
	writeResponse(w, res, body)
	return nil
}

// linkGuard refuses a request in a linked dialog that would carry a Txn-Token or
// provenance field, a field holding this domain's Txn-Token or dialog identifier, or a
// Dialog-Context other than D2's; it runs after signing, on the fields really sent (as
// agent.Linker's guard does for the first request).
type linkGuard struct {
	base     http.RoundTripper
	d1, d2   string
	txnToken string
}

func (g linkGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	refuse := func(what string) (*http.Response, error) {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, errcode.New(errcode.CrossesTrustBoundary, "a request of a linked dialog carries %s", what)
	}
	if len(r.Header.Values(txntoken.HeaderName)) > 0 || len(r.Header.Values(dialog.ProvenanceHeader)) > 0 {
		return refuse("a Txn-Token or provenance field")
	}
	if dc, err := dialog.FromHeader(r.Header); err != nil || dc == nil || dc.DLG() != g.d2 {
		return refuse("another Dialog-Context than the linked dialog's")
	}
	for _, vals := range r.Header {
		for _, v := range vals {
			if containsToken(v, g.d1) || g.txnToken != "" && strings.Contains(v, g.txnToken) {
				return refuse("the dialog identifier or the Txn-Token of the original domain")
			}
		}
	}
	base := g.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// BoundaryIngress makes an Ingress the boundary-facing side of a linked dialog (B1 in
// Figure 5, section 11 steps 3 and 4): callers from another trust domain send no
// Txn-Token but an access token of this domain's AS, bound to their WIT key, covered by
// their HTTP signature, in a dialog they initiate. The Receiver verifies the WIT (it
// trusts the other domain's WIT issuer), the signature and creates the dialog; then
// Acceptor checks the access token and exchanges it at this domain's TTS for a
// Txn-Token recording the linked dialog, whose validated claims the application gets in
// VerifiedTxnTokenClaimsField. A request carrying a Txn-Token or provenance is refused
// (crosses_trust_boundary), and one without an access token (missing_credential),
// before the Receiver runs.
//
// The Txn-Token is kept for later requests with the same access token in the same
// linked dialog and scope, until shortly before it or the access token expires
// (renewAt): the Acceptor's checks run on every request, the TTS exchange only when
// there is no kept token (boundary_txncache.go).
type BoundaryIngress struct {
	// Acceptor checks the access token and asks this domain's TTS.
	Acceptor *agent.LinkAcceptor
	// TxnTokens validates the Txn-Token the TTS returns (this domain's TTS keys and
	// trust domain).
	TxnTokens dialog.TxnTokenVerifier
	// Now is the clock a kept Txn-Token's lifetime is measured with (default
	// time.Now).
	Now func() time.Time

	txns boundaryTxnCache
}

func (b *BoundaryIngress) check() error {
	if b.Acceptor == nil || b.Acceptor.AccessTokens == nil || b.Acceptor.TTS == nil || b.Acceptor.TrustDomain == "" || b.TxnTokens == nil {
		return errcode.New(errcode.InvalidRequest, "ingress: a boundary-facing ingress needs the link acceptor (TTS client, access token verifier, trust domain) and a Txn-Token verifier")
	}
	return nil
}

// precheck refuses, before the Receiver records anything, a request that carries a
// credential of another domain or no valid access token.
func (b *BoundaryIngress) precheck(r *http.Request) error {
	if len(r.Header.Values(txntoken.HeaderName)) > 0 || len(r.Header.Values(dialog.ProvenanceHeader)) > 0 {
		return errcode.New(errcode.CrossesTrustBoundary, "a Txn-Token or provenance never crosses a trust boundary: a linked dialog request carries neither")
	}
	authz := r.Header.Values("Authorization")
	if len(authz) != 1 {
		return errcode.New(errcode.MissingCredential, "exactly one Authorization: Bearer field is required")
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(authz[0]), " ")
	if tok = strings.TrimSpace(tok); !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return errcode.New(errcode.MissingCredential, "exactly one Authorization: Bearer field is required")
	}
	_, err := b.Acceptor.AccessTokens.Verify(r.Context(), tok)
	return err
}

// accept runs after the Receiver: the Acceptor's checks and step 4 (or the Txn-Token
// step 4 gave for the same access token, linked dialog and scope), and returns what
// the application is told, with the validated claims of this domain's Txn-Token.
func (b *BoundaryIngress) accept(r *http.Request, v *dialog.Verified) (*dialog.Verified, error) {
	checked, err := b.Acceptor.Check(r.Context(), v, r.Header)
	if err != nil {
		return nil, err
	}
	now := b.Now
	if now == nil {
		now = time.Now
	}
	claims, err := b.txns.txnToken(r.Context(), checked, now, func(ctx context.Context) (*txntoken.Claims, error) {
		res, err := b.Acceptor.Exchange(ctx, checked)
		if err != nil {
			return nil, err
		}
		claims, err := b.TxnTokens.Verify(ctx, res.AccessToken)
		if err != nil {
			return nil, err
		}
		if err := txntoken.DialogMatches(claims, checked.Dialog); err != nil {
			return nil, err
		}
		return claims, nil
	})
	if err != nil {
		return nil, err
	}
	out := *v
	out.Txn = claims
	return &out, nil
}

// containsToken reports whether dlg occurs in v as a whole token: not inside a longer
// run of the characters a dialog identifier is made of (a short identifier would
// otherwise be found in every signature and WIT).
func containsToken(v, dlg string) bool {
	for i := 0; dlg != "" && i+len(dlg) <= len(v); {
		j := strings.Index(v[i:], dlg)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(dlg)
		if (start == 0 || !dlgChar(v[start-1])) && (end == len(v) || !dlgChar(v[end])) {
			return true
		}
		i = start + 1
	}
	return false
}

// dlgChar: the characters of a dialog identifier (package dialog).
func dlgChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._~:-", c) >= 0
}
