package testbed

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// LinkedClient is the initiator's HTTP side of a dialog linked across the trust
// boundary, for an SDK's client: the SDK's first request starts the linked dialog
// through the Linker (Figure 5 steps 1-3: the grant from AS A, the access token from
// AS B, then the request with `Authorization: Bearer` and a Dialog-Context proposing
// the new dialog), and every later request goes in that dialog with the same access
// token, through the round tripper Transport builds for the link (an adapter's client,
// signing with the WIT the token is bound to: Pinned).
type LinkedClient struct {
	Linker *agent.Linker
	// Config is the link's configuration without Request: the SDK's first request is.
	Config agent.LinkConfig
	// Transport builds the round tripper of the linked dialog's later requests.
	Transport func(*agent.Linked) (http.RoundTripper, error)

	mu     sync.Mutex
	linked *agent.Linked
	next   http.RoundTripper
}

// RoundTrip links the dialog with the first request, and sends the later ones in it.
func (c *LinkedClient) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.linked == nil {
		defer c.mu.Unlock()
		cfg := c.Config
		cfg.Request = req
		l, err := c.Linker.Link(req.Context(), cfg)
		if err != nil {
			return nil, err
		}
		if c.next, err = c.Transport(l); err != nil {
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
func (c *LinkedClient) Linked() *agent.Linked {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.linked
}

// LinkAcceptor is the peer's side of a linked dialog for workload w of this domain:
// agent.LinkAcceptor's checks (Figure 5 step 3) and exchange at this domain's TTS (step
// 4), then the check that the Txn-Token it got is this domain's and records the linked
// dialog.
func (d *Domain) LinkAcceptor(ctx context.Context, w Workload) *LinkAcceptor {
	ks := d.TTSKeys(ctx)
	return &LinkAcceptor{
		acceptor: agent.LinkAcceptor{
			TTS:          &txntoken.Client{TokenEndpoint: d.TokenEndpoint(), WITSource: w.Source, Proof: proof.HTTPSig, Now: d.cfg.now},
			AccessTokens: &chaining.AccessTokenVerifier{Keys: ks, Issuer: d.TTSURL, Audience: d.Name, Now: d.cfg.now},
			TrustDomain:  d.Name,
		},
		txns: txntoken.NewVerifier(ks, d.Name, txntoken.WithClock(d.cfg.now)),
	}
}

// LinkAcceptor: see Domain.LinkAcceptor.
type LinkAcceptor struct {
	acceptor agent.LinkAcceptor
	txns     *txntoken.Verifier

	mu      sync.Mutex
	refused error // the last refusal of AcceptOffer
}

// Accept checks a request in a linked dialog that the domain's dialog.Receiver
// verified (v, with the request's header fields h; agent.LinkAcceptor.AcceptVerified)
// and returns the access token it carried and the claims of the Txn-Token TTS B
// exchanged it for.
func (a *LinkAcceptor) Accept(ctx context.Context, v *dialog.Verified, h http.Header) (accessToken string, txn *txntoken.Claims, err error) {
	acc, err := a.acceptor.AcceptVerified(ctx, v, h)
	if err != nil {
		return "", nil, err
	}
	if txn, err = a.txns.Verify(ctx, acc.TxnToken.AccessToken); err != nil {
		return "", nil, err
	}
	if txn.Dialog() != v.Context.DLG() {
		return "", nil, errcode.New(errcode.DialogMismatch, "TTS B's Txn-Token records another dialog")
	}
	// AcceptVerified verified the one Bearer field.
	_, tok, _ := strings.Cut(strings.TrimSpace(h.Get("Authorization")), " ")
	return strings.TrimSpace(tok), txn, nil
}

// CheckGrantIsDigestOf checks that the offer v's receiver accepted names as grant the
// SHA-256 digest of accessToken (handoff-context section 5.7). The dialog.Receiver
// checked it too, against the bearer access token that arrived with the request; an
// example shows it again.
func CheckGrantIsDigestOf(v *dialog.Verified, accessToken string) error {
	if v == nil || v.Handoff == nil || v.Handoff.Offer == nil {
		return errcode.New(errcode.HandoffGrantMismatch, "no accepted offer")
	}
	return handoff.CheckGrant(v.Handoff.Offer.Offer, []byte(accessToken))
}

// Link is the LinkedClient of initiator, in a.example, for a dialog linked to a
// participant of b.example for Scope: D1's Txn-Token txnA goes to AS A only, the grant
// to AS B, and every request is signed (HTTP signature) by initiator's WIT, its
// responses' signatures required and verified with wits. inDialog builds the round
// tripper of the linked dialog's later requests from the agent.Transport that signs
// with the WIT the access token is bound to (an adapter's client wraps it).
func (w *World) Link(initiator Workload, txnA string, wits *wit.Validator, inDialog func(*agent.Linked, *agent.Transport) (http.RoundTripper, error)) *LinkedClient {
	signing := func(src wit.Source) *agent.Transport {
		return &agent.Transport{Source: src, Proof: proof.HTTPSig, Responses: httpsig.NewVerifier(wits), RequireSignedResponse: true}
	}
	return &LinkedClient{
		Linker: &agent.Linker{Self: initiator.ID, Transport: signing(initiator.Source), Now: w.A.cfg.now},
		Config: agent.LinkConfig{TxnToken: txnA, GrantEndpoint: w.A.TokenEndpoint(), PeerIssuer: w.B.TTSURL, PeerTokenEndpoint: w.B.TokenEndpoint(), PeerTrustDomain: w.B.Name, Scope: Scope},
		Transport: func(l *agent.Linked) (http.RoundTripper, error) {
			t := signing(l.Credential)
			t.ResponseSigners = l.Signers // the peer's answers in the linked dialog
			return inDialog(l, t)
		},
	}
}

// Completed verifies the delegate's signed status st with d and requires it to be
// "completed", resolving the hop; else the error the delegate's work failed with
// (workErr, when it has one), or handoff_policy naming what the delegate answered.
func Completed(ctx context.Context, d *handoff.Delegator, st *handoff.Signed, workErr func() error) (*handoff.StatusUpdate, error) {
	if st == nil {
		return nil, errors.Join(workErr(), errcode.New(errcode.HandoffPolicy, "the reply carries no handoff status"))
	}
	u, err := d.HandleStatus(ctx, *st)
	if err != nil {
		return nil, err
	}
	if u.Status.State != handoff.StateCompleted || !u.Hop.Resolved {
		if err := workErr(); err != nil {
			return nil, err
		}
		return nil, errcode.New(errcode.HandoffPolicy, "the delegate answered %q (reason %q)", u.Status.State, u.Status.ReasonValue())
	}
	return u, nil
}

// SignsResponses makes a dialog.Receiver sign its responses (WIMSE HTTP signature)
// with w's current WIT and key.
func SignsResponses(w Workload) dialog.ReceiverOption {
	return dialog.WithResponseSigner(func(ctx context.Context) (*httpsig.Signer, error) {
		c, err := w.Source.Credential(ctx)
		if err != nil {
			return nil, err
		}
		return httpsig.NewSigner(c.Key, c.WIT), nil
	})
}
