package audit

import (
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Decisions of a record.
//
// Token endpoints write Issued and Refused; receivers and ingresses (when they audit)
// Accepted and Refused; the revocations admin API Revoked and Lifted.
const (
	Issued   = "issued"
	Refused  = "refused"
	Accepted = "accepted"
	Revoked  = "revoked"
	Lifted   = "lifted"
)

// Handlers of records other than the token endpoints' (whose handler is the oauth
// handler's name: tts, chaining_grants, chaining_access_tokens).
const (
	HandlerReceiver    = "receiver"
	HandlerIngress     = "ingress"
	HandlerRevocations = "revocations"
)

// Version is the record and checkpoint line format's version (v).
const Version = 1

// Entry is one decision as the trail records it. Writer, Seq and Prev are set by the
// Log; the rest by FromRecord (or the caller). No member ever holds a whole token:
// tokens are recorded by tokenhash.Of (base64url SHA-256).
type Entry struct {
	V      int    `json:"v"`
	Writer string `json:"w"`
	Seq    uint64 `json:"seq"`
	// Prev is the hex RFC 6962 leaf hash, SHA-256(0x00 || line), of the writer's
	// previous record line, without its newline ("" for the first record of a log that
	// opened an empty file).
	Prev      string `json:"prev"`
	Time      string `json:"time"`
	Decision  string `json:"decision"`
	Code      string `json:"code,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Status    int    `json:"status,omitempty"`
	Handler   string `json:"handler,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	Rule      string `json:"rule,omitempty"`
	Grant     string `json:"grant,omitempty"`
	Txn       string `json:"txn,omitempty"`
	Dialog    string `json:"dlg,omitempty"`
	// LinkedFrom is the dialog the decision's dialog was linked from, when known.
	LinkedFrom    string   `json:"linked_from,omitempty"`
	ReqWL         string   `json:"req_wl,omitempty"`
	Requester     string   `json:"requester,omitempty"`
	Peer          string   `json:"peer,omitempty"`
	SubjectSHA256 string   `json:"subject_token_sha256,omitempty"`
	IssuedSHA256  string   `json:"issued_token_sha256,omitempty"`
	Subject       string   `json:"sub,omitempty"`
	Scopes        []string `json:"scopes,omitempty"`
	Audience      []string `json:"aud,omitempty"`
	KID           string   `json:"kid,omitempty"`
	// Hop is the handoff hop of a request that carried a handoff offer (receivers and
	// ingresses).
	Hop string `json:"hop,omitempty"`
	// Operation is what a request at a receiver or ingress asked for, as authorization
	// saw it (for example "tools/call get_weather").
	Operation string `json:"op,omitempty"`
	// TargetKind and Target are what a revocation record revoked or lifted (dialog,
	// workload, txn; the revoke package's kinds) and Reason the administrator's reason.
	// Requester is the administrator.
	TargetKind string `json:"target_kind,omitempty"`
	Target     string `json:"target,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Linked is a dialog revocation's "with the dialogs linked from it" (revoke
	// .Revocation.Linked): what it revoked reaches further than Target.
	Linked bool `json:"linked,omitempty"`
}

// FromRecord is the entry of one token endpoint outcome. For an issuance it reads the
// issued token's claims from the Record: a Txn-Token's (*txntoken.Claims in Detail,
// the TTS) or an oauth.IssuedDescriber's (chaining's responses); for a refusal, what
// the request asked for.
func FromRecord(rec *oauth.Record, now time.Time) Entry {
	e := Entry{Time: now.UTC().Format(time.RFC3339Nano), Decision: Issued, Status: rec.Status, Handler: rec.Handler,
		RequestID: rec.RequestID, Rule: rec.Rule, Grant: rec.Grant, Requester: rec.Requester, Peer: rec.Peer, KID: rec.KID,
		SubjectSHA256: rec.SubjectSHA256}
	if e.SubjectSHA256 == "" && rec.Request != nil {
		if t := rec.Request.SubjectToken; t != "" {
			e.SubjectSHA256 = tokenhash.Of(t)
		} else if t := rec.Request.Assertion; t != "" {
			e.SubjectSHA256 = tokenhash.Of(t)
		}
	}
	if rec.Err != nil {
		e.Decision, e.Code, e.Kind, e.KID = Refused, string(rec.Code), errcode.KindOf(rec.Err).String(), ""
		if c, ok := rec.Detail.(*txntoken.Claims); ok && c != nil {
			e.Txn, e.Dialog = c.Txn, c.Dialog() // a subject Txn-Token verified before the refusal (AS A)
		}
		if r := rec.Request; r != nil {
			if e.Dialog == "" {
				e.Dialog = r.Dialog()
			}
			e.Scopes = r.Scope
			for _, a := range []string{r.Audience, r.Resource} {
				if a != "" {
					e.Audience = append(e.Audience, a)
				}
			}
		}
		return e
	}
	var is oauth.Issued
	switch {
	case describe(rec.Response, &is):
	case describe(rec.Detail, &is):
	default:
		if c, ok := rec.Detail.(*txntoken.Claims); ok && c != nil {
			is = oauth.Issued{Token: rec.Token.AccessToken, Txn: c.Txn, Dialog: c.Dialog(), ReqWL: c.ReqWL, Subject: c.Sub,
				Scope: c.Scope, Audience: c.Aud}
		}
	}
	if c, ok := rec.Detail.(*txntoken.Claims); ok && c != nil && is.Txn == "" && is.Dialog == "" {
		// AS A: Detail is the subject Txn-Token; the grant carries neither, and is
		// issued in the subject's transaction and dialog.
		is.Txn, is.Dialog = c.Txn, c.Dialog()
	}
	if is.Token != "" {
		e.IssuedSHA256 = tokenhash.Of(is.Token)
	}
	e.Txn, e.Dialog, e.LinkedFrom, e.ReqWL, e.Subject, e.Audience = is.Txn, is.Dialog, is.LinkedFrom, is.ReqWL, is.Subject, is.Audience
	if is.Scope != "" {
		e.Scopes = splitScope(is.Scope)
	}
	if e.Dialog == "" && rec.Request != nil {
		e.Dialog = rec.Request.Dialog()
	}
	return e
}

func describe(v any, is *oauth.Issued) bool {
	d, ok := v.(oauth.IssuedDescriber)
	if ok {
		d.DescribeIssued(is)
	}
	return ok
}

func splitScope(s string) []string {
	var out []string
	for start, i := 0, 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
