package dialogmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	dialogmcp "github.com/dialogtrust/dialogtrust/adapters/mcp"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/internal/adaptertest"
)

// MCP 2026-07-28 is stateless: no initialize, no Mcp-Session-Id, the version and
// capabilities in each request's _meta, Mcp-Method and Mcp-Name required. go-sdk v1.8.0
// speaks it when both ends ask for it (the server only with Stateless). These tests run
// the real SDK at both ends of dialog.Receiver in that protocol.

// traceparent is W3C Trace Context as MCP carries it in _meta (SEP-414).
const traceparent = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"

// serveHotel2026 serves the tool over go-sdk's stateless streamable HTTP handler behind
// the receiver; metas receives the _meta of every tool call the tool sees, and cancels
// a value once each notifications/cancelled has been answered.
func (w *world) serveHotel2026(t *testing.T, work mcp.ToolHandler) (string, *adaptertest.Seen, chan mcp.Meta, chan struct{}) {
	t.Helper()
	s := &adaptertest.Seen{}
	metas := make(chan mcp.Meta, 8)
	cancels := make(chan struct{}, 8)
	server := mcp.NewServer(&mcp.Implementation{Name: "hotel", Version: "v1"}, nil)
	server.AddTool(&mcp.Tool{Name: "book_hotel", InputSchema: map[string]any{"type": "object"}},
		dialogmcp.Tool(w.HandoffReceiver, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.Call(dialogmcp.Verified(req))
			metas <- req.Params.Meta
			return work(ctx, req)
		}))
	url := adaptertest.Serve(t, s, "/mcp", func(url string) http.Handler {
		h := dialogmcp.Handler(w.Receiver(t, url), func(*http.Request) *mcp.Server { return server },
			&mcp.StreamableHTTPOptions{JSONResponse: true, Stateless: true})
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(rw, r)
			if r.Header.Get(hostproto.MCPMethodHeader) == hostproto.MCP.CancelMethod() {
				cancels <- struct{}{}
			}
		})
	})
	return url, s, metas, cancels
}

// connect2026 connects the planner in dc asking for protocol 2026-07-28; edit, when
// set, changes each request go-sdk makes before it is proved and signed.
func (w *world) connect2026(t *testing.T, url string, dc *dialog.Context, rec *adaptertest.Recorder, edit func(*http.Request)) *mcp.ClientSession {
	t.Helper()
	hc, err := dialogmcp.NewHTTPClient(w.ClientAs(w.Planner.Source, w.Tokens, dc, rec))
	adaptertest.MustOK(t, err)
	if edit != nil {
		hc = &http.Client{Transport: editing{edit, hc.Transport}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: hostproto.MCPStatelessVersion})
	adaptertest.MustOK(t, err)
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != hostproto.MCPStatelessVersion || cs.ID() != "" {
		t.Fatalf("go-sdk speaks %q with session %q, want %s without a session", v, cs.ID(), hostproto.MCPStatelessVersion)
	}
	return cs
}

// editing changes a request before next proves and signs it: the client itself lying.
type editing struct {
	edit func(*http.Request)
	next http.RoundTripper
}

func (e editing) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	e.edit(r)
	return e.next.RoundTrip(r)
}

// offerCall2026 is offerCall with W3C Trace Context beside the offer in _meta.
func (w *world) offerCall2026(t *testing.T, dc *dialog.Context) (*mcp.CallToolParams, *handoff.Handoff, context.Context) {
	t.Helper()
	p, h, ctx := w.offerCall(t, dc)
	p.Meta["traceparent"] = traceparent
	return p, h, ctx
}

// Issue 28, MCP 2026-07-28 over go-sdk v1.8.0 at both ends: without initialize and
// without a session, a tool call carries its offer in _meta as before (section 6); it
// is verified, taken and completed, and the signed status comes back in the result's
// _meta. Every HTTP request was proved in the dialog; the tool call carried Mcp-Method
// and Mcp-Name, which its signature covers; the trace context beside the offer reached
// the tool unchanged.
func TestMCP20260728_OfferWithoutSessionAcceptedAndCompleted(t *testing.T) {
	w := newWorld(t)
	url, s, metas, _ := w.serveHotel2026(t, booked)
	dc := adaptertest.NewDialog(t, w.Planner.ID)
	cs := w.connect2026(t, url, dc, &adaptertest.Recorder{}, nil)
	p, h, ctx := w.offerCall2026(t, dc)
	requests := w.callCompleted(t, cs, ctx, p, s, dc, h)
	var call http.Header
	for _, hd := range requests {
		if hd.Get("Mcp-Session-Id") != "" || hd.Get(hostproto.MCPMethodHeader) == "initialize" {
			t.Fatalf("a session in protocol %s: %v", hostproto.MCPStatelessVersion, hd)
		}
		if hd.Get(hostproto.MCPMethodHeader) == "tools/call" {
			call = hd
		}
	}
	if call == nil || call.Get(hostproto.MCPNameHeader) != "book_hotel" || call.Get(hostproto.MCPProtocolVersionHeader) != hostproto.MCPStatelessVersion ||
		!strings.Contains(call.Get("Signature-Input"), `"mcp-method" "mcp-name"`) {
		t.Fatalf("the tool call's fields: %v", call)
	}
	if got := <-metas; got["traceparent"] != traceparent || got[hostproto.MCPMetaProtocolVersion] != hostproto.MCPStatelessVersion {
		t.Fatalf("the tool saw _meta %v", got)
	}
}

