package handoff

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// signRawPayload signs o's payload after edit has changed its decoded form: for
// elements that SignOffer refuses to make, as an attacker or a careless signer would.
func (w *world) signRawPayload(o *Offer, edit func(m map[string]any)) Signed {
	w.t.Helper()
	var payload []byte
	if w.form == COSE {
		b, err := o.MarshalCBOR()
		if err != nil {
			w.t.Fatal(err)
		}
		var m map[string]any
		if err := cbor.Unmarshal(b, &m); err != nil {
			w.t.Fatal(err)
		}
		edit(m)
		if payload, err = cborEnc.Marshal(m); err != nil {
			w.t.Fatal(err)
		}
	} else {
		b, err := o.MarshalJSON()
		if err != nil {
			w.t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			w.t.Fatal(err)
		}
		edit(m)
		if payload, err = json.Marshal(m); err != nil {
			w.t.Fatal(err)
		}
	}
	s, err := signPayload(w.key(o.Iss), w.form, payload)
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

// An opaque bearer token that is base64url text of more than 32 octets, so that it
// passes for a Digest val.
const rawToken = "c2VjcmV0LWFjY2Vzcy10b2tlbi12YWx1ZS0wMTIzNDU2Nzg5YWJjZGVm"

// Section 2: "grant MUST NOT contain the credential itself", enforced where it is
// decidable: a grant must be a digest (a hash alg and a value of its length). At
// signing, SignOffer and Delegator.Offer refuse {"alg":"raw","val":<the token>}; at
// receipt, such an offer is refused at step 5 (reason policy, handoff_grant_mismatch)
// whether or not a credential arrived with it.
func TestSec2_GrantMustBeADigest(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		raw := Digest{Alg: "raw", Val: rawToken}
		if err := raw.Validate(); err != nil {
			t.Fatalf("the fixture must pass the CDDL checks: %v", err)
		}
		short := Digest{Alg: "sha-512", Val: BindGrant([]byte(rawToken)).Val} // 32 octets, not 64
		for name, g := range map[string]Digest{"raw token": raw, "digest of the wrong length": short} {
			o := w.newOffer(planner, coder)
			o.Grant = &g
			_, err := SignOffer(w.key(planner), w.form, o)
			if !hasCause(err, errcode.HandoffGrantMismatch) {
				t.Errorf("SignOffer with %s: %v", name, err)
			}
			dl := w.delegator(planner)
			_, err = dl.Offer(ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d", Grant: &g}})
			if !hasCause(err, errcode.HandoffGrantMismatch) {
				t.Errorf("Delegator.Offer with %s: %v", name, err)
			}
			if n := len(dl.Unresolved()); n != 0 {
				t.Errorf("Delegator.Offer with %s tracks %d hops", name, n)
			}
		}
		// A digest of another hash of the right length is still signed.
		o := w.newOffer(planner, coder)
		o.Grant = &Digest{Alg: "sha-384", Val: base64.RawURLEncoding.EncodeToString(make([]byte, 48))}
		if _, err := SignOffer(w.key(planner), w.form, o); err != nil {
			t.Fatal(err)
		}

		// At receipt: an offer signed with the token as its grant.
		o = w.newOffer(planner, coder)
		s := w.signRawPayload(o, func(m map[string]any) { m["grant"] = map[string]any{"alg": "raw", "val": rawToken} })
		for name, in := range map[string]Inbound{
			"no credential":        {},
			"the token itself":     {Credential: []byte(rawToken)},
			"grant required, none": {},
		} {
			var opts []ReceiverOption
			if name == "grant required, none" {
				opts = append(opts, WithGrantRequired())
			}
			r, _ := w.receiver(coder, opts...)
			in.Handoff = &Handoff{Offer: s}
			d, err := r.Receive(ctx, in)
			if d.Outcome != OutcomeRejected || d.Reason != ReasonPolicy || d.Step != 5 || !hasCause(err, errcode.HandoffGrantMismatch) {
				t.Errorf("%s: %s/%s at step %d: %v", name, d.Outcome, d.Reason, d.Step, err)
			}
		}
		// CheckGrant (the dialog middleware's CheckBinding) says the same.
		wantCode(t, CheckGrant(&Offer{Grant: &raw}, []byte(rawToken)), errcode.HandoffGrantMismatch)
	})
}

// Section 2.2: "The salt MUST NOT appear in the element." A reference with a salt
// member is refused when signing (SignOffer, SignStatus) and at receipt (step 1,
// bad-signature, since the payload breaks the data model).
func TestSec2_2_SaltMemberRefused(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		ref, salt := SaltedRef([]byte("short prompt"), "")
		leaky := ref
		leaky.Extra = map[string]any{"salt": base64.RawURLEncoding.EncodeToString(salt)}
		o := w.newOffer(planner, coder)
		o.Refs = []ContextRef{leaky}
		_, err := SignOffer(w.key(planner), w.form, o)
		wantCode(t, err, errcode.HandoffBadSignature)
		st := &Status{Hop: o.Hop, Offer: SHA256Digest([]byte("x")), Iss: coder, Aud: planner, Iat: o.Iat, State: StateCompleted, Refs: []ContextRef{leaky}}
		_, err = SignStatus(w.key(coder), w.form, st)
		wantCode(t, err, errcode.HandoffBadSignature)

		// At receipt, whatever the reference's kind.
		for _, kind := range []string{KindSaltedDigest, KindDigest} {
			o := w.newOffer(planner, coder)
			r0 := ref
			r0.Kind = kind
			o.Refs = []ContextRef{r0}
			s := w.signRawPayload(o, func(m map[string]any) {
				switch refs := m["refs"].(type) {
				case []any:
					switch x := refs[0].(type) {
					case map[string]any:
						x["salt"] = base64.RawURLEncoding.EncodeToString(salt)
					case map[any]any:
						x["salt"] = salt
					}
				}
			})
			r, recs := w.receiver(coder)
			d, err := r.Receive(ctx, Inbound{Handoff: &Handoff{Offer: s}})
			wantReject(t, d, err, ReasonBadSignature)
			if d.Step != 1 || recs.Len() != 0 {
				t.Fatalf("%s: step %d, %d records", kind, d.Step, recs.Len())
			}
		}
		// The same reference without the salt is signed and accepted.
		o.Refs = []ContextRef{ref}
		r, _ := w.receiver(coder)
		d, err := receive(r, &Handoff{Offer: w.sign(o)})
		wantAccept(t, d, err)
	})
}
