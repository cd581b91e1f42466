package dialog

import (
	"context"
	"net/http"
	"strings"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/reqid"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// WithAuditor has the Middleware write one record of the audit trail (issue 26; package
// audit, docs/operator.md "The audit trail") for every request it answers: decision
// "accepted" for a request that passed every check, written before the handler sees
// it, or "refused" with the refusal's code, kind and status (problem.Status's, also
// for a refusal sent as a JSON-RPC error on 200). Off by default.
//
// A record names what the receiver verified, and nothing it did not:
//   - requester: the sender (the WIT's sub), once its proof over the fields verified;
//   - aud: self, this receiver's own workload;
//   - dlg: the Dialog-Context's dialog, once the proof that covers it verified;
//   - txn, req_wl, sub, scopes: the Txn-Token's claims, once the token verified;
//   - subject_token_sha256: the SHA-256 of the Txn-Token presented (tokenhash), once
//     the sender's proof, which covers the field, verified: the TTS's record of the
//     token's issuance names the same value as issued_token_sha256;
//   - rule and op: the authorization rule that decided and the operation it was asked
//     about ("tools/call get_weather"), when WithAuthorizer ran;
//   - hop: the handoff hop of an offer whose signature verified, accepted or refused
//     (or of a delegator's canceled status).
//
// A refusal before the sender's proof verified (no proof, a bad signature, an
// untrusted WIT) is recorded with its code, kind, status and request id only: an
// identity that did not verify is left out, never recorded as if it had.
//
// A record that cannot be written refuses a request that would have been accepted
// (audit_unavailable, 503, could not be completed), and the handler does not run; a
// refusal stands whether or not its record was written. The record is written when
// the receiver's checks end: the dialog a request establishes (WithRegistry) and an
// offer the handoff receiver answered are already recorded there when the audit
// record cannot be written. The records of a response that cannot be signed after
// the handler ran (response_not_signable over the bound) are not the receiver's: the
// request was accepted.
func WithAuditor(a audit.Appender, self identifier.ID) ReceiverOption {
	return func(r *Receiver) {
		r.auditor = a
		if !self.IsZero() {
			r.auditSelf = self.String()
		}
	}
}

// WithAuditHandler names the handler of WithAuditor's records (default
// audit.HandlerReceiver; the dialogtrust proxy's ingress gives audit.HandlerIngress).
func WithAuditHandler(name string) ReceiverOption {
	return func(r *Receiver) { r.auditHandler = name }
}

// Audits reports whether the receiver writes audit records (WithAuditor).
func (rc *Receiver) Audits() bool { return rc.auditor != nil }

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id that WithAuditor's records of the
// request name (its request_id). Without one, the Middleware takes the request's
// X-Request-Id when it is valid, else a new one, and sets it on the response
// (package reqid). A server in front of the receiver that refuses requests itself
// (the proxy's ingress) sets it, so that its records and the receiver's agree.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// auditFacts are what the receiver learned of a request beyond Verified, for its audit
// record.
type auditFacts struct {
	// txnSHA256 is the hash of the Txn-Token presented, set once the proof covering it
	// verified.
	txnSHA256 string
	rule, op  string
	// hop is the hop of an offer whose signature verified, whatever its outcome.
	hop string
}

// requestID is the request id of r's records, set on w when the receiver chose it.
func requestID(w http.ResponseWriter, r *http.Request) string {
	if id, ok := r.Context().Value(requestIDKey{}).(string); ok && id != "" {
		return id
	}
	return reqid.Set(w, r)
}

// record is the audit record of one decision on r; v holds what was verified (nil or
// empty: nothing).
func (rc *Receiver) record(id string, v *Verified, err error) *audit.Entry {
	handler := rc.auditHandler
	if handler == "" {
		handler = audit.HandlerReceiver
	}
	// Time is left to the Log, whose clock stamps it.
	e := &audit.Entry{Decision: audit.Accepted, Handler: handler, RequestID: id}
	if rc.auditSelf != "" {
		e.Audience = []string{rc.auditSelf}
	}
	if err != nil {
		e.Decision, e.Code, e.Kind, e.Status = audit.Refused, string(errcode.CodeOf(err)), errcode.KindOf(err).String(), problem.Status(err)
	}
	if v == nil || v.Sender.IsZero() {
		return e
	}
	e.Requester = v.Sender.String()
	e.SubjectSHA256, e.Rule, e.Operation = v.audit.txnSHA256, v.audit.rule, v.audit.op
	if v.Context != nil {
		e.Dialog = v.Context.DLG()
	}
	if c := v.Txn; c != nil {
		e.Txn, e.ReqWL, e.Subject = c.Txn, c.ReqWL, c.Sub
		if c.Scope != "" {
			e.Scopes = strings.Fields(c.Scope)
		}
		if e.Dialog == "" {
			e.Dialog = c.Dialog()
		}
	}
	if e.Hop = hopOf(v.Handoff, v.Cancel); e.Hop == "" {
		e.Hop = v.audit.hop
	}
	return e
}

func hopOf(d *handoff.Decision, c *handoff.CancelResult) string {
	switch {
	case d != nil && d.Offer != nil && d.Offer.Offer != nil:
		return d.Offer.Hop
	case c != nil && c.Status != nil:
		return c.Status.Hop
	}
	return ""
}

// auditAccepted writes the record of an accepted request; an error is the refusal to
// answer with instead.
func (rc *Receiver) auditAccepted(id string, v *Verified) error {
	if err := rc.auditor.Append(rc.record(id, v, nil)); err != nil {
		return errcode.Unavailable(errcode.AuditUnavailable, err, "the audit record of this request could not be written; no request reaches the handler without one")
	}
	return nil
}

// auditRefused writes the record of a refusal; the refusal stands whether or not it
// was written (the auditor logs its own failures).
func (rc *Receiver) auditRefused(id string, v *Verified, err error) {
	_ = rc.auditor.Append(rc.record(id, v, err))
}

// AuditRefusal writes the record of a refusal that a server in front of the receiver
// answered r with itself (the proxy's ingress: a path it does not serve, a body over
// its bound, a step after the receiver's), naming what the receiver verified of r
// (FromRequest) and the request id of WithRequestID. It does nothing without
// WithAuditor.
func (rc *Receiver) AuditRefusal(r *http.Request, err error) {
	if rc.auditor == nil || err == nil {
		return
	}
	id, _ := r.Context().Value(requestIDKey{}).(string)
	if id == "" {
		id = reqid.From(r)
	}
	rc.auditRefused(id, FromRequest(r), err)
}

// txnTokenSHA256 is the hash of the Txn-Token field(s) of h, once the proof covering
// them verified ("" without one).
func txnTokenSHA256(h http.Header) string {
	vs := h.Values(txntoken.HeaderName)
	if len(vs) != 1 {
		return ""
	}
	return tokenhash.Of(strings.TrimSpace(vs[0]))
}

// refused hands err to r's refusal hook and, with WithAuditor, writes its record.
func (rc *Receiver) refused(r *http.Request, id string, v *Verified, err error) {
	noteRefusal(r, err)
	if rc.auditor != nil {
		rc.auditRefused(id, v, err)
	}
}
