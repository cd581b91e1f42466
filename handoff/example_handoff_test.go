package handoff_test

import (
	"context"
	"fmt"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
)

const (
	planner = "spiffe://a.example/agent/planner"
	coder   = "spiffe://b.example/agent/coder"
)

// The planner hands a task in dialog D1 to the coder, together with the access token
// the coder is to use. The offer's grant binds that token (section 5.7), so the offer is
// accepted only with it. The coder answers with signed statuses, which the planner
// verifies and follows.
func Example() {
	ctx := context.Background()
	delegator, delegate := newAgents()

	// The planner signs an offer whose grant is the token's digest, never the token.
	token := []byte("access token issued to spiffe://b.example/agent/coder")
	grant := handoff.BindGrant(token)
	h, _ := delegator.Offer(ctx, handoff.OfferRequest{Offer: handoff.Offer{
		Aud: coder, Dialog: "D1", Task: handoff.String("fix issue 9"), Grant: &grant,
	}})
	wire, _ := h.MarshalJSON() // carried in an A2A message or MCP request (section 6)

	// The coder verifies the offer, with the dialog and the token that came with it.
	got, _ := handoff.ParseHandoffJSON(wire, 0)
	d, err := delegate.Receive(ctx, handoff.Inbound{Handoff: got, Dialog: "D1", Credential: token, AuthenticatedSender: planner})
	if err != nil {
		fmt.Println("coder could not decide:", err)
		return
	}
	fmt.Println("coder:", d.Outcome)

	// It takes the work, does it, and says so; the planner verifies each status.
	accepted, _ := delegate.Accept(ctx, planner, d.Offer.Hop)
	fmt.Println("planner:", hopState(delegator.HandleStatus(ctx, accepted)))
	completed, _ := delegate.Complete(ctx, planner, d.Offer.Hop, nil)
	fmt.Println("planner:", hopState(delegator.HandleStatus(ctx, completed)))

	// A second offer bound to the same token arrives with another one: rejected at
	// step 5, and the signed rejection goes back to the planner.
	h2, _ := delegator.Offer(ctx, handoff.OfferRequest{Offer: handoff.Offer{Aud: coder, Dialog: "D1", Grant: &grant}})
	d, _ = delegate.Receive(ctx, handoff.Inbound{Handoff: h2, Dialog: "D1", Credential: []byte("some other token"), AuthenticatedSender: planner})
	fmt.Println("coder:", d.Outcome, d.Reason, errcode.CodeOf(d.Err))
	fmt.Println("planner:", hopState(delegator.HandleStatus(ctx, *d.Reply)))
	// Output:
	// coder: accepted
	// planner: accepted
	// planner: completed resolved
	// coder: rejected policy handoff_grant_mismatch
	// planner: rejected resolved
}

// newAgents returns the two parties: the planner's Delegator and the coder's Receiver.
// Each has its own key, and one trust configuration binds both keys to their AgentIds.
// Time is an injected clock: the coder's process started a minute before the planner's
// offers (its records are in memory, so an offer from before its start would be refused
// as a possible replay, section 8.4).
func newAgents() (*handoff.Delegator, *handoff.Receiver) {
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { return clock }

	plannerKey, _ := keys.Generate(keys.ES256)
	coderKey, _ := keys.Generate(keys.EdDSA)
	trust := handoff.NewStaticTrust()
	_ = trust.Bind(planner, plannerKey.Public())
	_ = trust.Bind(coder, coderKey.Public())

	delegate := handoff.NewReceiver(coder, trust, store.NewMemoryRecords(store.WithClock(now)),
		handoff.WithClock(now), handoff.WithStatusKey(coderKey), handoff.WithGrantRequired())
	clock = clock.Add(time.Minute)

	delegator, err := handoff.NewDelegator(handoff.DelegatorConfig{Self: planner, Key: plannerKey, Trust: trust, Now: now})
	if err != nil {
		panic(err)
	}
	return delegator, delegate
}

// hopState is the planner's view of a hop after a status it verified.
func hopState(u *handoff.StatusUpdate, err error) string {
	if err != nil {
		return "refused: " + string(errcode.CodeOf(err))
	}
	if u.Hop.Resolved {
		return string(u.Hop.State) + " resolved"
	}
	return string(u.Hop.State)
}
