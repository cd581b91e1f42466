package handoff

import (
	"context"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// pair is a delegator (planner) and a delegate (coder) in one world.
type pair struct {
	w   *world
	dl  *Delegator
	r   *Receiver
	ctx context.Context
}

func newPair(t *testing.T, w *world, opts ...ReceiverOption) *pair {
	r, _ := w.receiver(coder, opts...)
	return &pair{w: w, dl: w.delegator(planner), r: r, ctx: context.Background()}
}

// offer makes an offer from the planner and has the coder receive it.
func (p *pair) offer(t *testing.T, work string) (*Handoff, string) {
	t.Helper()
	h, err := p.dl.Offer(p.ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "ctx-7c1e"}, Work: work})
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.r.Receive(p.ctx, Inbound{Handoff: h})
	wantAccept(t, d, err)
	return h, d.Offer.Hop
}

func (p *pair) deliver(t *testing.T, s Signed) *StatusUpdate {
	t.Helper()
	u, err := p.dl.HandleStatus(p.ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Section 4: a delegate sends at most one of accepted and rejected, at most one of
// completed and failed, and never rejected for a hop it has taken.
func TestSec4_DelegateSendsEachPairOnce(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		_, hop := p.offer(t, "")
		if _, err := p.r.Accept(p.ctx, planner, hop); err != nil {
			t.Fatal(err)
		}
		_, err := p.r.Accept(p.ctx, planner, hop)
		wantCode(t, err, errcode.HandoffInvalidTransition)
		_, err = p.r.Reject(p.ctx, planner, hop, ReasonPolicy, "")
		wantCode(t, err, errcode.HandoffInvalidTransition)
		if _, err := p.r.Complete(p.ctx, planner, hop, nil); err != nil {
			t.Fatal(err)
		}
		_, err = p.r.Fail(p.ctx, planner, hop, Failure{})
		wantCode(t, err, errcode.HandoffInvalidTransition)
		_, err = p.r.Complete(p.ctx, planner, hop, nil)
		wantCode(t, err, errcode.HandoffInvalidTransition)

		_, hop2 := p.offer(t, "")
		if _, err := p.r.Reject(p.ctx, planner, hop2, ReasonPolicy, "busy"); err != nil {
			t.Fatal(err)
		}
		_, err = p.r.Accept(p.ctx, planner, hop2)
		wantCode(t, err, errcode.HandoffInvalidTransition)
		_, err = p.r.Complete(p.ctx, planner, hop2, nil)
		wantCode(t, err, errcode.HandoffInvalidTransition)
		// "stale" and "replay" are only for hops the delegate does not remember.
		_, hop3 := p.offer(t, "")
		for _, r := range []Reason{ReasonStale, ReasonReplay, ""} {
			_, err = p.r.Reject(p.ctx, planner, hop3, r, "")
			wantCode(t, err, errcode.InvalidRequest)
		}
	})
}

// Section 4: completed or failed may come without accepted; the delegator then treats
// accepted as implied, and a late accepted changes nothing.
func TestSec4_OutcomeWithoutAccepted(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		_, hop := p.offer(t, "")
		done, err := p.r.Complete(p.ctx, planner, hop, []ContextRef{DigestRef([]byte("result"), "")})
		if err != nil {
			t.Fatal(err)
		}
		u := p.deliver(t, done)
		if u.Hop.State != StateCompleted || !u.Hop.Resolved || len(u.Hop.Refs) != 1 {
			t.Fatalf("%+v", u.Hop)
		}
		// An "accepted" for the same hop arriving late (a delegate that sent one
		// before, delivered out of order) is no conflict.
		st := &Status{Hop: hop, Offer: u.Hop.Offer, Iss: coder, Aud: planner, Iat: w.clock.Now().Unix(), State: StateAccepted}
		u = p.deliver(t, w.signStatus(st))
		if u.Conflict || u.Hop.State != StateCompleted {
			t.Fatalf("late accepted: %+v", u)
		}
	})
}

// Section 4: expiry is local and provisional: an offer that reaches exp with no status
// is "expired" at the delegator, a later verified status replaces it, and expiry is
// neither "failed" nor resolved (section 5.3).
func TestSec4_ExpiredIsLocalAndProvisional(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		_, hop := p.offer(t, "work-1")
		hs, _ := p.dl.State(hop)
		if hs.State != StateOffered {
			t.Fatal(hs.State)
		}
		w.clock.Advance(DefaultOfferTTL)
		hs, _ = p.dl.State(hop)
		if hs.State != StateExpired || hs.Resolved {
			t.Fatalf("after exp: %+v", hs)
		}
		if _, ok := A2ATaskState(hs.State); ok {
			t.Fatal("expired has an A2A state")
		}
		// A missing status is not "failed": no new offer for the same work.
		_, err := p.dl.Offer(p.ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}, Work: "work-1"})
		wantCode(t, err, errcode.HandoffUnresolvedWork)
		// The status that was lost arrives after all: it counts.
		acc, err := p.r.Accept(p.ctx, planner, hop)
		if err != nil {
			t.Fatal(err)
		}
		u := p.deliver(t, acc)
		if u.Hop.State != StateAccepted {
			t.Fatalf("late accepted: %+v", u.Hop)
		}
	})
}

