package dialoga2a_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2asrv"

	dialoga2a "github.com/dialogtrust/dialogtrust/adapters/a2a"
	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/wit"
)

// A verifying A2A agent and a delegating client on the real a2a-go. The agent's glue
// is the block between the two comments: a dialog receiver that reads handoffs in A2A
// 0.3 messages, the agent's work run by dialoga2a.Executor, and a2a-go's JSON-RPC
// handler behind the receiver.
func Example() {
	ex := newExample()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/a2a"

	// --- the agent's glue ---
	// Records in memory are lost at a restart: WithRecordsLostAt says when (section 8.4);
	// here nothing was ever recorded before.
	hr := handoff.NewReceiver(ex.hotelID.String(), ex.agents, store.NewMemoryRecords(), handoff.WithStatusKey(ex.hotelKey), handoff.WithRecordsLostAt(time.Time{}))
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wit.NewValidator(ex.trust), httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithHandoffsIn(hr, dialog.A2A03),
	)
	if err != nil {
		panic(err)
	}
	srv.Config.Handler = dialoga2a.Handler(rc, a2asrv.NewHandler(dialoga2a.NewExecutor(hr, bookHotel)))
	// --- end of the glue ---
	srv.Start()
	defer srv.Close()

	// The planner delegates the booking to the hotel in dialog dc.
	ctx := context.Background()
	dc, _ := dialog.New(agent.NewDialogID(), ex.plannerID)
	opts, _ := dialoga2a.ClientOptions(dialoga2a.ClientConfig{Dialog: dc, Delegator: ex.delegator, Transport: &agent.Transport{
		Source: ex.planner, Responses: httpsig.NewVerifier(wit.NewValidator(ex.trust)),
	}})
	client, err := a2aclient.NewFromEndpoints(ctx, []a2a.AgentInterface{{URL: url, Transport: a2a.TransportProtocolJSONRPC}}, opts...)
	if err != nil {
		panic(err)
	}
	h, _ := ex.delegator.Offer(ctx, handoff.OfferRequest{Offer: handoff.Offer{Aud: ex.hotelID.String(), Dialog: dc.DLG()}})
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "a room in Lisbon"})
	if err := dialoga2a.PutOffer(msg, h); err != nil {
		panic(err)
	}
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	if err != nil {
		panic(err)
	}
	status, _ := dialoga2a.ReplyStatus(res)
	u, err := ex.delegator.HandleStatus(ctx, *status)
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

// example is one trust domain with its WIT issuer key, the planner and the hotel.
type example struct {
	trust     *keys.Trust
	agents    *handoff.StaticTrust
	plannerID identifier.ID
	planner   wit.Source
	hotelID   identifier.ID
	hotelKey  *keys.PrivateKey
	delegator *handoff.Delegator
}

func newExample() *example {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	issuerKey, err := keys.Generate(keys.ES256)
	must(err)
	set, err := keys.NewStaticSet(issuerKey.Public())
	must(err)
	ex := &example{trust: keys.NewTrust().AddTrustDomain("a.example", set)}
	issuer := wit.NewIssuer("https://a.example/wit-issuer", func() *keys.PrivateKey { return issuerKey })
	ex.plannerID, _ = identifier.Parse("wimse://a.example/agent/planner")
	ex.hotelID, _ = identifier.Parse("wimse://a.example/agent/hotel")
	wk, err := keys.Generate(keys.ES256)
	must(err)
	tok, _, err := issuer.Issue(ex.plannerID, wk.Public(), time.Hour)
	must(err)
	ex.planner = testbed.Pinned(&wit.Credential{WIT: tok, Key: wk, Expiry: time.Now().Add(time.Hour)})
	// The handoff keys of both, bound to their identifiers, and the planner's delegator.
	h, err := testbed.NewHandoffs(ex.plannerID, ex.hotelID)
	must(err)
	ex.agents, ex.hotelKey, ex.delegator = h.Trust, h.DelegateKey, h.Delegator
	return ex
}
