package revokeapi

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/revoke"
)

// The audit trail of revocations (issue 26): every change through the API is one
// record of the TTS's trail, handler "revocations", decision "revoked" or "lifted",
// naming the administrator (requester), what changed (target_kind, target, and for a
// revocation its reason and whether it reaches linked dialogs) and the request id.
//
// The record and the change cannot be made atomically, so the order is chosen for the
// trail to hold every change: the record is written first, and a change whose record
// could not be written is not made (audit_unavailable, 503). When the store then fails
// to make the change, a second record says so (decision "refused", the store's code),
// so that a reader of the trail never takes a revocation that failed for one in force.
// A "lifted" record is written even when nothing was in force (the answer's deleted
// says false): the administrator's act is what is recorded.

// requestIDKey is the context key of WithRequestID.
type requestIDKey struct{}

// WithRequestID gives Revoke and Lift the request id their audit records and log lines
// name (the API's and the page's handlers pass the request's; without one a record
// gets a new random id).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

func requestID(ctx context.Context) string {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok && id != "" {
		return id
	}
	return rand.Text()
}

// change is the record of one change, before it is written.
func (h *Handler) change(ctx context.Context, decision string, admin identifier.ID, kind revoke.Kind, id string) *audit.Entry {
	return &audit.Entry{Time: h.cfg.Now().UTC().Format(time.RFC3339Nano), Decision: decision, Handler: audit.HandlerRevocations,
		RequestID: requestID(ctx), Requester: admin.String(), TargetKind: string(kind), Target: id}
}

// audit writes e when an auditor is configured; an error is the refusal to answer
// with (audit_unavailable, could not be completed).
func (h *Handler) audit(ctx context.Context, e *audit.Entry) error {
	if h.cfg.Auditor == nil {
		return nil
	}
	if err := h.cfg.Auditor.Append(e); err != nil {
		h.cfg.Logger.ErrorContext(ctx, "audit record of a revocation change not written; the change is refused", "error", err,
			"decision", e.Decision, "target_kind", e.TargetKind, "target", e.Target, "by", e.Requester)
		return errcode.Unavailable(errcode.AuditUnavailable, err, "the audit record of this change could not be written; the change is not made without one")
	}
	return nil
}

// auditFailed records that the change whose record was written was not made: the
// store refused it with cause.
func (h *Handler) auditFailed(ctx context.Context, change *audit.Entry, cause error) {
	if h.cfg.Auditor == nil {
		return
	}
	e := *change
	e.Seq, e.Prev, e.Writer = 0, "", ""
	e.Time = h.cfg.Now().UTC().Format(time.RFC3339Nano)
	e.Decision, e.Code, e.Kind = audit.Refused, string(errcode.CodeOf(cause)), errcode.KindOf(cause).String()
	e.Status = problem.Status(cause)
	if err := h.cfg.Auditor.Append(&e); err != nil {
		h.cfg.Logger.ErrorContext(ctx, "audit record of a failed revocation change not written", "error", err,
			"target_kind", e.TargetKind, "target", e.Target, "by", e.Requester, "code", e.Code)
	}
}
