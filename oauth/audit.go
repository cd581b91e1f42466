package oauth

import (
	"github.com/dialogtrust/dialogtrust/errcode"
)

// Auditor writes the audit record of every outcome of the endpoint (issue 26: the
// audit trail; package audit implements it). It is told each outcome once, after the
// handler decided and before the handler's Done, the Observer and the response: an
// issuance whose record could not be written is turned into a refusal
// (audit_unavailable, 503) and its token is never sent, so no token leaves the
// endpoint without its record ("no data lost": fail closed).
type Auditor interface {
	Audit(rec *Record) error
}

// Issued is what the audit trail records of an issued token besides the Record's own
// fields: the token itself (the auditor keeps only its SHA-256) and the claims that
// place it in a transaction and a dialog.
type Issued struct {
	// Token is the issued token; an auditor records tokenhash.Of(Token), never Token.
	Token string
	// Txn, Dialog and ReqWL are the Txn-Token's txn, tctx.dlg and req_wl (empty for
	// other tokens); LinkedFrom the dialog the issued token links from, when known.
	Txn, Dialog, LinkedFrom, ReqWL string
	// Subject is the issued token's sub.
	Subject  string
	Scope    string
	Audience []string
}

// IssuedDescriber is a Response, or a Record.Detail, that tells the auditor what it
// issued (chaining's grant and access token responses).
type IssuedDescriber interface {
	DescribeIssued(*Issued)
}

// audit hands rec to the configured Auditor. When the record of an issuance could not
// be written, the issuance becomes a refusal with errcode.AuditUnavailable, which
// audit returns (and the endpoint sends instead of the token). When the record of a
// refusal could not be written, the refusal stands; the auditor reports its failure.
func (e *Endpoint) audit(rec *Record) error {
	err := e.cfg.Auditor.Audit(rec)
	if err == nil || rec.Err != nil {
		return nil
	}
	refused := errcode.Unavailable(errcode.AuditUnavailable, err, "the audit record of this issuance could not be written; no token is issued without one")
	rec.Err, rec.Code, rec.Response = refused, errcode.AuditUnavailable, nil
	rec.Error, rec.Status = ErrorFor(refused)
	return refused
}
