package main

// This file is the same in adapters/mcp/examples/twodomains and
// adapters/a2a/examples/twodomains: two trust domains in this process, and the
// planner's side of a dialog linked across them.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// domain is one trust domain on loopback: its WIT issuer (witissuer, development
// authentication: an example has no SPIFFE) and its TTS with the identity-chaining
// authorization server behind the same token endpoint, wired as cmd/wit-issuer and
// cmd/tts wire them.
type domain struct {
	name           string
	witHS, ttsHS   *httptest.Server
	witURL, ttsURL string
	ring           *keys.Ring // the TTS's keys: Txn-Tokens, grants and access tokens
	replay         store.Replay
}

func (d *domain) tokenEndpoint() string { return d.ttsURL + tts.PathToken }

// ttsKeys are the TTS's (and its AS's) keys as a receiver of the domain gets them: from
// its JWKS.
func (d *domain) ttsKeys(ctx context.Context) keys.KeySet {
	return keys.NewLazyRemoteSet(ctx, d.ttsURL+tts.PathJWKS, 100*time.Millisecond, time.Now)
}

func newDomain(name string) (*domain, error) {
	d := &domain{name: name, replay: store.NewMemory(), witHS: httptest.NewUnstartedServer(nil), ttsHS: httptest.NewUnstartedServer(nil)}
	d.witURL, d.ttsURL = "http://"+d.witHS.Listener.Addr().String(), "http://"+d.ttsHS.Listener.Addr().String()
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, err
	}
	d.ring = keys.NewRing(k, nil)
	wk, err := keys.Generate(keys.ES256)
	if err != nil {
		return nil, err
	}
	rot, err := keys.NewStaticRotator(wk, keys.RotationConfig{Retain: 2 * time.Hour})
	if err != nil {
		return nil, err
	}
	dev, err := witissuer.NewDev(nil, []string{"wimse://" + name + "/"})
	if err != nil {
		return nil, err
	}
	ws, err := witissuer.New(witissuer.Config{Issuer: d.witURL, Keys: rot, Replay: store.NewMemory(),
		Policy: witissuer.Policy{TrustDomains: []string{name}}, Routes: []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{dev}}}})
	if err != nil {
		return nil, err
	}
	d.witHS.Config.Handler = ws.Handler()
	d.witHS.Start()
	return d, nil
}

func (d *domain) close() {
	d.witHS.Close()
	d.ttsHS.Close()
}

// workload is a participant whose WITs come from its domain's issuer (a fresh key each).
type workload struct {
	id  identifier.ID
	src wit.Source
}

func (d *domain) workload(path string) workload {
	id := identifier.MustParse("wimse://" + d.name + path)
	c := &witissuer.Client{Endpoint: d.witURL + witissuer.PathWIT, Audience: d.witURL, Subject: id.String()}
	return workload{id: id, src: c.Source(wit.SourceAlg(keys.ES256))}
}

// wits validates the WITs of ds through their issuers' JWKS.
func wits(ctx context.Context, ds ...*domain) *wit.Validator {
	tr := keys.NewTrust()
	for _, d := range ds {
		tr.AddTrustDomain(d.name, keys.NewLazyRemoteSet(ctx, d.witURL+witissuer.PathJWKS, 100*time.Millisecond, time.Now))
	}
	return wit.NewValidator(tr, wit.WithCache(256, time.Minute))
}

