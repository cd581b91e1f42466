package dialogmcp

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/problem"
)

// verifiedHeader names, inside the server, the request whose verified context a tool
// handler looks up. go-sdk runs a tool handler on its session's context, not the HTTP
// request's, and hands it only the request's header (RequestExtra.Header): Handler
// sets this field to a fresh random reference after the receiver verified the request
// (any value the client sent is removed first), and drops the reference when the HTTP
// request ends.
const verifiedHeader = "Dialogtrust-Mcp-Verified"

var verified sync.Map // reference -> *dialog.Verified

// hopKey names the work of an accepted offer: the delegator (offer.iss) and its hop.
type hopKey struct{ iss, hop string }

// working holds, for each accepted offer whose tool runs in Tool, the cancel of the
// tool's context, so that the delegator's "canceled" status stops the work by the hop
// it names, in whatever HTTP request it comes: without a session (MCP 2026-07-28,
// go-sdk's Stateless handler) notifications/cancelled reaches a fresh session that
// does not hold the call, and go-sdk's own cancel by JSON-RPC id finds nothing.
var working sync.Map // hopKey -> context.CancelFunc

// Handler serves the MCP servers getServer returns over go-sdk's streamable HTTP
// transport, behind rc: every HTTP request (initialize, tool calls, notifications, the
// event stream) is verified first, and refused, or answered for a refused handoff,
// without reaching go-sdk. Build rc with dialog.WithHandoffsIn(hr, hostproto.MCP).
// opts.JSONResponse lets rc sign responses (a signer buffers the whole response).
//
// An MCP session belongs to the workload whose proof opened it: a request naming a
// session another workload opened is refused (errcode.SessionOwnerMismatch), so that no
// workload cancels, or listens in on, another's calls. The owner is recorded before
// the session's identifier leaves the server, so a session go-sdk holds is never
// unknown here.
func Handler(rc *dialog.Receiver, getServer func(*http.Request) *mcp.Server, opts *mcp.StreamableHTTPOptions) http.Handler {
	inner := mcp.NewStreamableHTTPHandler(getServer, opts)
	owners := &sessionOwners{m: map[string]*sessionOwner{}}
	if opts != nil {
		owners.idle = opts.SessionTimeout
	}
	return rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(verifiedHeader)
		v := dialog.FromRequest(r)
		if v == nil {
			problem.Write(w, errcode.New(errcode.MissingCredential, "the request did not pass the dialog receiver"))
			return
		}
		sender := v.Sender.String()
		sid := r.Header.Get(sessionHeader)
		if sid != "" && !owners.check(sid, sender) {
			problem.Write(w, errcode.New(errcode.SessionOwnerMismatch, "the MCP session was opened by another workload"))
			return
		}
		if v.Cancel != nil && v.Cancel.StopWork && v.Cancel.Status != nil {
			// The delegator's "canceled" status, verified and recorded by the receiver:
			// the work of that hop stops, whichever request or session carried it.
			if stop, ok := working.Load(hopKey{v.Cancel.Status.Iss, v.Cancel.Status.Hop}); ok {
				stop.(context.CancelFunc)()
			}
		}
		ref := rand.Text()
		verified.Store(ref, v)
		defer verified.Delete(ref)
		r.Header.Set(verifiedHeader, ref)
		inner.ServeHTTP(&ownerWriter{ResponseWriter: w, owners: owners, sender: sender, had: sid}, r)
		if sid != "" && r.Method == http.MethodDelete {
			owners.forget(sid)
		}
	}))
}

// sessionHeader is MCP's session identifier field (streamable HTTP transport).
const sessionHeader = "Mcp-Session-Id"

type sessionOwner struct {
	sender string
	seen   time.Time
}

// sessionOwners records which workload opened each session. With a session timeout,
// go-sdk closes idle sessions; their owners are dropped after twice that, when go-sdk
// no longer holds them.
type sessionOwners struct {
	mu   sync.Mutex
	m    map[string]*sessionOwner
	idle time.Duration
}

// check reports whether sender may use session sid: it opened it, or no workload did
// through this handler (go-sdk then refuses the unknown session itself).
func (o *sessionOwners) check(sid, sender string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.m[sid]
	if !ok {
		return true
	}
	if s.sender != sender {
		return false
	}
	s.seen = time.Now()
	return true
}

func (o *sessionOwners) record(sid, sender string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if o.idle > 0 {
		for k, s := range o.m {
			if now.Sub(s.seen) > 2*o.idle {
				delete(o.m, k)
			}
		}
	}
	if _, ok := o.m[sid]; !ok {
		o.m[sid] = &sessionOwner{sender: sender, seen: now}
	}
}

func (o *sessionOwners) forget(sid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, sid)
}

// ownerWriter records the owner of a session go-sdk opens, as its response header is
// written and before the identifier reaches the client.
type ownerWriter struct {
	http.ResponseWriter
	owners *sessionOwners
	sender string
	had    string // the session the request named
	done   bool
}

func (w *ownerWriter) record() {
	if w.done {
		return
	}
	w.done = true
	if sid := w.Header().Get(sessionHeader); sid != "" && sid != w.had {
		w.owners.record(sid, w.sender)
	}
}

func (w *ownerWriter) WriteHeader(status int) {
	w.record()
	w.ResponseWriter.WriteHeader(status)
}

func (w *ownerWriter) Write(p []byte) (int, error) {
	w.record()
	return w.ResponseWriter.Write(p)
}

// Flush lets go-sdk stream events through.
func (w *ownerWriter) Flush() {
	w.record()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *ownerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
// offer, the hop is taken (hr.Accept, section 4) before h runs, h's context ends when
// the delegator's "canceled" status for the hop arrives through Handler (in any
// request: MCP 2026-07-28 has no session to find the call by), and its outcome is
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
		// The delegator's cancel of this hop (Handler) ends ctx, with or without a
		// session.
		ctx, stop := context.WithCancel(ctx)
		key := hopKey{iss, hop}
		working.Store(key, stop)
		defer working.Delete(key)
		defer stop()
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
