package handoff

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Section 5.7: grant is the SHA-256 of the credential's octets as presented; the
// delegate checks the credential that arrived with the request against it, and the
// offer's dialog against the Dialog-Context dlg.
func TestSec5_7_GrantBoundToToken(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		txnToken := []byte("eyJhbGciOiJFUzI1NiIsInR5cCI6InR4bnRva2VuK2p3dCJ9.eyJ0Y3R4Ijp7ImRsZyI6IkQxIn19.c2ln")
		o := w.newOffer(planner, coder)
		o.Dialog = "D1"
		g := BindGrant(txnToken)
		o.Grant = &g
		h := &Handoff{Offer: w.sign(o)}

		// The receiver middleware's call: dlg from Dialog-Context, the Txn-Token that
		// came with the request.
		vo, err := VerifyOffer(ctx, w.trust, h.Offer, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckBinding(vo.Offer, txnToken, "D1"); err != nil {
			t.Fatal(err)
		}
		wantCode(t, CheckBinding(vo.Offer, append(bytes.Clone(txnToken), ' '), "D1"), errcode.HandoffGrantMismatch)
		wantCode(t, CheckBinding(vo.Offer, []byte("another token"), "D1"), errcode.HandoffGrantMismatch)
		wantCode(t, CheckBinding(vo.Offer, nil, "D1"), errcode.HandoffGrantMismatch)
		wantCode(t, CheckBinding(vo.Offer, txnToken, "D2"), errcode.HandoffPolicy)
		if ReasonOf(CheckBinding(vo.Offer, []byte("x"), "D1")) != ReasonPolicy {
			t.Fatal("a grant mismatch is reported with reason policy")
		}

		// Through Receive.
		for name, tc := range map[string]struct {
			in   Inbound
			ok   bool
			code errcode.Code
		}{
			"matching":          {Inbound{Credential: txnToken, Dialog: "D1"}, true, ""},
			"other credential":  {Inbound{Credential: []byte("x"), Dialog: "D1"}, false, errcode.HandoffGrantMismatch},
			"other dialog":      {Inbound{Credential: txnToken, Dialog: "D2"}, false, errcode.HandoffPolicy},
			"no credential":     {Inbound{Dialog: "D1"}, true, ""},
			"no dialog carried": {Inbound{Credential: txnToken}, true, ""},
		} {
			r, _ := w.receiver(coder)
			tc.in.Handoff = h
			d, err := r.Receive(ctx, tc.in)
			if tc.ok {
				wantAccept(t, d, err)
				continue
			}
			if d.Reason != ReasonPolicy || d.Step != 5 || !hasCause(err, tc.code) {
				t.Errorf("%s: %+v %v", name, d, err)
			}
		}
		// With the grant required, a missing credential or grant is refused.
		r, _ := w.receiver(coder, WithGrantRequired())
		d, err := r.Receive(ctx, Inbound{Handoff: h})
		if d.Reason != ReasonPolicy || !hasCause(err, errcode.HandoffGrantMismatch) {
			t.Fatalf("%+v %v", d, err)
		}
		r, _ = w.receiver(coder, WithGrantRequired())
		d, err = r.Receive(ctx, Inbound{Handoff: &Handoff{Offer: w.sign(w.newOffer(planner, coder))}, Credential: txnToken})
		if d.Reason != ReasonPolicy || !hasCause(err, errcode.HandoffGrantMismatch) {
			t.Fatalf("%+v %v", d, err)
		}
	})
}

// Section 5.7: obo and chain are not authorization: a matching obo does not stand in
// for the credential.
func TestSec5_7_OboIsNotAuthority(t *testing.T) {
	w := newWorld(t, JWS)
	o := w.newOffer(planner, coder)
	o.Obo = &Principal{Sub: "u-8f2a"}
	g := BindGrant([]byte("the token"))
	o.Grant = &g
	if err := CheckBinding(o, []byte("some other token"), ""); !errcode.Is(err, errcode.HandoffGrantMismatch) {
		t.Fatal(err)
	}
}

// Sections 2 and 8.9: grant never contains the credential; the element carries no
// secret, only its digest.
func TestSec8_9_NoSecretsInTheElement(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		secret := []byte("s3cr3t-access-token-value-0123456789")
		g := BindGrant(secret)
		if bytes.Contains([]byte(g.Val), secret) || len(g.Val) != 43 {
			t.Fatal("grant is not a digest")
		}
		o := w.newOffer(planner, coder)
		o.Grant = &g
		s := w.sign(o)
		for _, enc := range [][]byte{secret, []byte(base64.RawURLEncoding.EncodeToString(secret))} {
			if bytes.Contains(s.Octets, enc) {
				t.Fatal("credential found in the signed offer")
			}
		}
	})
}