// Section 5.3: while a hop is unresolved the delegator issues no new offer for the same
// work, unless the work is safe to repeat; a hop is resolved by a verified completed or
// failed, a rejected other than stale or replay, or an observation of no effect.
func TestSec5_3_NoNewOfferForUnresolvedWork(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		again := func() error {
			_, err := p.dl.Offer(p.ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}, Work: "deploy"})
			return err
		}
		_, hop := p.offer(t, "deploy")
		wantCode(t, again(), errcode.HandoffUnresolvedWork)
		safe, err := p.dl.Offer(p.ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}, Work: "deploy", SafeToRepeat: true})
		if err != nil {
			t.Fatalf("safe to repeat: %v", err)
		}
		// A stale rejection leaves it unresolved.
		hs, _ := p.dl.State(hop)
		stale := ReasonStale
		u := p.deliver(t, w.signStatus(&Status{Hop: hop, Offer: hs.Offer, Iss: coder, Aud: planner, Iat: 1, State: StateRejected, Reason: &stale}))
		if !u.Ignored || u.Hop.Resolved || u.Hop.State != StateOffered || !u.Hop.DelegateForgot {
			t.Fatalf("stale: %+v", u)
		}
		wantCode(t, again(), errcode.HandoffUnresolvedWork)
		// Canceled: unresolved still (the delegate may have done the work).
		if _, err := p.dl.Cancel(p.ctx, hop); err != nil {
			t.Fatal(err)
		}
		wantCode(t, again(), errcode.HandoffUnresolvedWork)
		if len(p.dl.Unresolved()) == 0 {
			t.Fatal("no unresolved hops listed")
		}
		// An authoritative observation that the work did not take effect resolves it.
		if err := p.dl.ObservedNoEffect(hop); err != nil {
			t.Fatal(err)
		}
		// (the safe-to-repeat hop is unresolved work too)
		wantCode(t, again(), errcode.HandoffUnresolvedWork)
		if err := p.dl.ObservedNoEffect(mustHop(t, w, safe)); err != nil {
			t.Fatal(err)
		}
		if err := again(); err != nil {
			t.Fatalf("after observation: %v", err)
		}
		// Failed resolves.
		p2 := newPair(t, w)
		_, hop2 := p2.offer(t, "build")
		f, err := p2.r.Fail(p2.ctx, planner, hop2, Failure{Detail: "no effect"})
		if err != nil {
			t.Fatal(err)
		}
		if u := p2.deliver(t, f); !u.Hop.Resolved {
			t.Fatal("failed did not resolve")
		}
		if _, err := p2.dl.Offer(p2.ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}, Work: "build"}); err != nil {
			t.Fatal(err)
		}
		// Forget keeps unresolved hops.
		wantCode(t, p.dl.Forget(firstUnresolved(p.dl)), errcode.HandoffUnresolvedWork)
		if err := p2.dl.Forget(hop2); err != nil {
			t.Fatal(err)
		}
	})
}

func firstUnresolved(d *Delegator) string { return d.Unresolved()[0].Hop }

// Section 5.3 and 5.6: a retransmission is the identical octets; the same hop is never
// signed twice.
func TestSec5_6_DelegatorRetransmitsIdenticalOctets(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		dl := w.delegator(planner)
		h, err := dl.Offer(context.Background(), OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}})
		if err != nil {
			t.Fatal(err)
		}
		hop := mustHop(t, w, h)
		again, err := dl.Retransmit(hop)
		if err != nil || !again.Offer.Equal(h.Offer) {
			t.Fatal("retransmission differs")
		}
		_, err = dl.Offer(context.Background(), OfferRequest{Offer: Offer{Hop: hop, Aud: coder, Dialog: "d"}})
		wantCode(t, err, errcode.InvalidRequest)
	})
}

