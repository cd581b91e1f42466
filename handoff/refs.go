package handoff

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"

	"github.com/veraison/go-cose"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// RefOutcome is the result of checking one reference (section 2.2).
type RefOutcome string

// The four outcomes. A reference is reported verified only after this package (or a
// configured ProofVerifier) compared its digest, and checked its proof where its kind
// has one.
const (
	RefVerified     RefOutcome = "verified"
	RefMismatch     RefOutcome = "mismatch"
	RefUnverifiable RefOutcome = "unverifiable"
	RefNotChecked   RefOutcome = "not-checked"
)

// RefResult is the outcome for one reference of an offer (by index in refs).
type RefResult struct {
	Index   int
	Kind    string
	Outcome RefOutcome
	Detail  string
}

// RefObject is what the delegate holds for a reference: the octets delivered with the
// task or fetched from loc, and for "salted-digest" the salt delivered with them. For
// "scitt-receipt", Octets is the Signed Statement (Appendix A).
type RefObject struct {
	Octets []byte
	Salt   []byte
}

// RefSource gives the object a reference names. It returns (nil, nil) when the object
// cannot be obtained. Fetching loc from an untrusted sender needs the safeguards of
// any untrusted URL (section 8.8); this package never fetches anything itself.
type RefSource interface {
	Object(ctx context.Context, ref ContextRef) (*RefObject, error)
}

// RefSourceFunc adapts a function to RefSource.
type RefSourceFunc func(ctx context.Context, ref ContextRef) (*RefObject, error)

// Object implements RefSource.
func (f RefSourceFunc) Object(ctx context.Context, ref ContextRef) (*RefObject, error) {
	return f(ctx, ref)
}

// ProofVerifier checks the kind-specific part of a reference with keys it trusts: a
// SCITT receipt against a transparency service key (Appendix A), a Learnlog signed head
// against the producer's key (Appendix B), or a kind named by URI. It is called only
// after the parts this package can check have passed.
type ProofVerifier interface {
	VerifyProof(ctx context.Context, ref ContextRef, obj *RefObject) (RefOutcome, error)
}

// RefPolicy says which references a delegate checks before it accepts (step 7 of
// section 5.1) and how.
type RefPolicy struct {
	// Require selects the references that must be verified; nil requires none, and
	// every reference is then reported not checked.
	Require func(ContextRef) bool
	// Source provides the objects. nil: none can be obtained.
	Source RefSource
	// Verifiers, by kind, check proofs. Without one, "scitt-receipt", "learnlog-head"
	// and URI kinds are reported unverifiable.
	Verifiers map[string]ProofVerifier
}

// RequireAllRefs is a RefPolicy.Require that requires every reference.
func RequireAllRefs(ContextRef) bool { return true }

// CheckRef checks one reference against obj (nil when the object could not be
// obtained) and reports one of verified, mismatch or unverifiable.
func CheckRef(ctx context.Context, ref ContextRef, obj *RefObject, verifiers map[string]ProofVerifier) RefResult {
	res := RefResult{Kind: ref.Kind}
	out := func(o RefOutcome, detail string) RefResult {
		res.Outcome, res.Detail = o, detail
		return res
	}
	if err := ref.Validate(); err != nil {
		return out(RefUnverifiable, err.Error())
	}
	switch ref.Kind {
	case KindDigest, KindSaltedDigest:
		if obj == nil {
			return out(RefUnverifiable, "object not available")
		}
		octets := obj.Octets
		if ref.Kind == KindSaltedDigest {
			if len(obj.Salt) < 16 {
				return out(RefUnverifiable, "salt missing or shorter than 16 octets")
			}
			octets = append(append(make([]byte, 0, len(obj.Salt)+len(obj.Octets)), obj.Salt...), obj.Octets...)
		}
		match, ok := digestMatches(ref.Dig, octets)
		switch {
		case !ok:
			return out(RefUnverifiable, "digest alg "+ref.Dig.Alg+" is not implemented")
		case !match:
			return out(RefMismatch, "object does not match dig")
		}
		return out(RefVerified, "")
	case KindSCITTReceipt:
		if _, err := ParseSCITTReceipt(ref); err != nil {
			return out(RefUnverifiable, err.Error())
		}
		if obj == nil {
			return out(RefUnverifiable, "signed statement not available")
		}
		d, err := SCITTStatementDigest(obj.Octets)
		if err != nil {
			return out(RefUnverifiable, err.Error())
		}
		if ref.Dig.Alg != SHA256 {
			return out(RefUnverifiable, "digest alg "+ref.Dig.Alg+" is not implemented")
		}
		if !d.Equal(ref.Dig) {
			return out(RefMismatch, "signed statement does not match dig")
		}
	case KindLearnlogHead:
		if _, err := ParseLearnlogHead(ref); err != nil {
			return out(RefUnverifiable, err.Error())
		}
	}
	v := verifiers[ref.Kind]
	if v == nil {
		return out(RefUnverifiable, "no verifier configured for kind "+ref.Kind)
	}
	o, err := v.VerifyProof(ctx, ref, obj)
	if err != nil {
		return out(RefUnverifiable, err.Error())
	}
	switch o {
	case RefVerified, RefMismatch:
		return out(o, "")
	}
	return out(RefUnverifiable, "verifier could not establish the proof")
}

