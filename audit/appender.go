package audit

// Appender is what writes records other than a token endpoint's: a receiver's or an
// ingress's accepted and refused requests (dialog.WithAuditor) and the revocations
// admin API's changes (revokeapi.Config.Auditor). *Log implements it. Append returns
// an error only when the record was not written; the caller then refuses what the
// record was to account for (audit_unavailable).
type Appender interface {
	Append(e *Entry) error
}

var _ Appender = (*Log)(nil)