// Section 5.4: "failed" lists in refs any part of the work that took effect; the hop
// stays "accepted" while the outcome is unknown, and its record is kept.
func TestSec5_4_KnowingTheOutcome(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		_, hop := p.offer(t, "")
		_, err := p.r.Fail(p.ctx, planner, hop, Failure{Partial: true})
		wantCode(t, err, errcode.InvalidRequest)
		if _, err := p.r.Accept(p.ctx, planner, hop); err != nil {
			t.Fatal(err)
		}
		// Outcome unknown for a long time: the record stays, "accepted".
		w.clock.Advance(365 * 24 * time.Hour)
		rec, err := p.r.Lookup(p.ctx, planner, hop)
		if err != nil || rec.State != string(StateAccepted) {
			t.Fatalf("record %+v %v", rec, err)
		}
		effect := DigestRef([]byte("the other system's record of request 1"), "")
		f, err := p.r.Fail(p.ctx, planner, hop, Failure{Partial: true, Effects: []ContextRef{effect}, Reason: ReasonPolicy})
		if err != nil {
			t.Fatal(err)
		}
		vs, _ := VerifyStatusSignature(p.ctx, w.trust, f, 0)
		if vs.State != StateFailed || len(vs.Refs) != 1 || !vs.Refs[0].Dig.Equal(effect.Dig) {
			t.Fatalf("%+v", vs.Status)
		}
		// After a terminal status the record lasts for the retention period.
		w.clock.Advance(DefaultRetention - time.Second)
		if _, err := p.r.Lookup(p.ctx, planner, hop); err != nil {
			t.Fatal("forgotten within the retention period")
		}
		w.clock.Advance(time.Second)
		if _, err := p.r.Lookup(p.ctx, planner, hop); err == nil {
			t.Fatal("kept past the retention period")
		}
	})
}

// Section 5.6: an equivocating second offer before exp, at a delegate that has neither
// taken nor answered the first: never accepted, no status for it, "rejected" with
// reason "equivocation" for the first, and the conflict flagged.
func TestSec5_6_EquivocationBeforeExp(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		var flags []Flag
		r, _ := w.receiver(coder, WithFlags(func(f Flag) { flags = append(flags, f) }))
		o, first := w.acceptedOffer(t, r)
		o2 := *o
		o2.Task = String("something else")
		second := &Handoff{Offer: w.sign(&o2)}
		d, err := receive(r, second)
		if d.Outcome != OutcomeEquivocation || d.Reason != ReasonEquivocation || !d.Flagged || len(flags) != 1 {
			t.Fatalf("%+v %v", d, err)
		}
		wantCode(t, err, errcode.HandoffEquivocation)
		vs := w.replyStatus(t, d)
		if vs.State != StateRejected || vs.ReasonValue() != ReasonEquivocation || !vs.Offer.Equal(first.Offer.Digest()) {
			t.Fatalf("the status must be for the first offer: %+v", vs.Status)
		}
		_, err = r.Accept(context.Background(), planner, o.Hop)
		wantCode(t, err, errcode.HandoffInvalidTransition)
		// Once the first is rejected, no further status for it.
		d, _ = receive(r, second)
		if d.Outcome != OutcomeEquivocation || d.Reply != nil {
			t.Fatalf("third copy: %+v", d)
		}
	})
}

// Section 5.6: equivocation after exp, at a delegate that has taken the work: still
// equivocation (step 3 is skipped for a remembered pair), no status now, stop the
// work, and once the outcome is known "failed" with reason "equivocation".
func TestSec5_6_EquivocationAfterExp(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		r, _ := w.receiver(coder)
		o, _ := w.acceptedOffer(t, r)
		if _, err := r.Accept(ctx, planner, o.Hop); err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(10 * time.Minute)
		o2 := *o
		o2.Dialog = "ctx-other"
		d, err := receive(r, &Handoff{Offer: w.sign(&o2)})
		if d.Outcome != OutcomeEquivocation || d.Reply != nil || !d.StopWork {
			t.Fatalf("%+v %v", d, err)
		}
		f, err := r.Fail(ctx, planner, o.Hop, Failure{})
		if err != nil {
			t.Fatal(err)
		}
		vs, _ := VerifyStatusSignature(ctx, w.trust, f, 0)
		if vs.ReasonValue() != ReasonEquivocation {
			t.Fatalf("reason %q", vs.ReasonValue())
		}
		// After a terminal status: no other status for the first offer.
		d, _ = receive(r, &Handoff{Offer: w.sign(&o2)})
		if d.Outcome != OutcomeEquivocation || d.Reply != nil || d.StopWork {
			t.Fatalf("%+v", d)
		}
		// A fresh receiver that never saw the first: the second, expired, is stale.
		r2, _ := w.receiver(coder)
		d, err = receive(r2, &Handoff{Offer: w.sign(&o2)})
		wantReject(t, d, err, ReasonStale)
	})
}

