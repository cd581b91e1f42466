package dialogmcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dialogmcp "github.com/dialogtrust/dialogtrust/adapters/mcp"
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

// A verifying MCP tool server and a delegating client on the real go-sdk. The server's
// glue is the block between the two comments: a dialog receiver that reads handoffs in
// MCP requests, the tool wrapped by dialogmcp.Tool, and go-sdk's streamable handler
// behind the receiver.
func Example() {
	ex := newExample()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/mcp"

	// --- the tool server's glue ---
	// Records in memory are lost at a restart: WithRecordsLostAt says when (section 8.4);
	// here nothing was ever recorded before.
	hr := handoff.NewReceiver(ex.hotelID.String(), ex.agents, store.NewMemoryRecords(), handoff.WithStatusKey(ex.hotelKey), handoff.WithRecordsLostAt(time.Time{}))
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wit.NewValidator(ex.trust), httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithHandoffsIn(hr, dialog.MCP),
	)
	if err != nil {
		panic(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "hotel", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "book_hotel", InputSchema: map[string]any{"type": "object"}}, dialogmcp.Tool(hr, bookHotel))
	srv.Config.Handler = dialogmcp.Handler(rc, func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	// --- end of the glue ---
	srv.Start()
	defer srv.Close()

	// The planner delegates the booking to the hotel in dialog dc.
	dc, _ := dialog.New(agent.NewDialogID(), ex.plannerID)
	hc, _ := dialogmcp.NewHTTPClient(dialogmcp.ClientConfig{Dialog: dc, Delegator: ex.delegator, Transport: &agent.Transport{
		Source: ex.planner, Responses: httpsig.NewVerifier(wit.NewValidator(ex.trust)),
	}})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	h, _ := ex.delegator.Offer(context.Background(), handoff.OfferRequest{Offer: handoff.Offer{Aud: ex.hotelID.String(), Dialog: dc.DLG()}})
	params := &mcp.CallToolParams{Name: "book_hotel", Arguments: map[string]any{"city": "Lisbon"}}
	if err := dialogmcp.PutOffer(params, h); err != nil {
		panic(err)
	}
	res, err := cs.CallTool(context.Background(), params)
	if err != nil {
		panic(err)
	}
	status, _ := dialogmcp.ResultStatus(res)
	u, err := ex.delegator.HandleStatus(context.Background(), *status)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text, u.Status.State)
	// Output: booked in Lisbon completed
}

// bookHotel is the tool's own code: it sees who asked, in which dialog.
func bookHotel(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	v := dialogmcp.Verified(req)
	if v == nil || v.Context == nil {
		return nil, fmt.Errorf("not in a dialog")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked in Lisbon"}}}, nil
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
	ex.hotelID, _ = identifier.Parse("wimse://a.example/tool/hotel")
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