// startTTS runs the domain's TTS binary: the TTS, AS A for grantPeers (it issues JWT
// authorization grants for them), AS B for bearerPeers (it redeems their grants for
// access tokens of this domain), trusting the WITs of the trusted domains.
func (d *domain) startTTS(ctx context.Context, trusted []*domain, grantPeers []chaining.GrantPeer, bearerPeers []chaining.BearerPeer) error {
	auths := oauth.WIMSEAuthenticators(wits(ctx, trusted...), d.replay, d.tokenEndpoint())
	handlers := []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{d.ttsURL}, tts.SelfSignedOptions{})}
	if bearerPeers != nil {
		// Its own access tokens are subject tokens here (Figure 5 step 4).
		own, err := tts.NewJWTHandler(tts.TokenTypeAccessToken, []tts.JWTIssuer{{Issuer: d.ttsURL, Keys: chaining.RingKeySet(d.ring),
			Typ: chaining.AccessTokenTyp, Audiences: []string{d.name}}}, tts.HandlerOptions{})
		if err != nil {
			return err
		}
		handlers = append(handlers, own)
	}
	cfg := tts.Config{Issuer: d.ttsURL, TrustDomains: []string{d.name}, Keys: d.ring, Authenticators: auths,
		SubjectHandlers: handlers, Replay: d.replay, Policy: tts.Policy{Rules: []tts.Rule{{Workload: "wimse://" + d.name + "/"}}}}
	var (
		asA *chaining.GrantIssuer
		asB *chaining.JWTBearer
		err error
	)
	if grantPeers != nil {
		if asA, err = chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: d.ttsURL, Keys: d.ring, Authenticators: auths,
			TxnTokens: tts.TxnTokenVerifierFor(cfg), Peers: grantPeers}); err != nil {
			return err
		}
	}
	if bearerPeers != nil {
		if asB, err = chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: d.ttsURL, Keys: d.ring, Authenticators: auths, Replay: d.replay,
			Peers: bearerPeers, Audiences: []string{d.name}}); err != nil {
			return err
		}
	}
	cfg.Grants = chaining.Handlers(asA, asB)
	srv, err := tts.New(cfg)
	if err != nil {
		return err
	}
	d.ttsHS.Config.Handler = srv.Handler()
	d.ttsHS.Start()
	return nil
}

// twoDomains starts a.example, whose AS issues grants for b.example's AS, and
// b.example, which redeems them (and trusts a.example's WITs for that).
func twoDomains(ctx context.Context) (a, b *domain, err error) {
	if a, err = newDomain("a.example"); err != nil {
		return nil, nil, err
	}
	if b, err = newDomain("b.example"); err != nil {
		a.close()
		return nil, nil, err
	}
	scopes := []string{"trip.book"}
	err = a.startTTS(ctx, []*domain{a}, []chaining.GrantPeer{{Issuer: b.ttsURL, TokenEndpoint: b.tokenEndpoint(), Scopes: scopes}}, nil)
	if err == nil {
		// AS B finds AS A's keys through its RFC 8414 metadata and JWKS.
		asAKeys := chaining.NewDiscoveredKeys(ctx, a.ttsURL, nil, 100*time.Millisecond, time.Now)
		err = b.startTTS(ctx, []*domain{b, a}, nil, []chaining.BearerPeer{{Issuer: a.ttsURL, Keys: asAKeys, Scopes: scopes,
			Subject: chaining.SubjectMap{Mode: chaining.SubjectPrefix, Prefix: "a.example:"}}})
	}
	if err != nil {
		a.close()
		b.close()
		return nil, nil, err
	}
	return a, b, nil
}

// txnTokenForD1 is the Txn-Token of TTS A recording the planner's dialog D1 in domain
// A, for alice (a self-signed subject token: an example has no user login).
func txnTokenForD1(ctx context.Context, a *domain, planner workload, d1 string) (string, error) {
	client := &txntoken.Client{TokenEndpoint: a.tokenEndpoint(), WITSource: planner.src, Proof: proof.HTTPSig}
	src := agent.NewTTSSource(client, a.name, "trip.book", func(ctx context.Context) (string, string, error) {
		c, err := planner.src.Credential(ctx)
		if err != nil {
			return "", "", err
		}
		tok, err := txntoken.NewSelfSignedToken(c.Key, planner.id, "alice@"+a.name, a.ttsURL, "trip.book", 5*time.Minute, time.Now())
		return tok, tts.TokenTypeSelfSigned, err
	}, nil)
	return src.TxnToken(ctx, d1)
}

// linkedClient is the planner's HTTP side of a dialog linked across the trust boundary,
// for an SDK client: the SDK's first request starts D2 through the Linker (Figure 5
// steps 1-3: the grant from AS A, the access token from AS B, then the request with
// `Authorization: Bearer` and a Dialog-Context proposing D2), and every later request
// goes in D2 with the same access token, through the round tripper inD2 builds for the
// link (the adapter's client, signing with the WIT the token is bound to).
type linkedClient struct {
	linker *agent.Linker
	config agent.LinkConfig // without Request: the SDK's first request is
	inD2   func(*agent.Linked) (http.RoundTripper, error)

	mu     sync.Mutex
	linked *agent.Linked
	next   http.RoundTripper
}

func (c *linkedClient) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.linked == nil {
		defer c.mu.Unlock()
		cfg := c.config
		cfg.Request = req
		l, err := c.linker.Link(req.Context(), cfg)
		if err != nil {
			return nil, err
		}
		if c.next, err = c.inD2(l); err != nil {
			l.Response.Body.Close()
			return nil, err
		}
		c.linked = l
		return l.Response, nil
	}
	linked, next := c.linked, c.next
	c.mu.Unlock()
	out := req.Clone(req.Context())
	out.Header.Set("Authorization", "Bearer "+linked.AccessToken)
	return next.RoundTrip(out)
}

