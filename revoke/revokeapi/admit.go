package revokeapi

import (
	"context"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/revoke"
)

// Admit is what every request of an authenticated caller passes before anything is
// read or changed, at the API and at the page (package console), sessions already open
// included: the caller must be a configured administrator (not_authorized), and its
// workload must not be under a live revocation (workload_revoked, 403), read through
// the same revoke.Checker the TTS consults. A revoked administrator, whose key may be
// stolen, can then neither list, nor revoke, nor lift its own revocation. A checker that
// cannot read the store fails closed (store_unavailable, 503).
//
// Revoking every administrator therefore locks the API and the page until those
// revocations expire or an operator deletes them in the store (docs/operator.md).
func (h *Handler) Admit(ctx context.Context, admin identifier.ID) error {
	if !h.IsAdmin(admin) {
		return errcode.New(errcode.NotAuthorized, "%s is not an administrator of revocations", admin)
	}
	return h.checker.Check(ctx, revoke.Subject{Workloads: []string{admin.String()}})
}
