package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wit"
)

// RefusedByField is set by the egress on every answer to the agent with a status of
// 400 or more: "egress" when the egress refused (its problem document says so in
// refused_by too), "upstream" when the answer is the upstream's refusal, passed on as
// it came or, unsigned on a route requiring a signed response, in a document of the
// egress with the upstream's status and code (refused_by "upstream").
const RefusedByField = "Dialogtrust-Refused-By"

// The values of RefusedByField and of a problem document's refused_by.
const (
	refusedByEgress   = "egress"
	refusedByUpstream = "upstream"
)

// refusalLevel is the log level of a refusal: a check that failed is the caller's
// (Info: seen at the default level, as a new user needs it), one that could not be
// completed a dependency's (Warn), an internal error the proxy's (Error).
func refusalLevel(err error) slog.Level {
	switch {
	case errcode.CodeOf(err) == errcode.Internal || errcode.CodeOf(err) == errcode.Unmapped:
		return slog.LevelError
	case errcode.KindOf(err) == errcode.Incomplete:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// refuse answers the agent's request, whose body is body (nil when it was not read),
// with err: the egress's own refusal, or the upstream's unsigned refusal
// (agent.UnverifiedRefusal), never as a response. An unsigned refusal on a route
// requiring a signed response has the upstream's status and code and refused_by
// "upstream". The upstream's refusal of a dialog's first JSON-RPC request (a JSON-RPC
// error on 200 echoing no Dialog-Context, which agent.Start returns as its code, signed
// (agent.SignedRefusal) or not) is answered as the receiver answered it: a JSON-RPC
// error naming the agent's request (dialog.WriteRefusal), or, for a request that is not
// one, the problem document with refused_by "upstream"; RefusedByField says "upstream"
// on either.
func (e *Egress) refuse(w http.ResponseWriter, r *http.Request, body []byte, err error) {
	d := problem.From(err)
	d.RefusedBy = refusedByEgress
	var ur *agent.UnverifiedRefusal
	var sr *agent.SignedRefusal
	switch {
	case errors.As(err, &ur) && ur.Status >= 400 && ur.Status <= 599:
		d.RefusedBy, d.Status, d.Title = refusedByUpstream, ur.Status, http.StatusText(ur.Status)
	case errors.As(err, &ur), errors.As(err, &sr):
		d.RefusedBy = refusedByUpstream
		if isJSONRPCRequest(body) {
			e.logRefusal(r, err, http.StatusOK, d.RefusedBy)
			w.Header().Set(RefusedByField, d.RefusedBy)
			dialog.WriteRefusal(w, body, err)
			return
		}
	}
	e.logRefusal(r, err, d.Status, d.RefusedBy)
	w.Header().Set(RefusedByField, d.RefusedBy)
	problem.WriteDetails(w, d)
}

// isJSONRPCRequest reports whether body is a JSON-RPC request of a host protocol with
// an id a JSON-RPC error can name: the requests dialog.WriteRefusal answers with one.
func isJSONRPCRequest(body []byte) bool {
	req, ok := hostproto.ParseRequest(body)
	return ok && hostproto.HostOf(req.Method) != 0 && hostproto.ValidID(req.ID)
}

// logRefusal logs one refusal of the egress, or of its upstream, with its code: what
// the agent got, so that the operator sees why without the agent's help. Only the
// detail is logged, which never holds a whole token (errcode.Error.Detail).
func (e *Egress) logRefusal(r *http.Request, err error, status int, by string) {
	level := refusalLevel(err)
	if by == refusedByUpstream {
		level = slog.LevelInfo
	}
	e.stream.log.Log(r.Context(), level, "refused", "side", "egress", "refused_by", by, "status", status,
		"code", string(errcode.CodeOf(err)), "kind", errcode.KindOf(err).String(), "method", r.Method,
		"path", errcode.Cut(r.URL.Path), "error", err.Error())
}

// refusalNote is noteUpstreamRefusal for one request, given to the code that writes an
// upstream's answer (a boundary route's, writeLinked).
type refusalNote func(res *http.Response, body []byte)

// noteUpstreamRefusal marks an upstream's answer of status 400 or more, passed on as it
// came, as the upstream's, and logs it with its code when body (read whole) is a
// problem document or a JSON-RPC refusal.
func (e *Egress) noteUpstreamRefusal(r *http.Request, res *http.Response, body []byte) {
	if res.StatusCode < 400 {
		return
	}
	res.Header.Set(RefusedByField, refusedByUpstream)
	code := ""
	if body != nil {
		if c := errcode.CodeOf(problem.Read(res.StatusCode, body)); c != errcode.Unmapped {
			code = string(c)
		}
	}
	e.stream.log.Log(r.Context(), slog.LevelInfo, "refused", "side", "egress", "refused_by", refusedByUpstream,
		"status", res.StatusCode, "code", code, "method", r.Method, "path", errcode.Cut(r.URL.Path))
}

// withRefusalLog puts the ingress's refusal log on r: the receiver's refusals
// (dialog.WithRefusalHook) are logged as the ingress's own are.
func (in *Ingress) withRefusalLog(r *http.Request) *http.Request {
	return r.WithContext(dialog.WithRefusalHook(r.Context(), func(err error) { in.logRefusal(r, err) }))
}

// refuse answers the caller with err, with the receiver's challenge on a 401, and logs
// it; with an audited receiver (dialog.WithAuditor, ingress.audit) it writes its
// record too: a refusal before the receiver ran (a path not in normal form, a body
// over the bound, a boundary's precheck) names nothing verified, one after it (the
// boundary's access token, the application unreachable) follows the receiver's
// "accepted" record of the same request id.
func (in *Ingress) refuse(w http.ResponseWriter, r *http.Request, err error) {
	in.logRefusal(r, err)
	in.receiver.AuditRefusal(r, err)
	in.receiver.WriteRefusal(w, err)
}

// logRefusal logs one refusal of the ingress with its code and the SHA-256 of the WIT
// the caller presented (never the WIT itself; nothing of a Txn-Token, whose hash must
// not reach another trust domain's logs either: section 13).
func (in *Ingress) logRefusal(r *http.Request, err error) {
	attrs := []any{"side", "ingress", "status", problem.Status(err), "code", string(errcode.CodeOf(err)),
		"kind", errcode.KindOf(err).String(), "method", r.Method, "path", errcode.Cut(r.URL.Path), "error", err.Error()}
	if v := r.Header.Get(wit.HeaderName); v != "" {
		attrs = append(attrs, "wit_sha256", tokenhash.Of(v))
	}
	in.stream.log.Log(context.WithoutCancel(r.Context()), refusalLevel(err), "refused", attrs...)
}
