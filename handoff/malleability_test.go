package handoff

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"encoding/base64"
	"math/big"
	"testing"
)

// malleate returns s with its ES256 signature (r, s) replaced by (r, n-s), which is
// valid under the same key and needs no key to compute.
func malleate(t *testing.T, sg Signed) Signed {
	t.Helper()
	n := elliptic.P256().Params().N
	flip := func(sig []byte) []byte {
		if len(sig) != 64 {
			t.Fatalf("ES256 signature of %d octets", len(sig))
		}
		s := new(big.Int).SetBytes(sig[32:])
		out := bytes.Clone(sig)
		new(big.Int).Sub(n, s).FillBytes(out[32:])
		return out
	}
	if sg.Form == JWS {
		raw := string(sg.Octets)
		i := bytes.LastIndexByte(sg.Octets, '.')
		sig, err := base64.RawURLEncoding.DecodeString(raw[i+1:])
		if err != nil {
			t.Fatal(err)
		}
		return Signed{Form: JWS, Octets: []byte(raw[:i+1] + base64.RawURLEncoding.EncodeToString(flip(sig)))}
	}
	// A COSE_Sign1 ends with the signature, a 64-octet byte string.
	b := bytes.Clone(sg.Octets)
	if b[len(b)-66] != 0x58 || b[len(b)-65] != 64 {
		t.Fatal("the COSE_Sign1 does not end with a 64-octet signature")
	}
	copy(b[len(b)-64:], flip(b[len(b)-64:]))
	return Signed{Form: COSE, Octets: b}
}

// Section 5.6 and 5.3: a malleated copy of a remembered offer (same header and payload,
// the other valid ECDSA signature) is not the delegator signing twice. It is answered
// as a retransmission of the remembered offer and flagged as a malleated copy; no
// equivocation is pinned on the delegator and no work is stopped. Signatures with a
// high S are accepted as ever.
func TestSec5_6_MalleatedSignatureIsNotEquivocation(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		var flags []Flag
		r, _ := w.receiver(coder, WithFlags(func(f Flag) { flags = append(flags, f) }))
		o := w.newOffer(planner, coder)
		orig := w.sign(o)
		copy1 := malleate(t, orig)
		if copy1.Equal(orig) || copy1.Digest().Equal(orig.Digest()) {
			t.Fatal("the malleated copy has the same octets")
		}
		// Both signatures verify: whichever of them is high-S is accepted.
		for _, s := range []Signed{orig, copy1} {
			if _, err := VerifyOffer(ctx, w.trust, s, 0); err != nil {
				t.Fatalf("a valid signature is refused: %v", err)
			}
			fresh, _ := w.receiver(coder)
			d, err := receive(fresh, &Handoff{Offer: s})
			wantAccept(t, d, err)
		}

		d, err := receive(r, &Handoff{Offer: orig})
		wantAccept(t, d, err)
		// Undecided: the copy is a retransmission, nothing to send yet.
		d, _ = r.Receive(ctx, Inbound{Handoff: &Handoff{Offer: copy1}, AuthenticatedSender: planner})
		if d.Outcome != OutcomeRetransmission || !d.Malleated || !d.Flagged || d.Reply != nil || d.StopWork || d.Reason == ReasonEquivocation {
			t.Fatalf("undecided: %+v", d)
		}
		if len(flags) != 1 || flags[0].Kind != "malleated-copy" || flags[0].Hop != o.Hop {
			t.Fatalf("flags %+v", flags)
		}
		rec, err := r.Lookup(ctx, planner, o.Hop)
		if err != nil || rec.Equivocated || rec.State != recReceived || !rec.Offer.Equal(orig.Digest()) {
			t.Fatalf("record after the copy: %+v %v", rec, err)
		}
		accepted, err := r.Accept(ctx, planner, o.Hop)
		if err != nil {
			t.Fatal(err)
		}
		// Taken: the copy gets the last status, for the remembered offer, and the work
		// goes on.
		d, _ = r.Receive(ctx, Inbound{Handoff: &Handoff{Offer: copy1}, AuthenticatedSender: planner})
		if d.Outcome != OutcomeRetransmission || !d.Malleated || d.StopWork || d.Reply == nil || !d.Reply.Equal(accepted) {
			t.Fatalf("taken: %+v", d)
		}
		if vs := w.replyStatus(t, d); !vs.Offer.Equal(orig.Digest()) {
			t.Fatal("the reply does not name the remembered offer")
		}
		// An unauthenticated sender of the copy gets nothing (section 8.4).
		d, _ = receive(r, &Handoff{Offer: copy1})
		if d.Outcome != OutcomeRetransmission || d.Reply != nil || !d.Withheld {
			t.Fatalf("unauthenticated: %+v", d)
		}
		done, err := r.Complete(ctx, planner, o.Hop, nil)
		if err != nil {
			t.Fatalf("the work was stopped: %v", err)
		}
		if vs, _ := VerifyStatusSignature(ctx, w.trust, done, 0); vs.ReasonValue() != "" {
			t.Fatalf("completed with reason %q", vs.ReasonValue())
		}
		// A second offer with other content is still equivocation.
		o2 := *o
		o2.Task = String("other work")
		d, _ = receive(r, &Handoff{Offer: w.sign(&o2)})
		if d.Outcome != OutcomeEquivocation || d.Malleated {
			t.Fatalf("other content: %+v", d)
		}
	})
}

// The same, for a malleated copy arriving first at a delegate that took the original
// work: equivocation would have sent StopWork.
func TestSec5_6_MalleatedCopyDoesNotStopWork(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		r, _ := w.receiver(coder)
		o := w.newOffer(planner, coder)
		orig := w.sign(o)
		d, err := receive(r, &Handoff{Offer: orig})
		wantAccept(t, d, err)
		if _, err := r.Accept(ctx, planner, o.Hop); err != nil {
			t.Fatal(err)
		}
		d, err = receive(r, &Handoff{Offer: malleate(t, orig)})
		if d.StopWork || d.Outcome == OutcomeEquivocation || !d.Malleated {
			t.Fatalf("%+v %v", d, err)
		}
		if rec, _ := r.Lookup(ctx, planner, o.Hop); rec.Equivocated {
			t.Fatal("the hop is marked equivocated")
		}
	})
}