// Section 5.6: the receiver of a status checks who sent it, to whom, and for which
// offer.
func TestSec5_6_StatusFromTheWrongParty(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		h, hop := p.offer(t, "")
		good := Status{Hop: hop, Offer: h.Offer.Digest(), Iss: coder, Aud: planner, Iat: w.clock.Now().Unix(), State: StateCompleted}
		for name, tc := range map[string]struct {
			mod  func(s *Status)
			code errcode.Code
		}{
			"from a third agent":     {func(s *Status) { s.Iss = tester }, errcode.IssuerMismatch},
			"accepted from the iss":  {func(s *Status) { s.Iss = planner; s.Aud = coder }, errcode.IssuerMismatch},
			"to another agent":       {func(s *Status) { s.Aud = tester }, errcode.HandoffWrongAudience},
			"for another offer":      {func(s *Status) { s.Offer = SHA256Digest([]byte("x")) }, errcode.HandoffOfferMismatch},
			"for an unknown hop":     {func(s *Status) { s.Hop = NewHopID() }, errcode.HandoffOfferMismatch},
			"canceled from delegate": {func(s *Status) { s.State = StateCanceled }, errcode.IssuerMismatch},
		} {
			st := good
			tc.mod(&st)
			_, err := p.dl.HandleStatus(p.ctx, w.signStatus(&st))
			if !hasCause(err, tc.code) {
				t.Errorf("%s: %v, want %s", name, err, tc.code)
			}
		}
		hs, _ := p.dl.State(hop)
		if hs.State != StateOffered {
			t.Fatalf("a refused status changed the hop: %s", hs.State)
		}
		// A cancel for the delegate from someone other than the offer's iss.
		cancel := &Status{Hop: hop, Offer: h.Offer.Digest(), Iss: tester, Aud: coder, Iat: 1, State: StateCanceled}
		_, err := p.r.HandleCancel(p.ctx, w.signStatus(cancel))
		wantCode(t, err, errcode.HandoffOfferMismatch)
		cancel = &Status{Hop: hop, Offer: SHA256Digest([]byte("x")), Iss: planner, Aud: coder, Iat: 1, State: StateCanceled}
		_, err = p.r.HandleCancel(p.ctx, w.signStatus(cancel))
		wantCode(t, err, errcode.HandoffOfferMismatch)
		cancel = &Status{Hop: hop, Offer: h.Offer.Digest(), Iss: planner, Aud: tester, Iat: 1, State: StateCanceled}
		_, err = p.r.HandleCancel(p.ctx, w.signStatus(cancel))
		wantCode(t, err, errcode.HandoffWrongAudience)
	})
}

// Section 5.6: conflicting statuses: the first verified stands and the conflict is
// flagged. A stale or replay rejection is never a conflict and never sets the state,
// in either order.
func TestSec5_6_ConflictingStatuses(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		var flags []Flag
		dl, _ := NewDelegator(DelegatorConfig{Self: planner, Key: w.key(planner), Trust: w.trust, Form: w.form, Now: w.clock.Now,
			Flags: func(f Flag) { flags = append(flags, f) }})
		h, _ := dl.Offer(context.Background(), OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}})
		hop := mustHop(t, w, h)
		mk := func(state State, reason Reason) Signed {
			st := &Status{Hop: hop, Offer: h.Offer.Digest(), Iss: coder, Aud: planner, Iat: w.clock.Now().Unix(), State: state}
			if reason != "" {
				st.Reason = &reason
			}
			return w.signStatus(st)
		}
		apply := func(s Signed) *StatusUpdate {
			u, err := dl.HandleStatus(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		if u := apply(mk(StateRejected, ReasonReplay)); !u.Ignored || u.Hop.State != StateOffered {
			t.Fatalf("replay rejection set state: %+v", u.Hop)
		}
		apply(mk(StateCompleted, ""))
		u := apply(mk(StateFailed, ReasonPolicy))
		if !u.Conflict || u.Hop.State != StateCompleted || !u.Hop.Conflict || len(flags) != 1 {
			t.Fatalf("completed then failed: %+v", u)
		}
		u = apply(mk(StateRejected, ReasonPolicy))
		if !u.Conflict || u.Hop.State != StateCompleted {
			t.Fatalf("rejected after completed: %+v", u)
		}
		u = apply(mk(StateRejected, ReasonStale))
		if u.Conflict || !u.Ignored || u.Hop.State != StateCompleted {
			t.Fatalf("stale after completed: %+v", u)
		}
		// rejected first, then accepted: at most one of the two.
		h2, _ := dl.Offer(context.Background(), OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}})
		hop = mustHop(t, w, h2)
		h = h2
		apply(mk(StateRejected, ReasonPolicy))
		if u := apply(mk(StateAccepted, "")); !u.Conflict || u.Hop.State != StateRejected || !u.Hop.Resolved {
			t.Fatalf("accepted after rejected: %+v", u.Hop)
		}
	})
}

