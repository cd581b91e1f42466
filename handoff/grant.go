package handoff

import (
	"crypto/subtle"
	"encoding/base64"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// BindGrant returns the grant of an offer (section 5.7): the SHA-256 digest of the
// credential the delegate will present or receive with the hop, over its octets exactly
// as presented (the ASCII octets of a bearer token: the Txn-Token within a trust domain,
// the access token across one). The credential itself never goes into the element
// (sections 2 and 8.9).
func BindGrant(credential []byte) Digest { return SHA256Digest(credential) }

// grantDigestAlgs are the hash functions of the Named Information Hash Algorithm
// registry (RFC 6920) whose output is at least 256 bits, with their output length in
// octets. A grant must name one of them with a value of exactly that length: anything
// else (an alg such as "raw" whose val is the token itself) is not a digest, and
// section 2 says "grant MUST NOT contain the credential itself".
var grantDigestAlgs = map[string]int{
	SHA256: 32, "sha-384": 48, "sha-512": 64,
	"sha3-256": 32, "sha3-384": 48, "sha3-512": 64,
	"blake2s-256": 32, "blake2b-256": 32, "blake2b-512": 64,
	"k12-256": 32,
}

// checkGrantIsDigest decides what section 2 makes decidable about a grant without the
// credential: that it is a digest (a hash alg, and a value of that hash's length), not
// the credential. Errors carry errcode.HandoffGrantMismatch: the grant cannot be
// checked against any credential (reason "policy" in a status, as every grant failure).
func checkGrantIsDigest(g *Digest) error {
	n, ok := grantDigestAlgs[g.Alg]
	if !ok {
		return errcode.New(errcode.HandoffGrantMismatch, "grant alg %q is not a hash function: grant is the digest of the credential, never the credential (section 2)", g.Alg)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(g.Val)
	if err != nil || len(raw) != n {
		return errcode.New(errcode.HandoffGrantMismatch, "grant val is not a %s digest (%d octets, base64url without padding)", g.Alg, n)
	}
	return nil
}

// CheckGrant checks that credential, as it arrived with the hop, is the one the offer's
// grant names. An offer without a grant binds nothing and passes. A grant whose alg is
// not implemented fails (section 2: "treat a check that depends on it as failed"), and
// so does a grant that is not a digest at all.
// Errors carry errcode.HandoffGrantMismatch (reason "policy" in a status).
func CheckGrant(o *Offer, credential []byte) error {
	if o.Grant == nil {
		return nil
	}
	if err := checkGrantIsDigest(o.Grant); err != nil {
		return err
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
