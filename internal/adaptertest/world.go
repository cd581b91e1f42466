package adaptertest

import (
	"context"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// MustOK fails tb with err, if any.
func MustOK(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// World is one trust domain, a.example, run in-process by testbed.StartDomain: its
// WIT issuer and its TTS on loopback, which issues Txn-Tokens for self-signed subject
// tokens, the delegating agent (Planner) and its delegate (Hotel).
type World struct {
	// Dom is the domain; Dom.Workload is another workload of it.
	Dom *testbed.Domain
	// WITs validates the domain's WITs through its issuer's JWKS.
	WITs           *wit.Validator
	TTSKeys        keys.KeySet
	Planner, Hotel testbed.Workload
	Tokens         agent.TxnTokenSource // the planner's Txn-Tokens
	PlannerKey     *keys.PrivateKey     // signs the planner's offers
	HotelKey       *keys.PrivateKey     // signs the hotel's statuses
	Trust          *handoff.StaticTrust
	Delegator      *handoff.Delegator
	Records        *store.MemoryRecords
	// HandoffReceiver is the hotel's: it requires a grant in every offer.
	HandoffReceiver *handoff.Receiver
	// Host is the protocol the hotel's dialog receiver reads handoffs in.
	Host hostproto.Host
}

// NewWorld starts the world; the hotel is wimse://a.example<hotelPath>, and reads
// handoffs in the requests of host. Its servers stop when tb's test ends.
func NewWorld(tb testing.TB, hotelPath string, host hostproto.Host) *World {
	tb.Helper()
	ctx := tb.Context()
	dom, err := testbed.StartDomain(ctx, "a.example")
	MustOK(tb, err)
	tb.Cleanup(dom.Close)
	w := &World{Dom: dom, WITs: testbed.WITs(ctx, dom), TTSKeys: dom.TTSKeys(ctx), Host: host}
	w.Planner, w.Hotel = dom.Workload("/agent/planner"), dom.Workload(hotelPath)
	w.Tokens = dom.TxnTokens(w.Planner, "alice@a.example", testbed.Scope)

	h, err := testbed.NewHandoffs(w.Planner.ID, w.Hotel.ID)
	MustOK(tb, err)
	w.PlannerKey, w.HotelKey, w.Trust, w.Delegator = h.DelegatorKey, h.DelegateKey, h.Trust, h.Delegator
	w.Records = store.NewMemoryRecords()
	// The keys are this test's own: no offer predates the records (section 8.4).
	w.HandoffReceiver = handoff.NewReceiver(w.Hotel.ID.String(), w.Trust, w.Records, handoff.WithStatusKey(w.HotelKey),
		handoff.WithGrantRequired(), handoff.WithRecordsLostAt(time.Time{}))
	return w
}

// Receiver is the hotel's dialog receiver at url: HTTP signatures, Txn-Tokens of
// a.example, handoffs in the requests of w.Host, and opts after them (an authorizer,
// dialog.WithAuthorizer, for the receiver conditions of issue 25).
func (w *World) Receiver(tb testing.TB, url string, opts ...dialog.ReceiverOption) *dialog.Receiver {
	tb.Helper()
	rc, err := dialog.NewReceiver(append([]dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(w.WITs, httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithTxnTokens(txntoken.NewVerifier(w.TTSKeys, "a.example")),
		dialog.WithHandoffsIn(w.HandoffReceiver, w.Host),
	}, opts...)...)
	MustOK(tb, err)
	return rc
}

// NewDialog is a new dialog that initiator starts.
func NewDialog(tb testing.TB, initiator identifier.ID) *dialog.Context {
	tb.Helper()
	dc, err := dialog.New(agent.NewDialogID(), initiator)
	MustOK(tb, err)
	return dc
}

// ClientAs is the configuration of an SDK client of the workload src in dialog dc,
// with the Txn-Tokens of tokens (nil for none), over rec: every request proved, signed
// responses verified with the domain's WITs, cancels with the planner's delegator.
func (w *World) ClientAs(src wit.Source, tokens agent.TxnTokenSource, dc *dialog.Context, rec *Recorder) agent.HostClientConfig {
	t := &agent.Transport{Base: rec, Source: src, Tokens: tokens, Responses: httpsig.NewVerifier(w.WITs)}
	return agent.HostClientConfig{Transport: t, Dialog: dc, Delegator: w.Delegator}
}

// Offer signs the planner's offer to the hotel in dc, bound to the Txn-Token the
// request will carry (section 5.7); the context sends exactly that token.
func (w *World) Offer(tb testing.TB, dc *dialog.Context) (*handoff.Handoff, context.Context) {
	tb.Helper()
	h, ctx, err := agent.OfferInDialog(context.Background(), w.Delegator, w.Tokens, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: w.Hotel.ID.String()}})
	MustOK(tb, err)
	return h, ctx
}

// Retransmission is the delegator's same offer again for the hop of h (section 5.3).
func (w *World) Retransmission(tb testing.TB, h *handoff.Handoff) *handoff.Handoff {
	tb.Helper()
	o, err := handoff.DecodeOffer(h.Offer)
	MustOK(tb, err)
	again, err := w.Delegator.Retransmit(o.Hop)
	MustOK(tb, err)
	return again
}