// Section 5.6 and the acceptance test "a stale rejection that must not set state": a
// delegate that does not remember a hop says "stale"; that rejection records nothing at
// the delegate, and changes nothing at the delegator, before or after other statuses.
func TestSec5_6_StaleRejectionMustNotSetState(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		h, err := p.dl.Offer(p.ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}, Work: "w"})
		if err != nil {
			t.Fatal(err)
		}
		// The offer reaches the coder only after exp.
		w.clock.Advance(DefaultOfferTTL + time.Second)
		_, recs := w.receiver(coder)
		r := NewReceiver(coder, w.trust, recs, WithClock(w.clock.Now), WithStatusKey(w.key(coder)))
		d, err := receive(r, h)
		wantReject(t, d, err, ReasonStale)
		if recs.Len() != 0 {
			t.Fatal("the delegate recorded a stale offer")
		}
		u := p.deliver(t, *d.Reply)
		if !u.Ignored || u.Changed || u.Hop.Resolved || u.Hop.State != StateExpired {
			t.Fatalf("delegator after stale: %+v", u.Hop)
		}
		// The hop stays unresolved: no new offer for the work.
		_, err = p.dl.Offer(p.ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}, Work: "w"})
		wantCode(t, err, errcode.HandoffUnresolvedWork)
	})
}

// Section 4 and 5.6: cancel, propagation down the chain, and a cancel crossing a
// completion.
func TestSec4_CancelPropagates(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		// planner -> coder -> tester, and coder -> user (fan-out, same prev).
		pl := w.delegator(planner)
		co := w.delegator(coder)
		rc, _ := w.receiver(coder)
		rt, _ := w.receiver(tester)
		ru, _ := w.receiver(user)
		h1, _ := pl.Offer(ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}})
		d, err := rc.Receive(ctx, Inbound{Handoff: h1})
		wantAccept(t, d, err)
		hop1 := d.Offer.Hop
		if _, err := rc.Accept(ctx, planner, hop1); err != nil {
			t.Fatal(err)
		}
		h2, _ := co.Offer(ctx, OfferRequest{Offer: Offer{Aud: tester, Dialog: "d"}, From: h1})
		h3, _ := co.Offer(ctx, OfferRequest{Offer: Offer{Aud: user, Dialog: "d"}, From: h1})
		other, _ := co.Offer(ctx, OfferRequest{Offer: Offer{Aud: tester, Dialog: "d"}}) // not under h1
		for _, x := range []struct {
			r *Receiver
			h *Handoff
		}{{rt, h2}, {ru, h3}} {
			d, err := x.r.Receive(ctx, Inbound{Handoff: x.h})
			wantAccept(t, d, err)
		}
		// The planner cancels; the coder checks it and propagates.
		cancel, err := pl.Cancel(ctx, hop1)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := pl.Cancel(ctx, hop1)
		if !again.Equal(cancel) {
			t.Fatal("second cancel differs")
		}
		cr, err := rc.HandleCancel(ctx, cancel)
		if err != nil || !cr.StopWork || !cr.Offer.Equal(h1.Offer.Digest()) {
			t.Fatalf("%+v %v", cr, err)
		}
		down, err := co.PropagateCancel(ctx, cr.Offer)
		if err != nil || len(down) != 2 {
			t.Fatalf("propagated %d: %v", len(down), err)
		}
		for _, c := range down {
			r := map[string]*Receiver{tester: rt, user: ru}[c.Aud]
			if res, err := r.HandleCancel(ctx, c.Status); err != nil || res.AlreadyTerminal {
				t.Fatalf("downstream cancel: %+v %v", res, err)
			}
		}
		if hs, _ := co.State(mustHop(t, w, other)); hs.State != StateOffered {
			t.Fatal("a hop under another offer was canceled")
		}
		// Canceled is unresolved at the planner; the coder's late "completed" still
		// resolves it, and the planner keeps "canceled" as the state.
		if hs, _ := pl.State(hop1); hs.State != StateCanceled || hs.Resolved {
			t.Fatalf("%+v", hs)
		}
		done, err := rc.Complete(ctx, planner, hop1, nil)
		if err != nil {
			t.Fatal(err)
		}
		u, err := pl.HandleStatus(ctx, done)
		if err != nil || !u.Hop.Resolved || u.Hop.State != StateCanceled || u.Hop.Outcome != StateCompleted {
			t.Fatalf("%+v %v", u, err)
		}
		// At the tester: cancel after its own completion keeps the completion.
		p := newPair(t, w)
		h, hop := p.offer(t, "")
		if _, err := p.r.Complete(ctx, planner, hop, nil); err != nil {
			t.Fatal(err)
		}
		c2, _ := p.dl.Cancel(ctx, hop)
		res, err := p.r.HandleCancel(ctx, c2)
		if err != nil || !res.AlreadyTerminal {
			t.Fatalf("%+v %v", res, err)
		}
		_ = h
		// The delegator cannot cancel a resolved hop.
		rec, _ := p.r.Lookup(ctx, planner, hop)
		u2 := p.deliver(t, *rec.LastStatus)
		if !u2.Hop.Resolved && u2.Hop.State != StateCanceled {
			t.Fatal(u2.Hop)
		}
	})
}

