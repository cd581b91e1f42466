// Command twodomains runs an A2A agent pair across two trust domains on loopback, in one
// process, over the real a2a-go client and JSON-RPC server: the planner in a.example
// links a dialog to the hotel agent in b.example (dialog-binding section 11, Figure 5: a
// grant from AS A, an access token from AS B; the fetch of the hotel's agent card is the
// linked dialog's first request) and sends it a message with a signed handoff offer
// whose grant is the SHA-256 digest of the access token that travels with the message
// (handoff-context section 5.7); the hotel verifies all of it, books, and ends the task
// with its signed "completed" status, which the planner verifies.
//
// Run it with `go run ./examples/twodomains` in adapters/a2a. It exits 0 when every
// step passed, else 1 with the stable error code on stderr.
package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/a2asrv"

	dialoga2a "github.com/dialogtrust/dialogtrust/adapters/a2a"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/testbed"
)

func main() { testbed.Main("twodomains", run) }

// bindGrant makes the offer's grant from the access token (handoff-context section
// 5.7); the test replaces it to see a grant that names another credential refused.
var bindGrant = handoff.BindGrant

// run is the whole example; it writes each step to w and returns the first failure.
func run(ctx context.Context, w io.Writer) error {
	return testbed.RunTrip(ctx, w, "A2A across two trust domains: a planner in a.example hands work to an agent in b.example (a2a-go, loopback)", "/agent/hotel", steps)
}

// steps are the example's steps in the world of trip: the planner in a.example, the
// hotel agent in b.example, both sides trusting both WIT issuers, and their handoff
// keys.
func steps(ctx context.Context, p *testbed.Steps, trip *testbed.Trip) error {
	p.Step("the hotel agent (b.example) serves A2A over a2a-go behind its dialog receiver")
	base, workErr, stop, err := serveHotel(ctx, p, trip)
	if err != nil {
		return err
	}
	defer stop()
	p.Info("agent card %s%s", base, cardPath)

	txnA, err := trip.DialogD1(ctx, p)
	if err != nil {
		return err
	}

	p.Step("the planner links dialog D2 to the hotel: fetching its agent card is D2's first request")
	lc := trip.LinkThrough(txnA, dialoga2a.NewHTTPClient)
	hc := &http.Client{Transport: lc}
	card, err := agentcard.NewResolver(hc).Resolve(ctx, base)
	if err != nil {
		return err
	}
	linked := lc.Linked()
	testbed.ReportLinked(p, linked)
	// The extension is listed on every call by the interceptor; the transport is the
	// linked dialog's, every request with the access token.
	delegator := trip.Handoffs.Delegator
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc), a2aclient.WithInterceptors(dialoga2a.NewInterceptor(delegator)))
	if err != nil {
		return err
	}

	p.Step("the planner sends a message in D2 with a handoff offer whose grant is SHA-256(access token)")
	task := "book a hotel in Lisbon"
	h, err := trip.OfferLinked(ctx, linked, task, bindGrant)
	if err != nil {
		return err
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: task})
	msg.ContextID = linked.Dialog.DLG() // when set, it must be the dialog's dlg
	if err := dialoga2a.PutOffer(msg, h); err != nil {
		return err
	}
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	if err != nil {
		return err
	}

	p.Step("the hotel's signed status comes back in the task's status message")
	st, err := dialoga2a.ReplyStatus(res)
	if err != nil {
		return err
	}
	u, err := testbed.Completed(ctx, delegator, st, workErr)
	if err != nil {
		return err
	}
	t, _ := res.(*a2a.Task)
	if t == nil {
		return errcode.New(errcode.HandoffPolicy, "the reply is not a task")
	}
	p.OK("planner: verified the hotel's signed %q status: the hop is resolved; the task is %s", u.Status.State, t.Status.State)
	for _, part := range t.Status.Message.Parts {
		if tp, ok := part.(a2a.TextPart); ok {
			p.Info("the agent's answer: %s", tp.Text)
		}
	}
	return nil
}

// cardPath is where an A2A 0.3 agent publishes its card.
const cardPath = "/.well-known/agent-card.json"

// serveHotel starts the hotel's A2A server in domain B: the hotel's receivers
// (testbed.Trip.HotelReceivers: the dialog receiver creates D2, verifies the planner's
// WIT with domain A's issuer keys and its HTTP signature, reads handoffs in A2A 0.3
// messages only and requires their grant, and signs its responses) in front of both
// the agent card and a2a-go's JSON-RPC handler; the work checks the access token of
// the linked dialog before booking. workErr returns the error the work failed with, if
// any.
func serveHotel(ctx context.Context, p *testbed.Steps, trip *testbed.Trip) (base string, workErr func() error, stop func(), err error) {
	srv := httptest.NewUnstartedServer(nil)
	base = "http://" + srv.Listener.Addr().String()
	endpoint := base + "/a2a"
	hr, rc, err := trip.HotelReceivers(hostproto.A2A03, endpoint, base+cardPath)
	if err != nil {
		return "", nil, nil, err
	}
	acceptor := trip.B.LinkAcceptor(ctx, trip.Hotel)
	book := func(ctx context.Context, reqCtx *a2asrv.RequestContext) (*a2a.Message, error) {
		v := dialoga2a.Verified(ctx)
		header := http.Header{}
		if cc, ok := a2asrv.CallContextFrom(ctx); ok {
			if vals, ok := cc.RequestMeta().Get("Authorization"); ok {
				header["Authorization"] = vals
			}
		}
		if err := acceptor.AcceptOffer(ctx, p, v, header); err != nil {
			return nil, err // the executor ends the task with the signed "failed" status
		}
		return a2a.NewMessageForTask(a2a.MessageRoleAgent, reqCtx, a2a.TextPart{Text: "booked in Lisbon"}), nil
	}
	card := &a2a.AgentCard{Name: "hotel", Description: "books hotels", URL: endpoint, PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion: "0.3.0", Version: "v1", DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Capabilities: a2a.AgentCapabilities{Extensions: []a2a.AgentExtension{{URI: handoff.A2AExtensionURI, Description: "signed handoffs (handoff-context section 6)"}}},
		Skills:       []a2a.AgentSkill{{ID: "book_hotel", Name: "book a hotel", Description: "books a hotel room", Tags: []string{"travel"}}}}
	mux := http.NewServeMux()
	mux.Handle(cardPath, rc.Middleware(a2asrv.NewStaticAgentCardHandler(card)))
	mux.Handle("/a2a", dialoga2a.Handler(rc, a2asrv.NewHandler(dialoga2a.NewExecutor(hr, book))))
	srv.Config.Handler = mux
	srv.Start()
	return base, acceptor.Refused, srv.Close, nil
}