// checkRefs is step 7: it checks the references policy requires, in order, and fails
// on the first that is not verified.
func checkRefs(ctx context.Context, refs []ContextRef, p RefPolicy) ([]RefResult, error) {
	results := make([]RefResult, len(refs))
	var first error
	for i, ref := range refs {
		results[i] = RefResult{Index: i, Kind: ref.Kind, Outcome: RefNotChecked}
		if p.Require == nil || !p.Require(ref) {
			continue
		}
		var obj *RefObject
		if p.Source != nil {
			o, err := p.Source.Object(ctx, ref)
			if err == nil {
				obj = o
			}
		}
		r := CheckRef(ctx, ref, obj, p.Verifiers)
		r.Index = i
		results[i] = r
		if first == nil {
			switch r.Outcome {
			case RefMismatch:
				first = reject(ReasonRefMismatch, "reference %d (%s): %s", i, ref.Kind, r.Detail)
			case RefUnverifiable:
				first = reject(ReasonUnverifiableRef, "reference %d (%s): %s", i, ref.Kind, r.Detail)
			}
		}
	}
	return results, first
}

// DigestRef returns a "digest" reference to octets.
func DigestRef(octets []byte, loc string) ContextRef {
	r := ContextRef{Kind: KindDigest, Dig: SHA256Digest(octets)}
	if loc != "" {
		r.Loc = &loc
	}
	return r
}

// SaltedRef returns a "salted-digest" reference to octets and the fresh 32-octet salt
// to deliver with them. The salt is never put into the reference (section 2.2: "The
// salt MUST NOT appear in the element").
func SaltedRef(octets []byte, loc string) (ContextRef, []byte) {
	salt := make([]byte, 32)
	_, _ = rand.Read(salt)
	h := sha256.New()
	h.Write(salt)
	h.Write(octets)
	r := ContextRef{Kind: KindSaltedDigest, Dig: Digest{Alg: SHA256, Val: base64.RawURLEncoding.EncodeToString(h.Sum(nil))}}
	if loc != "" {
		r.Loc = &loc
	}
	return r, salt
}

// ParseSCITTReceipt returns the receipt of a "scitt-receipt" reference (Appendix A): a
// byte string in CBOR, base64url text in JSON, holding one well-formed CBOR item.
func ParseSCITTReceipt(ref ContextRef) ([]byte, error) {
	var b []byte
	switch p := ref.Proof.(type) {
	case []byte:
		b = p
	case string:
		var err error
		if b, err = base64.RawURLEncoding.Strict().DecodeString(p); err != nil {
			return nil, errcode.New(errcode.InvalidEncoding, "receipt is not base64url")
		}
	default:
		return nil, errcode.New(errcode.InvalidEncoding, "scitt-receipt proof is not a receipt")
	}
	if len(b) == 0 || cborDec.Wellformed(b) != nil {
		return nil, errcode.New(errcode.InvalidEncoding, "receipt is not CBOR")
	}
	return b, nil
}

// SCITTStatementDigest computes the dig of a "scitt-receipt" reference (Appendix A):
// SHA-256 of the tagged COSE_Sign1 Signed Statement with its unprotected header set to
// the empty map. Receipts in the protected header stay part of the digest.
func SCITTStatementDigest(statement []byte) (Digest, error) {
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(statement); err != nil {
		var u cose.UntaggedSign1Message
		if err2 := u.UnmarshalCBOR(statement); err2 != nil {
			return Digest{}, errcode.Wrap(errcode.InvalidEncoding, err, "signed statement is not a COSE_Sign1")
		}
		msg = cose.Sign1Message(u)
	}
	msg.Headers.RawUnprotected = nil
	msg.Headers.Unprotected = cose.UnprotectedHeader{}
	b, err := msg.MarshalCBOR()
	if err != nil {
		return Digest{}, errcode.Wrap(errcode.InvalidEncoding, err, "re-encoding the signed statement")
	}
	return SHA256Digest(b), nil
}

// ParseLearnlogHead returns the SignedHead of a "learnlog-head" reference (Appendix
// B): a map with text keys.
func ParseLearnlogHead(ref ContextRef) (map[string]any, error) {
	switch p := ref.Proof.(type) {
	case map[string]any:
		return p, nil
	case map[any]any:
		v, err := toJSONValue(p)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidEncoding, err, "learnlog-head proof")
		}
		return v.(map[string]any), nil
	}
	return nil, errcode.New(errcode.InvalidEncoding, "learnlog-head proof is not a SignedHead object")
}