// Table 1 of section 4.
func TestSec4_A2ATaskStateMapping(t *testing.T) {
	want := map[State]string{
		StateOffered: "TASK_STATE_SUBMITTED", StateAccepted: "TASK_STATE_WORKING", StateRejected: "TASK_STATE_REJECTED",
		StateCompleted: "TASK_STATE_COMPLETED", StateFailed: "TASK_STATE_FAILED", StateCanceled: "TASK_STATE_CANCELED",
	}
	checkTaskStates(t, want, A2ATaskState, A2ATaskInputRequired, A2ATaskAuthRequired, "TASK_STATE_UNKNOWN")
}

// checkTaskStates checks Table 1 in one A2A spelling: toTask maps each state of want to
// its task state and StateForA2ATask maps it back, while none of the task states in
// unmapped changes the hop's state.
func checkTaskStates(t *testing.T, want map[State]string, toTask func(State) (string, bool), unmapped ...string) {
	t.Helper()
	for s, task := range want {
		if got, ok := toTask(s); !ok || got != task {
			t.Errorf("%s -> %q", s, got)
		}
		if back, ok := StateForA2ATask(task); !ok || back != s {
			t.Errorf("%s -> %q", task, back)
		}
	}
	for _, task := range unmapped {
		if _, ok := StateForA2ATask(task); ok {
			t.Errorf("%s changes the hop's state", task)
		}
	}
}

// Section 2: reason values other than the listed ones "SHOULD be avoided until a
// registry exists"; this package never produces them. Reject and Fail refuse an
// unlisted reason (invalid_request) and the hop stays as it was.
func TestSec2_UnlistedReasonsRefused(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		_, hop := p.offer(t, "")
		_, err := p.r.Reject(p.ctx, planner, hop, Reason("busy"), "")
		wantCode(t, err, errcode.InvalidRequest)
		if rec, _ := p.r.Lookup(p.ctx, planner, hop); rec.State != recReceived || rec.LastStatus != nil {
			t.Fatalf("a refused reject changed the hop: %+v", rec)
		}
		if _, err := p.r.Accept(p.ctx, planner, hop); err != nil {
			t.Fatal(err)
		}
		_, err = p.r.Fail(p.ctx, planner, hop, Failure{Reason: Reason("out-of-memory")})
		wantCode(t, err, errcode.InvalidRequest)
		if rec, _ := p.r.Lookup(p.ctx, planner, hop); rec.State != string(StateAccepted) {
			t.Fatalf("a refused fail changed the hop: %+v", rec)
		}
		f, err := p.r.Fail(p.ctx, planner, hop, Failure{Reason: ReasonPolicy})
		if err != nil {
			t.Fatal(err)
		}
		if u := p.deliver(t, f); u.Hop.State != StateFailed || u.Hop.Reason != ReasonPolicy {
			t.Fatalf("%+v", u.Hop)
		}
		// No reason at all is still allowed for "failed".
		_, hop2 := p.offer(t, "")
		if _, err := p.r.Fail(p.ctx, planner, hop2, Failure{}); err != nil {
			t.Fatal(err)
		}
	})
}

// Section 5.6: a "canceled" is checked like any status: its signature with a key the
// trust configuration binds to status.iss. A forged cancel would stop work; it is
// refused and the hop is unchanged.
func TestSec5_6_ForgedCancelRefused(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		h, hop := p.offer(t, "")
		if _, err := p.r.Accept(p.ctx, planner, hop); err != nil {
			t.Fatal(err)
		}
		cancel := &Status{Hop: hop, Offer: h.Offer.Digest(), Iss: planner, Aud: coder, Iat: w.clock.Now().Unix(), State: StateCanceled}
		genuine := w.signStatus(cancel)
		forged := map[string]struct {
			s    Signed
			code errcode.Code
		}{
			"signature altered":        {flipSignature(genuine), errcode.HandoffBadSignature},
			"signed by an unknown key": {signStatusWith(t, w, w.untrustedKey(), cancel), errcode.HandoffUntrustedKey},
			"signed by another agent":  {signStatusWith(t, w, w.key(tester), cancel), errcode.HandoffUntrustedKey},
		}
		for name, f := range forged {
			res, err := p.r.HandleCancel(p.ctx, f.s)
			if res != nil || !hasCause(err, f.code) {
				t.Errorf("%s: %+v %v, want %s", name, res, err, f.code)
			}
			if rec, _ := p.r.Lookup(p.ctx, planner, hop); rec.State != string(StateAccepted) {
				t.Fatalf("%s: a forged cancel changed the hop to %s", name, rec.State)
			}
		}
		res, err := p.r.HandleCancel(p.ctx, genuine)
		if err != nil || !res.StopWork {
			t.Fatalf("genuine cancel: %+v %v", res, err)
		}
	})
}