// Issue 28: an Mcp-Name changed after the request was signed (an intermediary routing
// the call elsewhere) breaks the signature, which covers it: invalid_signature, and the
// tool never runs.
func TestMCP20260728_McpNameChangedAfterSigningRefused(t *testing.T) {
	w := newWorld(t)
	url, s, _, _ := w.serveHotel2026(t, booked)
	dc := adaptertest.NewDialog(t, w.Planner.ID)
	rec := &adaptertest.Recorder{Edit: func(r *http.Request) {
		if r.Header.Get(hostproto.MCPNameHeader) != "" {
			r.Header.Set(hostproto.MCPNameHeader, "cancel_all")
		}
	}}
	cs := w.connect2026(t, url, dc, rec, nil)
	p, _, ctx := w.offerCall2026(t, dc)
	if _, err := cs.CallTool(ctx, p); err == nil {
		t.Fatal("a call whose Mcp-Name was changed after signing succeeded")
	}
	if rec.Last() != string(errcode.InvalidSignature) {
		t.Fatalf("refused with %q, want %s", rec.Last(), errcode.InvalidSignature)
	}
	s.WantRuns(t, 0)
}

// Issue 28, MCP 2026-07-28 "Standard headers": a client whose Mcp-Name is not the tool
// its body calls (signed as sent: the client lying to the intermediaries that decide by
// the field) is refused by the receiver before the handoff step: go-sdk surfaces
// HeaderMismatch (-32020) with mcp_header_mismatch in its data, the tool never runs and
// the offer is not recorded.
func TestMCP20260728_McpNameNotTheBodysRefused(t *testing.T) {
	w := newWorld(t)
	url, s, _, _ := w.serveHotel2026(t, booked)
	dc := adaptertest.NewDialog(t, w.Planner.ID)
	rec := &adaptertest.Recorder{}
	cs := w.connect2026(t, url, dc, rec, func(r *http.Request) {
		if r.Header.Get(hostproto.MCPNameHeader) != "" {
			r.Header.Set(hostproto.MCPNameHeader, "search_hotels")
		}
	})
	p, h, ctx := w.offerCall2026(t, dc)
	_, err := cs.CallTool(ctx, p)
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("the SDK error %v (%T) is not a JSON-RPC error", err, err)
	}
	var data struct{ Code string }
	if json.Unmarshal(we.Data, &data) != nil || we.Code != hostproto.JSONRPCHeaderMismatch || data.Code != string(errcode.MCPHeaderMismatch) {
		t.Fatalf("JSON-RPC error %d %q data %s", we.Code, we.Message, we.Data)
	}
	s.WantRuns(t, 0)
	o, err := handoff.DecodeOffer(h.Offer)
	adaptertest.MustOK(t, err)
	if r, _ := w.HandoffReceiver.Lookup(context.Background(), w.Planner.ID.String(), o.Hop); r != nil {
		t.Fatalf("the refused call's offer was recorded: %+v", r)
	}
}

// Issue 28: a cancel without a session. The call's context ends; go-sdk sends
// notifications/cancelled in a POST of its own, which reaches a fresh session of the
// stateless server that does not hold the call. It carries the delegator's "canceled"
// status in _meta as in 2025-11-25 (section 6): the receiver records it, and the
// adapter stops the work of the hop the status names.
func TestMCP20260728_CancelWithoutSessionCarriesTheStatus(t *testing.T) {
	w := newWorld(t)
	work := adaptertest.NewBlocking()
	url, _, _, cancels := w.serveHotel2026(t, blockingTool(work))
	dc := adaptertest.NewDialog(t, w.Planner.ID)
	cs := w.connect2026(t, url, dc, &adaptertest.Recorder{}, nil)
	p, h, ctx := w.offerCall2026(t, dc)
	callCanceled(t, cs, ctx, p, work)
	<-cancels
	w.WantCanceledAtBothEnds(t, h)
}
