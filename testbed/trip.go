package testbed

import (
	"context"
	"net/http"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Trip is the cast of the protocol adapters' two-domain examples (adapters/mcp and
// adapters/a2a, examples/twodomains): the world, the planner in a.example, the hotel in
// b.example, a validator of both domains' WITs that both sides use, and the handoff
// keys of the two (the planner delegates to the hotel). The steps the examples share
// are printed here, once; what differs per protocol (the SDK's client and server, where
// the offer and the status travel) stays in the examples.
type Trip struct {
	*World
	Planner, Hotel Workload
	WITs           *wit.Validator
	Handoffs       *Handoffs
}

// StartTrip starts the world and the cast, the hotel being the workload at hotelPath of
// b.example. The caller closes the Trip's World.
func StartTrip(ctx context.Context, p *Steps, hotelPath string) (*Trip, error) {
	p.Step("trust domains a.example and b.example: a WIT issuer and a TTS (AS A, AS B) each")
	world, err := Start(ctx)
	if err != nil {
		return nil, err
	}
	a, b := world.A, world.B
	t := &Trip{World: world, Planner: a.Workload("/agent/planner"), Hotel: b.Workload(hotelPath), WITs: WITs(ctx, a, b)}
	p.Info("a.example: WIT issuer %s   TTS/AS A %s", a.WITURL, a.TTSURL)
	p.Info("b.example: WIT issuer %s   TTS/AS B %s", b.WITURL, b.TTSURL)
	// Handoff keys: the AgentIds are the workload identifiers.
	if t.Handoffs, err = NewHandoffs(t.Planner.ID, t.Hotel.ID); err != nil {
		world.Close()
		return nil, err
	}
	return t, nil
}

// DialogD1 puts the planner in a dialog D1 of a.example and returns the Txn-Token TTS A
// issued for it (on behalf of alice, for Scope): what the planner links D2 with.
func (t *Trip) DialogD1(ctx context.Context, p *Steps) (string, error) {
	p.Step("the planner (a.example) is in dialog D1, with a Txn-Token of TTS A recording it")
	d1 := agent.NewDialogID()
	txnA, err := t.A.TxnToken(ctx, t.Planner, "alice@"+t.A.Name, Scope, d1)
	if err != nil {
		return "", err
	}
	p.OK("TTS A issued the Txn-Token for D1 = %s", d1)
	return txnA, nil
}

// ReportLinked prints what the first request of the linked dialog l proved (Figure 5).
func ReportLinked(p *Steps, l *agent.Linked) {
	p.OK("AS A issued a grant for AS B with D1's Txn-Token; AS B redeemed it for an access token of b.example")
	p.OK("the hotel established D2 with the planner as initiator; its signed response echoes D2")
	p.Info("D2 = %s (D1 and its Txn-Token stayed in a.example)", l.Dialog.DLG())
}

// AcceptOffer is the hotel's check of a call carrying an offer in the linked dialog,
// before its work: Accept, then CheckGrantIsDigestOf the access token that came with
// it; it prints what was verified, or keeps the refusal for Refused.
func (a *LinkAcceptor) AcceptOffer(ctx context.Context, p *Steps, v *dialog.Verified, h http.Header) error {
	tok, txn, err := a.Accept(ctx, v, h)
	if err == nil {
		err = CheckGrantIsDigestOf(v, tok)
	}
	if err != nil {
		a.mu.Lock()
		a.refused = err
		a.mu.Unlock()
		return err
	}
	p.OK("hotel: the WIT of %s verified with a.example's issuer keys, and its HTTP signature", v.Sender)
	p.OK("hotel: the signature covers Dialog-Context D2 (initiator: the sender) and the access token")
	p.OK("hotel: the access token is AS B's, for b.example, issued to the planner and bound to its WIT key")
	p.OK("hotel: the offer (signed by the planner, for D2) names as grant the SHA-256 of that access token")
	p.OK("hotel: TTS B exchanged the access token for a Txn-Token of b.example recording D2 (sub %q)", txn.Sub)
	return nil
}

// Refused is the last error AcceptOffer refused a call with; nil when none. The
// planner's side reports it when the hotel's status says the work failed.
func (a *LinkAcceptor) Refused() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.refused
}
