package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// handoffFixture: in dialog D1, A2 hands work to a delegate agent A3 with a signed
// handoff offer riding in an A2A message; the delegate's receiver middleware checks the
// offer against the request (handoff-context section 5.7).
type handoffFixture struct {
	*figure3
	delegator *handoff.Delegator
	a3        *participant
}

// handledStatus is the signed status in a host protocol's reply, as the delegator
// verified and applied it; a reply without one (what names it) or a status refused
// fails the test.
func (h *handoffFixture) handledStatus(t *testing.T, reply []byte, what string) *handoff.StatusUpdate {
	t.Helper()
	st, err := agent.HandoffStatus(reply)
	if err != nil || st == nil {
		t.Fatalf("%s (%v): %s", what, err, reply)
	}
	u, err := h.delegator.HandleStatus(context.Background(), *st)
	mustOK(t, err)
	return u
}

func newHandoffFixture(t *testing.T) (*handoffFixture, *dialog.Verified, *dialog.Context) {
	return newDelegateFixture(t, nil, 1)
}

// newDelegateFixture builds the handoff fixture: A3's receiver reads offers with extract
// (nil: the receiver's own reading) and the options extra, and A3 answers every request
// with an empty JSON-RPC result of id replyID.
func newDelegateFixture(t *testing.T, extract dialog.HandoffExtractor, replyID int, extra ...dialog.ReceiverOption) (*handoffFixture, *dialog.Verified, *dialog.Context) {
	f := newFigure3(t)
	atA2, dc := f.establish(t)
	a2Key, _ := keys.Generate(keys.ES256)
	a3Key, _ := keys.Generate(keys.ES256)
	trust := handoff.NewStaticTrust()
	mustOK(t, trust.Bind(f.a2.id.String(), a2Key.Public()))
	id3, src3 := f.a.workload(t, "/agent/a3")
	mustOK(t, trust.Bind(id3.String(), a3Key.Public()))
	d, err := handoff.NewDelegator(handoff.DelegatorConfig{Self: f.a2.id.String(), Key: a2Key, Trust: trust})
	mustOK(t, err)

	p := &participant{id: id3, src: src3, seen: make(chan *dialog.Verified, 16)}
	srv := httptest.NewUnstartedServer(nil)
	p.url = "http://" + srv.Listener.Addr().String() + "/a2a"
	rc, err := dialog.NewReceiver(append([]dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wit.NewValidator(f.a.trust), httpsig.WithAudiences(p.url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithTxnTokens(txntoken.NewVerifier(f.a.ttsKeys, "a.example")),
		// The keys are this test's own: no offer predates the records (section 8.4).
		dialog.WithHandoffs(handoff.NewReceiver(id3.String(), trust, store.NewMemoryRecords(), handoff.WithStatusKey(a3Key), handoff.WithGrantRequired(),
			handoff.WithRecordsLostAt(time.Time{})), extract),
	}, extra...)...)
	mustOK(t, err)
	srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.seen <- dialog.FromRequest(r)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{}}`, replyID)
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	return &handoffFixture{figure3: f, delegator: d, a3: p}, atA2, dc
}

func (h *handoffFixture) send(t *testing.T, ctx context.Context, body []byte, dc *dialog.Context, tokens agent.TxnTokenSource) (*http.Response, error) {
	req, err := http.NewRequest("POST", h.a3.url, bytes.NewReader(body))
	mustOK(t, err)
	req.Header.Set("Content-Type", "application/json")
	a2 := h.a.caller(h.a2.id, h.a2.src, tokens, proof.HTTPSig, false)
	return a2.Continue(ctx, req, dc, nil)
}

var taskMessage = json.RawMessage(`{"role":"user","parts":[{"kind":"text","text":"book the hotel"}],"messageId":"m1"}`)

// Section 5.7: the grant is the digest of the credential that travels with the hop; the
// delegate checks the Txn-Token that arrived against it, and the offer's dialog against
// the Dialog-Context.
func TestHandoffSec5_7_GrantBoundToTxnTokenInDialog(t *testing.T) {
	h, atA2, dc := newHandoffFixture(t)
	tokens := agent.Forwarded(atA2.TxnToken)
	ctx := context.Background()
	offer, sendCtx, err := agent.OfferInDialog(ctx, h.delegator, tokens, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
	mustOK(t, err)
	body, err := agent.A2AMessageSend(1, taskMessage, offer)
	mustOK(t, err)
	res, err := h.send(t, sendCtx, body, dc, nil)
	mustOK(t, err)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	v := <-h.a3.seen
	if v.Handoff == nil || v.Handoff.Outcome != handoff.OutcomeAccepted || v.Handoff.Offer == nil {
		t.Fatalf("decision %+v", v.Handoff)
	}

	// The same kind of offer, but the request carries another Txn-Token of the same
	// dialog (a second one from the TTS): the grant names the first.
	offer2, _, err := agent.OfferInDialog(ctx, h.delegator, tokens, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
	mustOK(t, err)
	body, _ = agent.A2AMessageSend(2, taskMessage, offer2)
	src := agent.NewTTSSource(h.a.ttsClient(h.a1.src), "a.example", "trip.book", h.a.selfSigned(h.a1.id, h.a1.src), func() time.Time { return time.Now() })
	second, err := src.TxnToken(ctx, dc.DLG())
	mustOK(t, err)
	if second == atA2.TxnToken {
		t.Fatal("expected a distinct token")
	}
	res, err = h.send(t, ctx, body, dc, agent.Forwarded(second))
	wantRejected(t, h, res, err, handoff.ReasonPolicy)

	// An offer for another dialog, sent in D1.
	d2, _ := dialog.New("D2", h.a2.id)
	offer3, err := agent.OfferWithCredential(ctx, h.delegator, atA2.TxnToken, d2, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
	mustOK(t, err)
	body, _ = agent.A2AMessageSend(3, taskMessage, offer3)
	res, err = h.send(t, ctx, body, dc, tokens)
	wantRejected(t, h, res, err, handoff.ReasonPolicy)

	// An offer copied to another audience.
	offer4, err := agent.OfferWithCredential(ctx, h.delegator, atA2.TxnToken, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a1.id.String()}})
	mustOK(t, err)
	body, _ = agent.A2AMessageSend(4, taskMessage, offer4)
	res, err = h.send(t, ctx, body, dc, tokens)
	// The rejection is signed by A3, which is not the hop's delegate A1: the delegator
	// finds it in the reply and refuses it.
	mustOK(t, err)
	reply, _ := io.ReadAll(res.Body)
	res.Body.Close()
	st, err := agent.HandoffStatus(reply)
	if res.StatusCode != http.StatusOK || err != nil || st == nil {
		t.Fatalf("status %d (%v) body %s, want a JSON-RPC result with a rejected status", res.StatusCode, err, reply)
	}
	if _, err := h.delegator.HandleStatus(ctx, *st); errcode.CodeOf(err) != errcode.IssuerMismatch {
		t.Fatalf("a rejection from another agent than the hop's delegate: %v", err)
	}
}