func signStatusWith(t *testing.T, w *world, k *keys.PrivateKey, st *Status) Signed {
	t.Helper()
	s, err := SignStatus(k, w.form, st)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Section 4: "A delegate that receives a valid "canceled" SHOULD send "canceled" for
// each offer it issued whose prev equals this hop's offer digest. Each receiver of such
// a cancel does the same, so the cancel follows the hops down." With
// WithCancelPropagation, HandleCancel does it through the configured sender, down two
// levels: planner -> coder -> tester -> user, and coder -> user (fan-out).
func TestSec4_CancelFollowsTheHopsDown(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		pl, co, te := w.delegator(planner), w.delegator(coder), w.delegator(tester)
		receivers := map[string]*Receiver{}
		var sent []Canceled
		send := func(_ context.Context, c Canceled) error {
			sent = append(sent, c)
			_, err := receivers[c.Aud].HandleCancel(ctx, c.Status)
			return err
		}
		receivers[coder], _ = w.receiver(coder, WithCancelPropagation(co, send))
		receivers[tester], _ = w.receiver(tester, WithCancelPropagation(te, send))
		receivers[user], _ = w.receiver(user)
		deliver := func(h *Handoff, to string) string {
			t.Helper()
			d, err := receivers[to].Receive(ctx, Inbound{Handoff: h})
			wantAccept(t, d, err)
			if _, err := receivers[to].Accept(ctx, d.Offer.Iss, d.Offer.Hop); err != nil {
				t.Fatal(err)
			}
			return d.Offer.Hop
		}
		mustOffer := func(d *Delegator, aud string, from *Handoff) *Handoff {
			t.Helper()
			h, err := d.Offer(ctx, OfferRequest{Offer: Offer{Aud: aud, Dialog: "d"}, From: from})
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		h1 := mustOffer(pl, coder, nil)
		hop1 := deliver(h1, coder)
		h2 := mustOffer(co, tester, h1)
		hop2 := deliver(h2, tester)
		h3 := mustOffer(te, user, h2)
		hop3 := deliver(h3, user)
		h4 := mustOffer(co, user, h1)
		hop4 := deliver(h4, user)
		other := mustOffer(co, tester, nil) // under no canceled offer
		deliver(other, tester)

		cancel, err := pl.Cancel(ctx, hop1)
		if err != nil {
			t.Fatal(err)
		}
		res, err := receivers[coder].HandleCancel(ctx, cancel)
		if err != nil || res.PropagateErr != nil || !res.StopWork || len(res.Propagated) != 2 {
			t.Fatalf("%+v %v", res, err)
		}
		if len(sent) != 3 {
			t.Fatalf("%d cancels sent, want 3 (two from the coder, one from the tester)", len(sent))
		}
		for _, x := range []struct{ at, iss, hop string }{{tester, coder, hop2}, {user, tester, hop3}, {user, coder, hop4}} {
			rec, err := receivers[x.at].Lookup(ctx, x.iss, x.hop)
			if err != nil || rec.State != string(StateCanceled) {
				t.Errorf("hop %s at %s: %+v %v", x.hop, x.at, rec, err)
			}
		}
		if rec, _ := receivers[tester].Lookup(ctx, coder, mustHop(t, w, other)); rec.State != string(StateAccepted) {
			t.Fatalf("a hop under no canceled offer was canceled: %s", rec.State)
		}
		// The same cancel again resends the same octets downstream.
		first := res.Propagated
		sent = nil
		res, err = receivers[coder].HandleCancel(ctx, cancel)
		if err != nil || len(sent) != 3 || len(res.Propagated) != 2 ||
			!res.Propagated[0].Status.Equal(first[0].Status) || !res.Propagated[1].Status.Equal(first[1].Status) {
			t.Fatalf("again: %+v %v, %d sent", res, err, len(sent))
		}
		// A sender that fails is reported; the cancel itself stands.
		failing, _ := w.receiver(coder, WithCancelPropagation(co, func(context.Context, Canceled) error {
			return errcode.New(errcode.StoreUnavailable, "down")
		}))
		h5 := mustOffer(pl, coder, nil)
		d, err := failing.Receive(ctx, Inbound{Handoff: h5})
		wantAccept(t, d, err)
		mustOffer(co, tester, h5)
		c5, _ := pl.Cancel(ctx, d.Offer.Hop)
		res, err = failing.HandleCancel(ctx, c5)
		if err != nil || !hasCause(res.PropagateErr, errcode.StoreUnavailable) || len(res.Propagated) != 1 {
			t.Fatalf("failing sender: %+v %v", res, err)
		}
		if rec, _ := failing.Lookup(ctx, planner, d.Offer.Hop); rec.State != string(StateCanceled) {
			t.Fatal(rec.State)
		}
	})
}

