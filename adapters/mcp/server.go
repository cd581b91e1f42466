package dialogmcp

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
)

// verifiedHeader names, inside the server, the request whose verified context a tool
// handler looks up. go-sdk runs a tool handler on its session's context, not the HTTP
// request's, and hands it only the request's header (RequestExtra.Header): Handler
// sets this field to a fresh random reference after the receiver verified the request
// (any value the client sent is removed first), and drops the reference when the HTTP
// request ends.
const verifiedHeader = "Dialogtrust-Mcp-Verified"

var verified sync.Map // reference -> *dialog.Verified

// Handler serves the MCP servers getServer returns over go-sdk's streamable HTTP
// transport, behind rc: every HTTP request (initialize, tool calls, notifications, the
// event stream) is verified first, and refused, or answered for a refused handoff,
// without reaching go-sdk. Build rc with dialog.WithHandoffsIn(hr, dialog.MCP).
// opts.JSONResponse lets rc sign responses (a signer buffers the whole response).
func Handler(rc *dialog.Receiver, getServer func(*http.Request) *mcp.Server, opts *mcp.StreamableHTTPOptions) http.Handler {
	inner := mcp.NewStreamableHTTPHandler(getServer, opts)
	return rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(verifiedHeader)
		if v := dialog.FromRequest(r); v != nil {
			ref := rand.Text()
			verified.Store(ref, v)
			defer verified.Delete(ref)
			r.Header.Set(verifiedHeader, ref)
		}
		inner.ServeHTTP(w, r)
	}))
}

// Verified returns what the receiver verified about the HTTP request that carried a
// tool call (its sender, Dialog-Context, Txn-Token, and the handoff decision in
// Verified.Handoff), or nil outside Handler.
func Verified(req *mcp.CallToolRequest) *dialog.Verified {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return nil
	}
	ref := req.Extra.Header.Get(verifiedHeader)
	if ref == "" {
		return nil
	}
	v, _ := verified.Load(ref)
	d, _ := v.(*dialog.Verified)
	return d
}

// Tool wraps a tool handler for calls that may carry a handoff (section 6). A call
// outside Handler is refused. A call without a handoff runs h as it is. For an accepted
// offer, the hop is taken (hr.Accept, section 4) before h runs, and its outcome is
// signed and returned in the result's _meta: "completed" when h returns a result that
// is not an error, else "failed", saying that the work took no effect (section 5.4).
// A tool whose work can take part effect before it fails must not report that as an
// error here: it answers with its own status (hr.Fail with the effects, PutStatus).
func Tool(hr *handoff.Receiver, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		v := Verified(req)
		if v == nil {
			return nil, errcode.New(errcode.MissingCredential, "the tool call did not pass the dialog receiver")
		}
		if v.Handoff == nil || v.Handoff.Offer == nil {
			return h(ctx, req)
		}
		iss, hop := v.Handoff.Offer.Iss, v.Handoff.Offer.Hop
		if _, err := hr.Accept(ctx, iss, hop); err != nil {
			return nil, err
		}
		res, err := h(ctx, req)
		// The outcome is recorded even when the call's context ended (a cancel).
		rec := context.WithoutCancel(ctx)
		var status handoff.Signed
		if err == nil && res != nil && !res.IsError {
			status, err = hr.Complete(rec, iss, hop, nil)
			if err != nil {
				return nil, err
			}
		} else {
			if res == nil || err != nil {
				res = &mcp.CallToolResult{}
				if err == nil {
					err = errcode.New(errcode.Internal, "the tool returned no result")
				}
				res.SetError(err)
			}
			status, err = hr.Fail(rec, iss, hop, handoff.Failure{Detail: "the tool call failed"})
			if err != nil {
				return nil, err
			}
		}
		if err := PutStatus(res, status); err != nil {
			return nil, err
		}
		return res, nil
	}
}
