package dialog

import (
	"context"

	"github.com/dialogtrust/dialogtrust/revoke"
)

// WithRevocations has the receiver refuse, after every check of section 12 has passed
// and before anything reads the body for the application (authorization, handoffs) or
// records the dialog, a request in a dialog, from a workload, or with a Txn-Token's
// txn that the trust domain's operator revoked (issue 26): dialog_revoked,
// workload_revoked, txn_revoked (403, failed), or store_unavailable (503) when c's
// snapshot is past its bound and the store cannot be read (fail closed).
//
// The workloads checked are the sender, the dialog's initiator, and the Txn-Token's
// subject and requesters (req_wl and its call chain). A receiver knows no dialog the
// request's was linked from (section 11), so a revocation "with linked dialogs" reaches
// here only the dialogs it names.
func WithRevocations(c *revoke.Checker) ReceiverOption {
	return func(r *Receiver) { r.revocations = c }
}

// checkRevoked is WithRevocations's step, on what was verified.
func (rc *Receiver) checkRevoked(ctx context.Context, v *Verified) error {
	var sub revoke.Subject
	var wl [8]string
	sub.Workloads = append(wl[:0], v.Sender.String())
	if v.Context != nil {
		sub.Dialog = v.Context.DLG()
		sub.Workloads = append(sub.Workloads, v.Context.Initiator().String())
	}
	if v.Txn != nil {
		sub.Txn = v.Txn.Txn
		sub.Workloads = append(sub.Workloads, v.Txn.Sub)
		sub.Workloads = append(sub.Workloads, v.Txn.CallChain()...)
	}
	return rc.revocations.Check(ctx, sub)
}
