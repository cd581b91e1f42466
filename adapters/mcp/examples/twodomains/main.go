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
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dialogmcp "github.com/dialogtrust/dialogtrust/adapters/mcp"
	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/wit"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		testbed.WriteError(os.Stderr, "twodomains", err)
		os.Exit(1)
	}
}

// bindGrant makes the offer's grant from the access token (handoff-context section
// 5.7); the test replaces it to see a grant that names another credential refused.
var bindGrant = handoff.BindGrant

// run is the whole example; it writes each step to w and returns the first failure.
func run(ctx context.Context, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p := testbed.NewSteps(w)
	fmt.Fprintln(w, "MCP across two trust domains: a planner in a.example calls a tool in b.example (go-sdk, loopback)")

	// The world, the planner in a.example, the hotel in b.example, both sides trusting
	// both WIT issuers, and their handoff keys.
	trip, err := testbed.StartTrip(ctx, p, "/tool/hotel")
	if err != nil {
		return err
	}
	defer trip.Close()
	planner, hotel, witsAB, delegator := trip.Planner, trip.Hotel, trip.WITs, trip.Handoffs.Delegator

	p.Step("the hotel (b.example) serves the book_hotel tool over go-sdk behind its dialog receiver")
	url, toolErr, stop, err := serveHotel(ctx, p, trip.B, hotel, witsAB, trip.Handoffs)
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
	lc := trip.Link(planner, txnA, witsAB, func(l *agent.Linked, t *agent.Transport) (http.RoundTripper, error) {
		hc, err := dialogmcp.NewHTTPClient(agent.HostClientConfig{Transport: t, Dialog: l.Dialog, Delegator: delegator})
		if err != nil {
			return nil, err
		}
		return hc.Transport, nil
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: lc}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	linked := lc.Linked()
	testbed.ReportLinked(p, linked)

	p.Step("the planner calls book_hotel in D2 with a handoff offer whose grant is SHA-256(access token)")
	grant := bindGrant([]byte(linked.AccessToken))
	task := "book a hotel in Lisbon"
	h, err := delegator.Offer(ctx, handoff.OfferRequest{Offer: handoff.Offer{Aud: hotel.ID.String(), Dialog: linked.Dialog.DLG(), Task: &task, Grant: &grant}})
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
	u, err := testbed.Completed(ctx, delegator, st, toolErr)
	if err != nil {
		return err
	}
	p.OK("planner: verified the hotel's signed %q status: the hop is resolved", u.Status.State)
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			p.Info("the tool's answer: %s", t.Text)
		}
	}
	fmt.Fprintln(w, "done: every step passed")
	return nil
}

// serveHotel starts the hotel's MCP server in domain B: a stateful dialog receiver
// (it creates D2) that verifies the planner's WIT with domain A's issuer keys and its
// HTTP signature, reads handoffs in MCP requests only and requires their grant, and signs
// its responses; the tool checks the access token of the linked dialog before the work.
// toolErr returns the error the tool refused with, if any.
func serveHotel(ctx context.Context, p *testbed.Steps, b *testbed.Domain, hotel testbed.Workload, witsAB *wit.Validator, handoffs *testbed.Handoffs) (url string, toolErr func() error, stop func(), err error) {
	srv := httptest.NewUnstartedServer(nil)
	url = "http://" + srv.Listener.Addr().String() + "/mcp"
	// The handoff key was made just now, with these records: no offer predates them
	// (section 8.4 does not apply).
	hr := handoff.NewReceiver(hotel.ID.String(), handoffs.Trust, store.NewMemoryRecords(), handoff.WithStatusKey(handoffs.DelegateKey),
		handoff.WithGrantRequired(), handoff.WithRecordsLostAt(time.Time{}))
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(witsAB, httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())),
		testbed.SignsResponses(hotel),
		dialog.WithHandoffsIn(hr, hostproto.MCP),
	)
	if err != nil {
		return "", nil, nil, err
	}
	acceptor := b.LinkAcceptor(ctx, hotel)
	var mu sync.Mutex
	var refused error
	book := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := acceptor.AcceptOffer(ctx, p, dialogmcp.Verified(req), req.Extra.Header); err != nil {
			mu.Lock()
			refused = err
			mu.Unlock()
			return nil, err // dialogmcp.Tool answers with the signed "failed" status
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked in Lisbon"}}}, nil
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "hotel", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "book_hotel", InputSchema: map[string]any{"type": "object"}}, dialogmcp.Tool(hr, book))
	srv.Config.Handler = dialogmcp.Handler(rc, func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	srv.Start()
	return url, func() error { mu.Lock(); defer mu.Unlock(); return refused }, srv.Close, nil
}