// Section 5.6: "Each party keeps the first terminal state it verified." At the
// delegate, a Complete or Fail after a cancel is sent (it still resolves the hop for
// the delegator) and the hop stays canceled, the outcome beside it; a second outcome
// is refused.
func TestSec5_6_DelegateKeepsCanceledAfterOutcome(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		for _, fail := range []bool{false, true} {
			_, hop := p.offer(t, "")
			if _, err := p.r.Accept(p.ctx, planner, hop); err != nil {
				t.Fatal(err)
			}
			c, _ := p.dl.Cancel(p.ctx, hop)
			if _, err := p.r.HandleCancel(p.ctx, c); err != nil {
				t.Fatal(err)
			}
			var err error
			want := StateCompleted
			if fail {
				want = StateFailed
				_, err = p.r.Fail(p.ctx, planner, hop, Failure{})
			} else {
				_, err = p.r.Complete(p.ctx, planner, hop, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			rec, _ := p.r.Lookup(p.ctx, planner, hop)
			if rec.State != string(StateCanceled) || rec.Outcome != want {
				t.Fatalf("after %s: state %s, outcome %s", want, rec.State, rec.Outcome)
			}
			_, err = p.r.Complete(p.ctx, planner, hop, nil)
			wantCode(t, err, errcode.HandoffInvalidTransition)
			_, err = p.r.Fail(p.ctx, planner, hop, Failure{})
			wantCode(t, err, errcode.HandoffInvalidTransition)
			// A later cancel finds the outcome sent and keeps everything.
			res, err := p.r.HandleCancel(p.ctx, c)
			if err != nil || !res.AlreadyTerminal {
				t.Fatalf("%+v %v", res, err)
			}
			if rec, _ := p.r.Lookup(p.ctx, planner, hop); rec.State != string(StateCanceled) || rec.Outcome != want {
				t.Fatalf("after the second cancel: %+v", rec)
			}
		}
	})
}

// Section 5.6 on a hop the delegator canceled before the delegate took it: the
// delegate has "neither taken the work nor answered the first", so an equivocating
// offer makes it send "rejected" with reason "equivocation" for the first, and there
// is no work to stop. The hop stays canceled at the delegate; at the delegator the
// rejection resolves the canceled hop.
func TestSec5_6_EquivocationOnCanceledUntakenHop(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		p := newPair(t, w)
		h, hop := p.offer(t, "work")
		c, _ := p.dl.Cancel(p.ctx, hop)
		res, err := p.r.HandleCancel(p.ctx, c)
		if err != nil || res.StopWork {
			t.Fatalf("cancel of an untaken hop: %+v %v", res, err)
		}
		o, err := DecodeOffer(h.Offer)
		if err != nil {
			t.Fatal(err)
		}
		o2 := *o
		o2.Task = String("something else")
		d, err := receive(p.r, &Handoff{Offer: w.sign(&o2)})
		if d.Outcome != OutcomeEquivocation || d.StopWork || !d.Flagged {
			t.Fatalf("%+v %v", d, err)
		}
		vs := w.replyStatus(t, d)
		if vs.State != StateRejected || vs.ReasonValue() != ReasonEquivocation || !vs.Offer.Equal(h.Offer.Digest()) {
			t.Fatalf("reply %+v", vs.Status)
		}
		rec, _ := p.r.Lookup(p.ctx, planner, hop)
		if rec.State != string(StateCanceled) || rec.Outcome != StateRejected || !rec.Equivocated {
			t.Fatalf("record %+v", rec)
		}
		u := p.deliver(t, *d.Reply)
		if u.Hop.State != StateCanceled || u.Hop.Outcome != StateRejected || !u.Hop.Resolved {
			t.Fatalf("delegator %+v", u.Hop)
		}
		// Nothing more for the first offer after that.
		d, _ = receive(p.r, &Handoff{Offer: w.sign(&o2)})
		if d.Reply != nil || d.StopWork {
			t.Fatalf("again: %+v", d)
		}
		// A taken hop, canceled, then equivocated: stop the work, no status now.
		_, hop2 := p.offer(t, "")
		if _, err := p.r.Accept(p.ctx, planner, hop2); err != nil {
			t.Fatal(err)
		}
		c2, _ := p.dl.Cancel(p.ctx, hop2)
		if _, err := p.r.HandleCancel(p.ctx, c2); err != nil {
			t.Fatal(err)
		}
		h2, _ := p.dl.Retransmit(hop2)
		o3, _ := DecodeOffer(h2.Offer)
		o3.Task = String("other")
		d, _ = receive(p.r, &Handoff{Offer: w.sign(o3)})
		if d.Outcome != OutcomeEquivocation || !d.StopWork || d.Reply != nil {
			t.Fatalf("taken and canceled: %+v", d)
		}
	})
}
