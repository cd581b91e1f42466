package handoff

import (
	"crypto/subtle"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// BindGrant returns the grant of an offer (section 5.7): the SHA-256 digest of the
// credential the delegate will present or receive with the hop, over its octets exactly
// as presented (the ASCII octets of a bearer token: the Txn-Token within a trust domain,
// the access token across one). The credential itself never goes into the element
// (sections 2 and 8.9).
func BindGrant(credential []byte) Digest { return SHA256Digest(credential) }

// CheckGrant checks that credential, as it arrived with the hop, is the one the offer's
// grant names. An offer without a grant binds nothing and passes. A grant whose alg is
// not implemented fails (section 2: "treat a check that depends on it as failed").
// Errors carry errcode.HandoffGrantMismatch (reason "policy" in a status).
func CheckGrant(o *Offer, credential []byte) error {
	if o.Grant == nil {
		return nil
	}
	if credential == nil {
		return errcode.New(errcode.HandoffGrantMismatch, "the offer names a grant and no credential arrived")
	}
	if o.Grant.Alg != SHA256 {
		return errcode.New(errcode.HandoffGrantMismatch, "grant alg %q is not implemented", o.Grant.Alg)
	}
	got := BindGrant(credential).Val
	if subtle.ConstantTimeCompare([]byte(got), []byte(o.Grant.Val)) != 1 {
		return errcode.New(errcode.HandoffGrantMismatch, "the credential that arrived is not the one the grant names")
	}
	return nil
}

// CheckBinding is the receiver check for a handoff that travels with a signed request
// (the dialog middleware calls it): the offer's dialog equals the Dialog-Context dlg
// (reason "policy", errcode.HandoffPolicy), and the credential that arrived with the
// request is the one the offer's grant names (errcode.HandoffGrantMismatch). A request
// without a Dialog-Context passes dlg "".
func CheckBinding(o *Offer, credential []byte, dlg string) error {
	if dlg != "" && o.Dialog != dlg {
		return reject(ReasonPolicy, "offer is for dialog %q, the request's Dialog-Context is %q", o.Dialog, dlg)
	}
	return CheckGrant(o, credential)
}
