package dialogmcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dialogmcp "github.com/dialogtrust/dialogtrust/adapters/mcp"
	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/testbed"
)

// A verifying MCP tool server and a delegating client on the real go-sdk. The server's
// glue is the block between the two comments: a dialog receiver that reads handoffs in
// MCP requests, the tool wrapped by dialogmcp.Tool, and go-sdk's streamable handler
// behind the receiver.
func Example() {
	// A trust domain with its WIT issuer (testbed): the planner delegates to the hotel,
	// both its workloads, with their handoff keys.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := testbed.StartDelegation(ctx, "a.example", "/tool/hotel")
	if err != nil {
		panic(err)
	}
	defer d.Close()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/mcp"

	// --- the tool server's glue ---
	// The hotel's handoff receiver and its dialog receiver, which verifies every
	// request's HTTP signature and reads handoffs in MCP requests (built as
	// testbed.Delegation.Receivers shows).
	hr, rc, err := d.Receivers(hostproto.MCP, url)
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
	dc, _ := dialog.New(agent.NewDialogID(), d.Planner.ID)
	hc, _ := dialogmcp.NewHTTPClient(agent.HostClientConfig{Dialog: dc, Delegator: d.Handoffs.Delegator, Transport: &agent.Transport{
		Source: d.Planner.Source, Responses: httpsig.NewVerifier(d.WITs),
	}})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	h, _ := d.Handoffs.Delegator.Offer(ctx, handoff.OfferRequest{Offer: handoff.Offer{Aud: d.Delegate.ID.String(), Dialog: dc.DLG()}})
	params := &mcp.CallToolParams{Name: "book_hotel", Arguments: map[string]any{"city": "Lisbon"}}
	if err := dialogmcp.PutOffer(params, h); err != nil {
		panic(err)
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		panic(err)
	}
	status, _ := dialogmcp.ResultStatus(res)
	u, err := d.Handoffs.Delegator.HandleStatus(ctx, *status)
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