// Linked is the link, once the SDK's first request made it (nil before).
func (c *linkedClient) Linked() *agent.Linked {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.linked
}

// pinned is a wit.Source of the one credential a linked dialog's access token is bound to.
type pinned struct{ c *wit.Credential }

func (p pinned) Credential(context.Context) (*wit.Credential, error) { return p.c, nil }

// acceptLinked is B's check of a request in a linked dialog that its dialog.Receiver
// verified (v, with the request's header h), as agent.LinkAcceptor does for an
// *http.Request: the HTTP signature covers the one `Authorization: Bearer` field, the
// access token is AS B's, for this domain, issued to the sender and bound to the key of
// its WIT (cnf.jkt). Then TTS B exchanges it for a Txn-Token of this domain recording
// the linked dialog (Figure 5 step 4). It returns the access token and the Txn-Token's
// claims.
func acceptLinked(ctx context.Context, v *dialog.Verified, h http.Header, ats *chaining.AccessTokenVerifier, ttsB *txntoken.Client, txnB *txntoken.Verifier, trustDomain string) (string, *txntoken.Claims, error) {
	switch {
	case v == nil || v.Context == nil:
		return "", nil, errcode.New(errcode.InvalidDialogContext, "a linked dialog request carries a Dialog-Context")
	case !v.Sender.Equal(v.Context.Initiator()):
		return "", nil, errcode.New(errcode.InitiatorMismatch, "a linked dialog is sent by its initiator")
	case v.Signature == nil || !v.Signature.Covers(`"authorization"`):
		return "", nil, errcode.New(errcode.MissingRequiredComponent, "the access token must be covered by the sender's HTTP signature")
	case v.TxnToken != "":
		return "", nil, errcode.New(errcode.CrossesTrustBoundary, "a Txn-Token never crosses a trust boundary")
	}
	authz := h.Values("Authorization")
	if len(authz) != 1 {
		return "", nil, errcode.New(errcode.MissingCredential, "exactly one Authorization: Bearer field is required")
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(authz[0]), " ")
	if tok = strings.TrimSpace(tok); !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", nil, errcode.New(errcode.MissingCredential, "exactly one Authorization: Bearer field is required")
	}
	claims, err := ats.Verify(ctx, tok)
	if err != nil {
		return "", nil, err
	}
	if err := chaining.CheckHolder(claims, v.SenderWIT.Key); err != nil {
		return "", nil, err
	}
	if claims.ClientID != v.Sender.String() {
		return "", nil, errcode.New(errcode.GrantBindingMismatch, "the access token was issued to another client")
	}
	res, err := ttsB.Request(ctx, txntoken.Request{Audience: trustDomain, Scope: claims.Scope, SubjectToken: tok,
		SubjectTokenType: oauth.TokenTypeAccessToken, Dialog: v.Context.DLG()})
	if err != nil {
		return "", nil, err
	}
	txn, err := txnB.Verify(ctx, res.AccessToken)
	if err != nil {
		return "", nil, err
	}
	if txn.Dialog() != v.Context.DLG() {
		return "", nil, errcode.New(errcode.DialogMismatch, "TTS B's Txn-Token records another dialog")
	}
	return tok, txn, nil
}

// grantIsDigestOf checks that the accepted offer's grant is the SHA-256 digest of tok
// (handoff-context section 5.7): the dialog.Receiver checked it too, against the
// bearer access token that arrived with the request.
func grantIsDigestOf(v *dialog.Verified, tok string) error {
	if v == nil || v.Handoff == nil || v.Handoff.Offer == nil {
		return errcode.New(errcode.HandoffGrantMismatch, "no accepted offer")
	}
	return handoff.CheckGrant(v.Handoff.Offer.Offer, []byte(tok))
}

// printer writes the steps and the checks, concisely.
type printer struct {
	mu   sync.Mutex
	w    io.Writer
	step int
}

func (p *printer) stepf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step++
	fmt.Fprintf(p.w, "[%d] %s\n", p.step, fmt.Sprintf(format, args...))
}

func (p *printer) ok(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "    ok  %s\n", fmt.Sprintf(format, args...))
}

func (p *printer) info(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "        %s\n", fmt.Sprintf(format, args...))
}
