package testbed

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/store"
)

// Main runs an example's run on standard output and exits 1, with the stable error
// code on standard error (WriteError), at its first failure.
func Main(name string, run func(context.Context, io.Writer) error) {
	if err := run(context.Background(), os.Stdout); err != nil {
		WriteError(os.Stderr, name, err)
		os.Exit(1)
	}
}

// RunTrip is the frame of an adapter's two-domain example: it prints title, starts
// the Trip (the hotel at hotelPath of b.example), runs steps within a minute, closes
// the world, and prints that every step passed when steps returned nil.
func RunTrip(ctx context.Context, w io.Writer, title, hotelPath string, steps func(context.Context, *Steps, *Trip) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p := NewSteps(w)
	fmt.Fprintln(w, title)
	trip, err := StartTrip(ctx, p, hotelPath)
	if err != nil {
		return err
	}
	defer trip.Close()
	if err := steps(ctx, p, trip); err != nil {
		return err
	}
	fmt.Fprintln(w, "done: every step passed")
	return nil
}

// HotelReceivers are the hotel's handoff receiver, which requires a grant in every
// offer, and its dialog receiver for the linked dialog: stateful (it creates D2),
// verifying the planner's WIT with both domains' issuer keys and its HTTP signature for
// audiences, reading handoffs in the requests of host only, and signing its responses.
func (t *Trip) HotelReceivers(host hostproto.Host, audiences ...string) (*handoff.Receiver, *dialog.Receiver, error) {
	return delegateReceivers(t.Hotel, t.Handoffs, t.WITs, host, audiences, []handoff.ReceiverOption{handoff.WithGrantRequired()},
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())), SignsResponses(t.Hotel))
}

// LinkThrough is the planner's LinkedClient for D2 whose later requests go through the
// HTTP client an adapter builds (dialogmcp.NewHTTPClient, dialoga2a.NewHTTPClient), in
// the linked dialog, with the planner's delegator for cancels.
func (t *Trip) LinkThrough(txnA string, newHTTPClient func(agent.HostClientConfig) (*http.Client, error)) *LinkedClient {
	return t.Link(t.Planner, txnA, t.WITs, func(l *agent.Linked, tr *agent.Transport) (http.RoundTripper, error) {
		hc, err := newHTTPClient(agent.HostClientConfig{Transport: tr, Dialog: l.Dialog, Delegator: t.Handoffs.Delegator})
		if err != nil {
			return nil, err
		}
		return hc.Transport, nil
	})
}

// OfferLinked is the planner's offer of task to the hotel in the linked dialog l, whose
// grant is bindGrant of the access token that travels with it (handoff-context section
// 5.7; an example's test passes another bindGrant to see the offer refused).
func (t *Trip) OfferLinked(ctx context.Context, l *agent.Linked, task string, bindGrant func([]byte) handoff.Digest) (*handoff.Handoff, error) {
	grant := bindGrant([]byte(l.AccessToken))
	return t.Handoffs.Delegator.Offer(ctx, handoff.OfferRequest{Offer: handoff.Offer{Aud: t.Hotel.ID.String(), Dialog: l.Dialog.DLG(), Task: &task, Grant: &grant}})
}
