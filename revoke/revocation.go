package revoke

import (
	"time"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Kind is what a revocation names.
type Kind string

// The kinds of revocation.
const (
	// Dialog: the dialog identifier (the Dialog-Context's dlg, the Txn-Token's tctx.dlg).
	Dialog Kind = "dialog"
	// Workload: a workload identifier (a WIT's sub), as a requester, sender or subject.
	Workload Kind = "workload"
	// Txn: one transaction, the Txn-Token's txn.
	Txn Kind = "txn"
)

// Bounds of one revocation: an identifier and a reason are short operator-chosen
// strings, and the list stays small enough to be held by every checker.
const (
	MaxIDLen     = 512
	MaxReasonLen = 512
	// MaxRevocations bounds the live revocations of one store; a Put beyond it is
	// refused (could not be completed) rather than evicting one that is still live.
	MaxRevocations = 100_000
	// MaxLifetime bounds an expiry: a revocation is kept only as long as a token
	// that could be used in what it revokes; a year is far beyond any of them.
	MaxLifetime = 366 * 24 * time.Hour
)

// Revocation is one operator's revocation.
type Revocation struct {
	Kind Kind   `json:"kind"`
	ID   string `json:"id"`
	// Linked, for a dialog, also revokes the dialogs linked from it wherever the link
	// is known (Subject.LinkedFrom).
	Linked bool   `json:"linked,omitempty"`
	Reason string `json:"reason"`
	// By names who revoked it (the administrator's workload or certificate subject).
	By      string    `json:"by,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

// Key is the revocation's identity in a store: its kind and identifier.
func (r Revocation) Key() string { return Key(r.Kind, r.ID) }

// Key is the store key of a revocation of kind k of id.
func Key(k Kind, id string) string { return string(k) + " " + id }

// ValidKind reports whether k is one of the kinds.
func ValidKind(k Kind) bool { return k == Dialog || k == Workload || k == Txn }

// Validate refuses a revocation no store accepts, with a failed errcode.InvalidRequest:
// an unknown kind, an empty or over-long identifier or reason, one that is not UTF-8 or
// holds control characters, linked on anything but a dialog, and an expiry not after
// its creation or more than MaxLifetime after it.
func (r Revocation) Validate() error {
	if !ValidKind(r.Kind) {
		return errcode.New(errcode.InvalidRequest, "revocation kind %q is not dialog, workload or txn", errcode.Cut(string(r.Kind)))
	}
	if err := validText("id", r.ID, MaxIDLen, false); err != nil {
		return err
	}
	if err := validText("reason", r.Reason, MaxReasonLen, true); err != nil {
		return err
	}
	if err := validText("by", r.By, MaxIDLen, true); err != nil {
		return err
	}
	if r.Linked && r.Kind != Dialog {
		return errcode.New(errcode.InvalidRequest, "only a dialog's revocation reaches linked dialogs")
	}
	if r.Created.IsZero() || !r.Expires.After(r.Created) {
		return errcode.New(errcode.InvalidRequest, "a revocation expires after it is made")
	}
	if r.Expires.Sub(r.Created) > MaxLifetime {
		return errcode.New(errcode.InvalidRequest, "a revocation lives at most %v", MaxLifetime)
	}
	return nil
}

func validText(name, s string, limit int, mayBeEmpty bool) error {
	switch {
	case s == "" && !mayBeEmpty:
		return errcode.New(errcode.InvalidRequest, "revocation %s is empty", name)
	case len(s) > limit:
		return errcode.New(errcode.InvalidRequest, "revocation %s is %d octets, limit %d", name, len(s), limit)
	case !utf8.ValidString(s):
		return errcode.New(errcode.InvalidRequest, "revocation %s is not UTF-8", name)
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return errcode.New(errcode.InvalidRequest, "revocation %s holds a control character", name)
		}
	}
	return nil
}

// Live reports whether r is in force at now.
func (r Revocation) Live(now time.Time) bool { return now.Before(r.Expires) }
