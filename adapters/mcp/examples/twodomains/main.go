// Command twodomains runs an MCP tool call across two trust domains on loopback, in one
// process, over the real go-sdk client and streamable HTTP server: the planner in
// a.example links a dialog to the hotel tool in b.example (dialog-binding section 11,
// Figure 5: a grant from AS A, an access token from AS B) and calls the tool with a
// signed handoff offer whose grant is the SHA-256 digest of the access token that
// travels with the call (handoff-context section 5.7); the hotel verifies all of it,
// books, and answers with its signed "completed" status, which the planner verifies.
//
// Run it with `go run ./examples/twodomains` in adapters/mcp. It exits 0 when every
// step passed, else 1 with the stable error code on stderr.
package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dialogmcp "github.com/dialogtrust/dialogtrust/adapters/mcp"
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
	return testbed.RunTrip(ctx, w, "MCP across two trust domains: a planner in a.example calls a tool in b.example (go-sdk, loopback)", "/tool/hotel", steps)
}

// steps are the example's steps in the world of trip: the planner in a.example, the
// hotel in b.example, both sides trusting both WIT issuers, and their handoff keys.
func steps(ctx context.Context, p *testbed.Steps, trip *testbed.Trip) error {
	p.Step("the hotel (b.example) serves the book_hotel tool over go-sdk behind its dialog receiver")
	url, toolErr, stop, err := serveHotel(ctx, p, trip)
	if err != nil {
		return err
	}
	defer stop()
	p.Info("MCP endpoint %s", url)

	txnA, err := trip.DialogD1(ctx, p)
	if err != nil {
		return err
	}

	p.Step("the planner links dialog D2 to the hotel: go-sdk's initialize is D2's first request")
	lc := trip.LinkThrough(txnA, dialogmcp.NewHTTPClient)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: lc}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	linked := lc.Linked()
	testbed.ReportLinked(p, linked)

	p.Step("the planner calls book_hotel in D2 with a handoff offer whose grant is SHA-256(access token)")
	h, err := trip.OfferLinked(ctx, linked, "book a hotel in Lisbon", bindGrant)
	if err != nil {
		return err
	}
	params := &mcp.CallToolParams{Name: "book_hotel", Arguments: map[string]any{"city": "Lisbon"}}
	if err := dialogmcp.PutOffer(params, h); err != nil {
		return err
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return err
	}

	p.Step("the hotel's signed status comes back in the result's _meta")
	st, err := dialogmcp.ResultStatus(res)
	if err != nil {
		return err
	}
	u, err := testbed.Completed(ctx, trip.Handoffs.Delegator, st, toolErr)
	if err != nil {
		return err
	}
	p.OK("planner: verified the hotel's signed %q status: the hop is resolved", u.Status.State)
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			p.Info("the tool's answer: %s", t.Text)
		}
	}
	return nil
}

// serveHotel starts the hotel's MCP server in domain B behind the hotel's receivers
// (testbed.Trip.HotelReceivers: it creates D2, verifies the planner's WIT with domain
// A's issuer keys and its HTTP signature, reads handoffs in MCP requests only and
// requires their grant, and signs its responses); the tool checks the access token of
// the linked dialog before the work. toolErr returns the error the tool refused with,
// if any.
func serveHotel(ctx context.Context, p *testbed.Steps, trip *testbed.Trip) (url string, toolErr func() error, stop func(), err error) {
	srv := httptest.NewUnstartedServer(nil)
	url = "http://" + srv.Listener.Addr().String() + "/mcp"
	hr, rc, err := trip.HotelReceivers(hostproto.MCP, url)
	if err != nil {
		return "", nil, nil, err
	}
	acceptor := trip.B.LinkAcceptor(ctx, trip.Hotel)
	book := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := acceptor.AcceptOffer(ctx, p, dialogmcp.Verified(req), req.Extra.Header); err != nil {
			return nil, err // dialogmcp.Tool answers with the signed "failed" status
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked in Lisbon"}}}, nil
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "hotel", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "book_hotel", InputSchema: map[string]any{"type": "object"}}, dialogmcp.Tool(hr, book))
	srv.Config.Handler = dialogmcp.Handler(rc, func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	srv.Start()
	return url, acceptor.Refused, srv.Close, nil
}
