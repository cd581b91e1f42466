package handoff

import (
	"context"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Sections 5.2, 5.3 and 8.4, issue 22: an offer someone else got hold of cannot be
// spent by sending it first. A copy from a sender authenticated as another party than
// offer.iss, or, with no sender authenticated, with a credential other than the one
// grant names, is refused and binds nothing: no record of the pair, no signed status (which would resolve the hop
// for the delegator, section 5.3). The delegator's own copy of the same octets is then
// processed afresh and accepted. Before, the stranger's refusal was recorded as the
// hop's last status and the delegator's send was answered with it.
func TestSec5_2_LeakedOfferSentFirstBindsNothing(t *testing.T) {
	const stranger = "spiffe://x.example/agent/stranger"
	token, otherToken := []byte("the planner's txn-token"), []byte("the stranger's own token")
	grant := BindGrant(token)
	cases := []struct {
		name string
		opts []ReceiverOption
		in   Inbound // the stranger's copy; Handoff is set below
		code errcode.Code
		lost bool // records were lost after the offer was issued (section 8.4)
	}{
		{"authenticated stranger, its own credential", nil,
			Inbound{AuthenticatedSender: stranger, Credential: otherToken, Dialog: "D1"}, errcode.HandoffSenderNotIssuer, false},
		{"authenticated stranger, the planner's credential, another dialog", nil,
			Inbound{AuthenticatedSender: stranger, Credential: token, Dialog: "D2"}, errcode.HandoffSenderNotIssuer, false},
		{"unauthenticated sender, its own credential", nil,
			Inbound{Credential: otherToken, Dialog: "D1"}, errcode.HandoffGrantMismatch, false},
		{"unauthenticated sender, no credential, grant required", []ReceiverOption{WithGrantRequired()},
			Inbound{Dialog: "D1"}, errcode.HandoffGrantMismatch, false},
		{"stranger after the records were lost", []ReceiverOption{WithRecordsLostAt(epoch.Add(time.Hour))},
			Inbound{AuthenticatedSender: stranger, Credential: otherToken, Dialog: "D1"}, errcode.HandoffSenderNotIssuer, true},
	}
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r, recs := w.receiver(coder, tc.opts...)
				o := w.newOffer(planner, coder)
				o.Dialog, o.Grant = "D1", &grant
				h := &Handoff{Offer: w.sign(o)}

				in := tc.in
				in.Handoff = h
				d, err := r.Receive(ctx, in)
				if d.Outcome != OutcomeRejected || d.Reason != ReasonPolicy || errcode.CodeOf(err) != tc.code || errcode.KindOf(err) != errcode.Failed {
					t.Fatalf("stranger's copy: %s/%s %v, want rejected/policy %s", d.Outcome, d.Reason, err, tc.code)
				}
				if d.Reply != nil || d.Withheld {
					t.Fatalf("stranger's copy got a status: %+v", d)
				}
				if _, err := r.Lookup(ctx, planner, o.Hop); errcode.CodeOf(err) != errcode.HandoffOfferMismatch {
					t.Fatalf("the stranger's copy bound the pair: %v", err)
				}
				if n := recs.Len(); n != 0 {
					t.Fatalf("%d records after the stranger's copy", n)
				}

				// The delegator sends the same octets, in its dialog with its credential.
				d, err = r.Receive(ctx, Inbound{Handoff: h, AuthenticatedSender: planner, Credential: token, Dialog: "D1"})
				if tc.lost {
					// After the loss of records the planner's own copy is a replay
					// (section 8.4): decided on the offer, not on the stranger's copy.
					wantReject(t, d, err, ReasonReplay)
					return
				}
				wantAccept(t, d, err)
				if _, err := r.Accept(ctx, planner, o.Hop); err != nil {
					t.Fatal(err)
				}
				// The pair is bound now: the stranger's copy is a retransmission, and
				// its status is not for the stranger (section 8.4).
				in.Handoff = h
				d, _ = r.Receive(ctx, in)
				if d.Outcome != OutcomeRetransmission || d.Reply != nil {
					t.Fatalf("stranger's copy after the planner's: %+v", d)
				}
			})
		}
	})
}

// A copy from the authenticated offer.iss is the delegator's: a credential other than
// the one grant names is its own mistake, and the rejection binds the pair as any at
// step 5 does (the signed "rejected" is the hop's, resent to a retransmission).
func TestSec5_7_GrantMismatchFromTheIssuerIsTheHopsRejection(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		r, _ := w.receiver(coder)
		o := w.newOffer(planner, coder)
		g := BindGrant([]byte("the token"))
		o.Grant = &g
		h := &Handoff{Offer: w.sign(o)}
		in := Inbound{Handoff: h, AuthenticatedSender: planner, Credential: []byte("another token")}
		d, err := r.Receive(ctx, in)
		wantCode(t, err, errcode.HandoffGrantMismatch)
		if vs := w.replyStatus(t, d); d.Step != 5 || vs.State != StateRejected || vs.ReasonValue() != ReasonPolicy {
			t.Fatalf("%+v", d)
		}
		first := *d.Reply
		in.Credential = []byte("the token")
		d, _ = r.Receive(ctx, in)
		if d.Outcome != OutcomeRetransmission || d.Reply == nil || !d.Reply.Equal(first) {
			t.Fatalf("retransmission: %+v", d)
		}
	})
}

// The rejections that are the offer's own bind the pair when the delegator sends it: an offer without the grant the receiver requires is rejected at step 5 with a
// signed status that is the hop's, resent to a retransmission (section 5.3).
func TestSec5_7_GrantMissingFromOfferIsTheHopsRejection(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		r, _ := w.receiver(coder, WithGrantRequired())
		o := w.newOffer(planner, coder)
		h := &Handoff{Offer: w.sign(o)}
		d, err := r.Receive(ctx, Inbound{Handoff: h, AuthenticatedSender: planner, Credential: []byte("t")})
		wantCode(t, err, errcode.HandoffGrantMismatch)
		if vs := w.replyStatus(t, d); d.Step != 5 || d.Reason != ReasonPolicy || vs.State != StateRejected || vs.ReasonValue() != ReasonPolicy {
			t.Fatalf("%+v", d)
		}
		first := *d.Reply
		d, _ = r.Receive(ctx, Inbound{Handoff: h, AuthenticatedSender: planner, Credential: []byte("t")})
		if d.Outcome != OutcomeRetransmission || d.Reply == nil || !d.Reply.Equal(first) {
			t.Fatalf("retransmission: %+v", d)
		}
	})
}
