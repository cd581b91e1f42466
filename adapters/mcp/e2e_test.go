package dialogmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	dialogmcp "github.com/dialogtrust/dialogtrust/adapters/mcp"
	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/adaptertest"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/wit"
)

// hotel serves the tool over go-sdk's real streamable HTTP handler behind the dialog
// receiver. work is the tool's work.
func (w *world) serveHotel(t *testing.T, work mcp.ToolHandler) (string, *adaptertest.Seen) {
	t.Helper()
	s := &adaptertest.Seen{}
	server := mcp.NewServer(&mcp.Implementation{Name: "hotel", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "book_hotel", InputSchema: map[string]any{"type": "object"}},
		dialogmcp.Tool(w.HandoffReceiver, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.Call(dialogmcp.Verified(req))
			return work(ctx, req)
		}))
	url := adaptertest.Serve(t, s, "/mcp", func(url string) http.Handler {
		return dialogmcp.Handler(w.Receiver(t, url), func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	})
	return url, s
}

func booked(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "booked"}}}, nil
}

// blockingTool is a tool whose work runs until its context ends.
func blockingTool(work *adaptertest.Blocking) mcp.ToolHandler {
	return func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := work.Run(ctx); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{}, nil
	}
}

// callCompleted calls the tool with p in cs and checks that the call succeeded with
// a "completed" status in the result's _meta and that the offer h in dc was taken; it
// returns the HTTP requests the receiver saw.
func (w *world) callCompleted(t *testing.T, cs *mcp.ClientSession, ctx context.Context, p *mcp.CallToolParams, s *adaptertest.Seen, dc *dialog.Context, h *handoff.Handoff) []http.Header {
	t.Helper()
	res, err := cs.CallTool(ctx, p)
	adaptertest.MustOK(t, err)
	if res.IsError {
		t.Fatalf("tool error: %+v", res.Content)
	}
	st, err := dialogmcp.ResultStatus(res)
	if err != nil || st == nil {
		t.Fatalf("no status in the result (%v): %+v", err, res.Meta)
	}
	w.WantCompleted(t, *st)
	return w.WantOfferTaken(t, s, dc, h)
}

// callCanceled calls the tool with p in cs, cancels the call's context once the work
// started, and checks that the call ended canceled and the work stopped.
func callCanceled(t *testing.T, cs *mcp.ClientSession, ctx context.Context, p *mcp.CallToolParams, work *adaptertest.Blocking) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, p)
		done <- err
	}()
	<-work.Started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool: %v", err)
	}
	work.WantCanceled(t)
}

// openHotel serves the hotel with work and connects the planner to it in a new dialog;
// it returns the hotel's URL, what the tool saw, the dialog and the session.
func (w *world) openHotel(t *testing.T, work mcp.ToolHandler) (string, *adaptertest.Seen, *dialog.Context, *mcp.ClientSession) {
	t.Helper()
	url, s := w.serveHotel(t, work)
	dc := adaptertest.NewDialog(t, w.Planner.ID)
	cs, err := w.session(t, url, dc, &adaptertest.Recorder{})
	adaptertest.MustOK(t, err)
	return url, s, dc, cs
}

// offerCall signs an offer to the hotel in dc, bound to the Txn-Token the call carries
// (section 5.7), and returns the call params and the context to call with.
func (w *world) offerCall(t *testing.T, dc *dialog.Context) (*mcp.CallToolParams, *handoff.Handoff, context.Context) {
	t.Helper()
	h, ctx := w.Offer(t, dc)
	p := &mcp.CallToolParams{Name: "book_hotel", Arguments: map[string]any{"city": "Lisbon"}}
	adaptertest.MustOK(t, dialogmcp.PutOffer(p, h))
	return p, h, ctx
}

// Section 6 (MCP) over the real go-sdk: an offer in a tool call is verified, taken
// and completed, and the signed "completed" status comes back in the result's _meta;
// every MCP HTTP request was proved and carried the Dialog-Context and a Txn-Token.
func TestMCPSec6_OfferAcceptedAndCompleted(t *testing.T) {
	w := newWorld(t)
	_, s, dc, cs := w.openHotel(t, booked)
	p, h, ctx := w.offerCall(t, dc)
	requests := w.callCompleted(t, cs, ctx, p, s, dc, h)
	if len(requests) < 3 { // initialize, notifications/initialized, tools/call
		t.Fatalf("only %d HTTP requests seen", len(requests))
	}
}

