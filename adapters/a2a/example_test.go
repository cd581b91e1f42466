package dialoga2a_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2asrv"

	dialoga2a "github.com/dialogtrust/dialogtrust/adapters/a2a"
	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/testbed"
)

// A verifying A2A agent and a delegating client on the real a2a-go. The agent's glue
// is the block between the two comments: a dialog receiver that reads handoffs in A2A
// 0.3 messages, the agent's work run by dialoga2a.Executor, and a2a-go's JSON-RPC
// handler behind the receiver.
func Example() {
	// A trust domain with its WIT issuer (testbed): the planner delegates to the hotel,
	// both its workloads, with their handoff keys.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := testbed.StartDelegation(ctx, "a.example", "/agent/hotel")
	if err != nil {
		panic(err)
	}
	defer d.Close()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/a2a"

	// --- the agent's glue ---
	// The hotel's handoff receiver and its dialog receiver, which verifies every
	// request's HTTP signature and reads handoffs in A2A 0.3 requests (built as
	// testbed.Delegation.Receivers shows).
	hr, rc, err := d.Receivers(hostproto.A2A03, url)
	if err != nil {
		panic(err)
	}
	srv.Config.Handler = dialoga2a.Handler(rc, a2asrv.NewHandler(dialoga2a.NewExecutor(hr, bookHotel)))
	// --- end of the glue ---
	srv.Start()
	defer srv.Close()

	// The planner delegates the booking to the hotel in dialog dc.
	dc, _ := dialog.New(agent.NewDialogID(), d.Planner.ID)
	opts, _ := dialoga2a.ClientOptions(agent.HostClientConfig{Dialog: dc, Delegator: d.Handoffs.Delegator, Transport: &agent.Transport{
		Source: d.Planner.Source, Responses: httpsig.NewVerifier(d.WITs),
	}})
	client, err := a2aclient.NewFromEndpoints(ctx, []a2a.AgentInterface{{URL: url, Transport: a2a.TransportProtocolJSONRPC}}, opts...)
	if err != nil {
		panic(err)
	}
	h, _ := d.Handoffs.Delegator.Offer(ctx, handoff.OfferRequest{Offer: handoff.Offer{Aud: d.Delegate.ID.String(), Dialog: dc.DLG()}})
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "a room in Lisbon"})
	if err := dialoga2a.PutOffer(msg, h); err != nil {
		panic(err)
	}
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	if err != nil {
		panic(err)
	}
	status, _ := dialoga2a.ReplyStatus(res)
	u, err := d.Handoffs.Delegator.HandleStatus(ctx, *status)
	if err != nil {
		panic(err)
	}
	task := res.(*a2a.Task)
	fmt.Println(task.Status.Message.Parts[0].(a2a.TextPart).Text, task.Status.State, u.Status.State)
	// Output: booked in Lisbon completed completed
}

// bookHotel is the agent's own code: it sees who asked, in which dialog.
func bookHotel(ctx context.Context, rc *a2asrv.RequestContext) (*a2a.Message, error) {
	v := dialoga2a.Verified(ctx)
	if v == nil || v.Context == nil {
		return nil, fmt.Errorf("not in a dialog")
	}
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: "booked in Lisbon"}), nil
}
