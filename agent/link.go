package agent

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Linker starts linked dialogs across a trust boundary (dialog-binding section 11,
// Figure 5), for a participant (A2) that holds a Txn-Token of its own domain recording
// the dialog it is in (D1):
//
//  1. it asks AS A for a JWT authorization grant for the peer domain's AS B, with the
//     Txn-Token as subject token (the only place that token is ever sent);
//  2. it redeems the grant at AS B for an access token of the peer domain;
//  3. it starts a new dialog D2 with the peer participant (B1), itself as initiator,
//     sending the access token as `Authorization: Bearer`, covered by its WIMSE HTTP
//     signature, and neither a Txn-Token nor Dialog-Provenance: D1, its Txn-Token and
//     its provenance stay in domain A. Only the Linker's caller knows that D2 continues
//     D1.
//
// With an ID token in place of the Txn-Token (LinkConfig.IDToken), step 1 asks AS A for
// an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant section 4.3) on the ID
// token, and step 2 redeems the ID-JAG (section 4.4); step 3 is the same, and the ID
// token stays in domain A as the Txn-Token does.
//
// The request to B1 is sent through a copy of Transport without its Txn-Token source,
// and a guard refuses (crosses_trust_boundary) any request that would still carry a
// Txn-Token or provenance field, or the dialog identifier of D1.
type Linker struct {
	// Self is the agent's workload identifier: the initiator of the linked dialog.
	Self identifier.ID
	// Transport is the agent's signing transport; it must use the HTTP signature (a
	// WPT occupies the Authorization field the access token needs) and verify B1's
	// signed responses (its Responses verifier must trust B1's WIT issuer).
	Transport *Transport
	// Tokens sets how AS A and AS B are asked (HTTP client, proof, clock); its
	// credentials are always replaced by the one credential of the link, taken from
	// Transport.Source. Default: the HTTP signature over http.DefaultClient.
	Tokens *chaining.Client
	// Now is the clock of the proofs to AS A and AS B (unless Tokens has one) and of
	// Linked.Expiry (default time.Now).
	Now func() time.Time
}

// LinkConfig is one linked dialog to start.
type LinkConfig struct {
	// TxnToken is the Txn-Token of the original dialog (D1), in domain A. It is sent to
	// GrantEndpoint only.
	TxnToken string
	// IDToken, in place of TxnToken, is an ID token of an identity provider AS A trusts,
	// issued to this agent: AS A issues an ID-JAG on it, which AS B redeems. Like the
	// Txn-Token it is sent to GrantEndpoint only. Exactly one of the two is set.
	IDToken string
	// GrantEndpoint is AS A's token endpoint (domain A).
	GrantEndpoint string
	// PeerIssuer is AS B's issuer identifier: the audience of the grant.
	PeerIssuer string
	// PeerTokenEndpoint is AS B's token endpoint (domain B).
	PeerTokenEndpoint string
	// PeerTrustDomain is domain B's trust domain, the one D2 is in: B1's signed
	// responses are believed only from a workload of it (section 11), or of Signers
	// when set (within it). One of the two is required: nothing in the exchange says
	// which trust domain the peer is, and a signature by any other would be believed.
	PeerTrustDomain string
	Signers         *Signers
	// Scope narrows the grant and the access token (space-separated); "" takes what
	// the Txn-Token's scope allows to cross.
	Scope string
	// Request is the first request of D2 to the peer participant; it may carry D2's
	// first input, so establishing D2 adds no round trip (section 5).
	Request *http.Request
	// Dialog is D2's identifier; "" picks a fresh one. It is never D1's.
	Dialog string
	// Body, when set, gives the first request's body once the access token and D2's
	// identifier are known: for example a handoff offer whose grant is the digest of
	// that access token (handoff-context section 5.7, across a trust boundary).
	Body func(accessToken, dlg string) ([]byte, error)
}

// Linked is a started linked dialog.
type Linked struct {
	// Response is B1's response to the first request (its body is the caller's to
	// close).
	Response *http.Response
	// Dialog is D2's Dialog-Context.
	Dialog *dialog.Context
	// AccessToken is the domain-B access token; later requests in D2 send it again
	// (with Continue and an `Authorization: Bearer` field) until Expiry, signed with
	// Credential: the token is bound to its WIT key (cnf.jkt), so once the agent's WIT
	// source has moved on to a new key, a new link (grant) is needed.
	AccessToken string
	Expiry      time.Time
	Scope       string
	Credential  *wit.Credential
	// Signers are the workloads of domain B whose signed responses are believed: the
	// ResponseSigners of the transport that continues D2.
	Signers *Signers
}

// Link runs steps 1 to 3 of Figure 5.
func (l *Linker) Link(ctx context.Context, c LinkConfig) (*Linked, error) {
	if l.Transport == nil || l.Transport.Source == nil || l.Self.IsZero() {
		return nil, errcode.New(errcode.InvalidRequest, "a linker needs the agent's identifier and signing transport")
	}
	if l.Transport.Proof != proof.HTTPSig {
		return nil, errcode.New(errcode.InvalidRequest, "a linked dialog needs the HTTP signature: a WPT occupies the Authorization field that carries the access token")
	}
	if (c.TxnToken == "") == (c.IDToken == "") || c.GrantEndpoint == "" || c.PeerIssuer == "" || c.PeerTokenEndpoint == "" || c.Request == nil {
		return nil, errcode.New(errcode.InvalidRequest, "a linked dialog needs the Txn-Token or an ID token (one of them), both token endpoints, the peer AS and the first request")
	}
	signers, err := c.signers()
	if err != nil {
		return nil, err
	}
	d1 := dialogOf(c.TxnToken)
	if c.Dialog == "" {
		c.Dialog = NewDialogID()
	}
	if d1 != "" && c.Dialog == d1 {
		return nil, errcode.New(errcode.CrossesTrustBoundary, "a linked dialog is a new dialog: it never reuses the identifier of the dialog it continues")
	}
	for _, f := range []string{txntoken.HeaderName, dialog.ProvenanceHeader, "Authorization"} {
		if len(c.Request.Header.Values(f)) > 0 {
			return nil, errcode.New(errcode.CrossesTrustBoundary, "the first request of a linked dialog may not carry %s: it is set, or never sent, by the linker", f)
		}
	}
	now := l.Now
	if now == nil {
		now = time.Now
	}
	// One credential for the whole link: the grant names its key (requested_cnf), the
	// access token is bound to it (cnf.jkt), and B1 checks that the request to it was
	// signed with it. A WIT refreshed (with a new key) half-way would break the chain.
	cred, err := l.Transport.Source.Credential(ctx)
	if err != nil {
		return nil, err
	}
	tokens := &chaining.Client{}
	if l.Tokens != nil {
		*tokens = *l.Tokens
	}
	tokens.WITSource, tokens.WIT, tokens.Key = nil, cred.WIT, cred.Key
	if tokens.Now == nil {
		tokens.Now = now
	}
	var g *chaining.GrantResponse
	if c.IDToken != "" {
		g, err = tokens.IDJAG(ctx, chaining.IDJAGParams{TokenEndpoint: c.GrantEndpoint, SubjectToken: c.IDToken, SubjectTokenType: chaining.TokenTypeIDToken,
			Audience: c.PeerIssuer, Scope: c.Scope})
	} else {
		g, err = tokens.Grant(ctx, chaining.GrantParams{TokenEndpoint: c.GrantEndpoint, TxnToken: c.TxnToken, Audience: c.PeerIssuer, Scope: c.Scope})
	}
	if err != nil {
		return nil, err
	}
	at, err := tokens.Redeem(ctx, c.PeerTokenEndpoint, g.AccessToken, c.Scope)
	if err != nil {
		return nil, err
	}
	expiry := now().Add(time.Duration(at.ExpiresIn) * time.Second)
	peer := *l.Transport
	peer.Tokens = nil
	peer.ResponseSigners = signers
	peer.Source = cred.Expiring(now)
	peer.Base = boundaryGuard{base: l.Transport.Base, txnToken: c.TxnToken + c.IDToken, dlg: d1}
	// The caller's context may carry D1's provenance or Txn-Token source (WithProvenance,
	// WithTxnTokenSource); neither goes to domain B.
	ctx = context.WithValue(context.WithValue(ctx, provenanceKey, (*dialog.Provenance)(nil)), tokenKey, nil)
	req := c.Request.Clone(ctx)
	if c.Body != nil {
		b, err := c.Body(at.AccessToken, c.Dialog)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.ContentLength = int64(len(b))
	}
	req.Header.Set("Authorization", "Bearer "+at.AccessToken)
	a := &Agent{Self: l.Self, Client: &http.Client{Transport: &peer}}
	res, dc, err := a.Start(ctx, req, c.Dialog)
	if err != nil {
		return nil, err
	}
	return &Linked{Response: res, Dialog: dc, AccessToken: at.AccessToken, Expiry: expiry, Scope: at.Scope, Credential: cred, Signers: signers}, nil
}

// signers are the workloads whose signed responses D2's requests believe.
func (c LinkConfig) signers() (*Signers, error) {
	switch {
	case c.Signers == nil && c.PeerTrustDomain == "":
		return nil, errcode.New(errcode.InvalidRequest, "a linked dialog needs the peer's trust domain (or its signers): a response signed in any other would be believed")
	case c.Signers == nil:
		return TrustDomainSigners(c.PeerTrustDomain)
	case c.PeerTrustDomain != "" && c.Signers.TrustDomain() != c.PeerTrustDomain:
		return nil, errcode.New(errcode.InvalidRequest, "the signers of a linked dialog are of its peer trust domain %s, not %s", c.PeerTrustDomain, c.Signers.TrustDomain())
	}
	return c.Signers, nil
}

// dialogOf peeks at tctx.dlg of a Txn-Token without verifying it: only to make sure
// that the linked dialog's requests never name it.
func dialogOf(txn string) string {
	t, err := jose.Parse(txn, 0)
	if err != nil {
		return ""
	}
	var c struct {
		Tctx struct {
			Dlg string `json:"dlg"`
		} `json:"tctx"`
	}
	if netjson.DecodeObject(t.Payload, &c) != nil {
		return ""
	}
	return c.Tctx.Dlg
}

// boundaryGuard refuses a request to the other domain that carries a Txn-Token or
// provenance field, a header holding the original domain's Txn-Token, or a
// Dialog-Context naming the original dialog. It runs after signing, on the fields that
// are really sent.
type boundaryGuard struct {
	base     http.RoundTripper
	txnToken string // the Txn-Token, or the ID token, of the original domain
	dlg      string
}

func (g boundaryGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	refuse := func(what string) (*http.Response, error) {
		closeBody(r)
		return nil, errcode.New(errcode.CrossesTrustBoundary, "a request of a linked dialog carries %s of the original domain", what)
	}
	if len(r.Header.Values(txntoken.HeaderName)) > 0 || len(r.Header.Values(dialog.ProvenanceHeader)) > 0 {
		return refuse("a Txn-Token or provenance field")
	}
	if dc, err := dialog.FromHeader(r.Header); err != nil || dc == nil || dc.DLG() == g.dlg {
		return refuse("no new dialog, or the dialog identifier")
	}
	for _, vals := range r.Header {
		for _, v := range vals {
			if g.txnToken != "" && strings.Contains(v, g.txnToken) {
				return refuse("the Txn-Token or ID token")
			}
		}
	}
	base := g.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}

// LinkAcceptor is the peer participant's side of a linked dialog (B1 in Figure 5,
// section 11 steps 3 and 4). Behind a dialog.Receiver with a Registry (which verified
// the initiator's WIT and HTTP signature, with trust in the initiator domain's WIT
// issuer, and created the dialog), Accept checks the access token the request carries
// and exchanges it at its own domain's TTS for a Txn-Token that records the linked
// dialog in tctx.dlg.
type LinkAcceptor struct {
	// TTS asks this domain's TTS (authenticating as this participant).
	TTS *txntoken.Client
	// AccessTokens verifies the access tokens of this domain's AS; the token must be
	// bound (cnf.jkt) to the WIT key that signed the request.
	AccessTokens *chaining.AccessTokenVerifier
	// TrustDomain is the audience of the Txn-Token (this trust domain).
	TrustDomain string
	// Scope of the Txn-Token; "" asks for the access token's scope.
	Scope string
}

// Accepted is what Accept returns: the Txn-Token of this domain for the linked dialog,
// and the access token's claims.
type Accepted struct {
	TxnToken    *oauth.TokenResponse
	AccessToken *chaining.AccessTokenClaims
}

// Accept runs steps 3 (the remaining checks) and 4 for a request the dialog.Receiver
// verified: an HTTP signature covering exactly one `Authorization: Bearer` field, a
// Dialog-Context whose initiator is the sender, an access token of this domain's AS
// bound to the sender's WIT key and issued to it (client_id); then the Txn-Token
// request with the access token as subject token and request_details.dlg = the linked
// dialog.
func (a *LinkAcceptor) Accept(ctx context.Context, r *http.Request) (*Accepted, error) {
	return a.AcceptVerified(ctx, dialog.FromRequest(r), r.Header)
}

// AcceptVerified is Accept for code behind a receiver that no longer has the
// *http.Request but its verification v and its header fields h: an MCP tool's handler
// (the go-sdk hands it the request's header), an A2A executor (a2a-go's call context).
// The checks are Accept's.
func (a *LinkAcceptor) AcceptVerified(ctx context.Context, v *dialog.Verified, h http.Header) (*Accepted, error) {
	c, err := a.Check(ctx, v, h)
	if err != nil {
		return nil, err
	}
	res, err := a.Exchange(ctx, c)
	if err != nil {
		return nil, err
	}
	return &Accepted{TxnToken: res, AccessToken: c.Claims}, nil
}

// CheckedLink is a linked dialog request that passed step 3's checks (Check): what
// step 4's Txn-Token request is made of.
type CheckedLink struct {
	// AccessToken is the raw access token, the subject token of step 4.
	AccessToken string
	// Claims are its verified claims.
	Claims *chaining.AccessTokenClaims
	// Dialog is the linked dialog's identifier (dlg), recorded in the Txn-Token.
	Dialog string
	// Scope is the scope asked for: the acceptor's, or the access token's.
	Scope string
}

// Check runs AcceptVerified's checks (step 3) without step 4's TTS request, for a
// caller that keeps the Txn-Token it obtains with Exchange (proxy.BoundaryIngress).
func (a *LinkAcceptor) Check(ctx context.Context, v *dialog.Verified, h http.Header) (*CheckedLink, error) {
	if a.TTS == nil || a.AccessTokens == nil || a.TrustDomain == "" {
		return nil, errcode.New(errcode.InvalidRequest, "a link acceptor needs its TTS client, access token verifier and trust domain")
	}
	switch {
	case v == nil:
		return nil, errcode.New(errcode.InvalidRequest, "the request was not verified by a dialog.Receiver")
	case v.Context == nil:
		return nil, errcode.New(errcode.InvalidDialogContext, "a linked dialog request carries a Dialog-Context")
	case !v.Sender.Equal(v.Context.Initiator()):
		return nil, errcode.New(errcode.InitiatorMismatch, "a linked dialog is sent by its initiator")
	case v.Signature == nil || !v.Signature.Covers(`"authorization"`):
		return nil, errcode.New(errcode.MissingRequiredComponent, "the access token must be covered by the sender's HTTP signature")
	case v.TxnToken != "":
		return nil, errcode.New(errcode.CrossesTrustBoundary, "a Txn-Token never crosses a trust boundary: a linked dialog request carries none")
	}
	authz := h.Values("Authorization")
	if len(authz) != 1 {
		return nil, errcode.New(errcode.MissingCredential, "exactly one Authorization: Bearer field is required")
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(authz[0]), " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return nil, errcode.New(errcode.MissingCredential, "exactly one Authorization: Bearer field is required")
	}
	claims, err := a.AccessTokens.Verify(ctx, tok)
	if err != nil {
		return nil, err
	}
	if err := chaining.CheckHolder(claims, v.SenderWIT.Key); err != nil {
		return nil, err
	}
	if claims.ClientID != v.Sender.String() {
		return nil, errcode.New(errcode.GrantBindingMismatch, "the access token was issued to another client")
	}
	scope := a.Scope
	if scope == "" {
		scope = claims.Scope
	}
	return &CheckedLink{AccessToken: tok, Claims: claims, Dialog: v.Context.DLG(), Scope: scope}, nil
}

// Exchange is step 4 for a request Check passed: the Txn-Token request at this
// domain's TTS with the access token as subject token and request_details.dlg = the
// linked dialog.
func (a *LinkAcceptor) Exchange(ctx context.Context, c *CheckedLink) (*oauth.TokenResponse, error) {
	if a.TTS == nil || a.TrustDomain == "" {
		return nil, errcode.New(errcode.InvalidRequest, "a link acceptor needs its TTS client, access token verifier and trust domain")
	}
	return a.TTS.Request(ctx, txntoken.Request{Audience: a.TrustDomain, Scope: c.Scope, SubjectToken: c.AccessToken,
		SubjectTokenType: oauth.TokenTypeAccessToken, Dialog: c.Dialog})
}