// Section 5.3 over go-sdk: the delegator asks again with the same offer and gets the
// identical octets of the last status, answered from the records without the tool.
func TestMCPSec5_3_RetransmissionGetsIdenticalStatus(t *testing.T) {
	w := newWorld(t)
	url, s, dc, cs := w.openHotel(t, booked)
	p, h, ctx := w.offerCall(t, dc)
	first, err := cs.CallTool(ctx, p)
	adaptertest.MustOK(t, err)
	st1, err := dialogmcp.ResultStatus(first)
	if err != nil || st1 == nil {
		t.Fatalf("first status: %v", err)
	}
	again := w.Retransmission(t, h)
	p2 := &mcp.CallToolParams{Name: "book_hotel", Arguments: map[string]any{"city": "Lisbon"}}
	adaptertest.MustOK(t, dialogmcp.PutOffer(p2, again))
	second, err := cs.CallTool(ctx, p2)
	adaptertest.MustOK(t, err)
	st2, err := dialogmcp.ResultStatus(second)
	if err != nil || st2 == nil {
		t.Fatalf("no status for the retransmission (%v): %+v", err, second)
	}
	if !st2.Equal(*st1) {
		t.Fatal("the retransmission got other octets than the last status")
	}
	s.WantRuns(t, 1)

	// The same offer from another workload: the last status is resent only to the
	// authenticated offer.iss (section 8.4), and the tool does not run.
	other := w.Dom.Workload("/agent/other")
	rec := &adaptertest.Recorder{}
	cs2, err := w.sessionAs(t, other.Source, nil, url, dc, rec)
	adaptertest.MustOK(t, err)
	res, err := cs2.CallTool(context.Background(), p2)
	if err == nil {
		if st, _ := dialogmcp.ResultStatus(res); st != nil {
			t.Fatal("the last status was resent to a workload that is not offer.iss")
		}
		t.Fatalf("the retransmission from another workload was answered: %+v", res)
	}
	wantSDKRefusal(t, err, rec, errcode.HandoffRetransmission)
	s.WantRuns(t, 1)
}

// Section 6: a cancel of a tool call over go-sdk (the call's context ends) carries the
// delegator's "canceled" status in notifications/cancelled; the receiver records it
// and the cancel reaches the tool, which stops.
func TestMCPSec6_CancelStopsTheWork(t *testing.T) {
	w := newWorld(t)
	work := adaptertest.NewBlocking()
	_, _, dc, cs := w.openHotel(t, blockingTool(work))
	p, h, ctx := w.offerCall(t, dc)
	callCanceled(t, cs, ctx, p, work)
	w.WantCanceledAtBothEnds(t, h)
}

// Section 6: a handoff where an MCP receiver does not read one (here under the A2A
// extension key in _meta) is refused with handoff_unplaced, and the tool never runs.
func TestMCPSec6_UnplacedHandoffRefused(t *testing.T) {
	w := newWorld(t)
	url, s := w.serveHotel(t, booked)
	dc := adaptertest.NewDialog(t, w.Planner.ID)
	rec := &adaptertest.Recorder{}
	cs, err := w.session(t, url, dc, rec)
	adaptertest.MustOK(t, err)
	h, ctx := w.Offer(t, dc)
	v, err := h.MetaValue()
	adaptertest.MustOK(t, err)
	p := &mcp.CallToolParams{Name: "book_hotel", Meta: mcp.Meta{handoff.A2AExtensionURI: v}}
	_, err = cs.CallTool(ctx, p)
	if err == nil {
		t.Fatal("a call with an unplaced handoff succeeded")
	}
	wantSDKRefusal(t, err, rec, errcode.HandoffUnplaced)
	s.WantRuns(t, 0)
}

// Dialog-binding section 7 over go-sdk: a Dialog-Context changed after the request was
// signed is refused, and no MCP session is made.
func TestMCPSec7_TamperedDialogContextRefused(t *testing.T) {
	w := newWorld(t)
	url, s := w.serveHotel(t, booked)
	dc, rec := w.TamperedDialog(t)
	if _, err := w.session(t, url, dc, rec); err == nil {
		t.Fatal("a session was made with a tampered Dialog-Context")
	}
	adaptertest.WantRefusedBeforeWork(t, rec, s)
}

// An MCP session belongs to the workload that opened it: another workload of the same
// trust domain that names its Mcp-Session-Id is refused with session_owner_mismatch,
// and the tool does not run; the owner's own requests go on.
func TestMCPSessionOwnedByItsWorkload(t *testing.T) {
	w := newWorld(t)
	url, s, dc, cs := w.openHotel(t, booked)
	other := w.Dom.Workload("/agent/other")
	call := func(src wit.Source) (int, string) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"book_hotel","arguments":{}}}`))
		adaptertest.MustOK(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		tr := &agent.Transport{Source: src, Responses: httpsig.NewVerifier(w.WITs)}
		res, err := tr.RoundTrip(req.WithContext(agent.WithDialog(context.Background(), dc)))
		adaptertest.MustOK(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(errcode.CodeOf(problem.Read(res.StatusCode, b)))
	}
	if code, got := call(other.Source); code != http.StatusForbidden || got != string(errcode.SessionOwnerMismatch) {
		t.Fatalf("another workload in the session: %d %q", code, got)
	}
	s.WantRuns(t, 0)
	if code, _ := call(w.Planner.Source); code != http.StatusOK {
		t.Fatalf("the owner's own request: %d", code)
	}
	s.WantRuns(t, 1) // the owner's
}

// wantSDKRefusal checks that go-sdk surfaces a refusal at the handoff step as the call's
// JSON-RPC error (*jsonrpc.Error), the stable code and kind in its data, and that no HTTP
// error status came back (a 4xx would not be the call's error in go-sdk).
func wantSDKRefusal(t *testing.T, err error, rec *adaptertest.Recorder, code errcode.Code) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("the SDK error %v (%T) is not a JSON-RPC error", err, err)
	}
	var data struct{ Code, Kind string }
	if json.Unmarshal(we.Data, &data) != nil || data.Code != string(code) || data.Kind != errcode.Failed.String() || we.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("JSON-RPC error %d %q data %s, want %s", we.Code, we.Message, we.Data, code)
	}
	if !strings.HasPrefix(we.Message, string(code)+": ") {
		t.Fatalf("message %q does not name %s", we.Message, code)
	}
	rec.WantNoHTTPError(t)
}
