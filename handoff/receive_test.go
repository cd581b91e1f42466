package handoff

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
)

// Section 5.1: each step rejects with its reason.
func TestSec5_1_EachStepHasItsReason(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		obj := []byte("context object")
		cases := []struct {
			name   string
			step   int
			reason Reason
			make   func() (*Handoff, Inbound)
			opts   []ReceiverOption
		}{
			{"1 bad signature", 1, ReasonBadSignature, func() (*Handoff, Inbound) {
				return &Handoff{Offer: flipSignature(w.sign(w.newOffer(planner, coder)))}, Inbound{}
			}, nil},
			{"1 untrusted key", 1, ReasonUntrustedKey, func() (*Handoff, Inbound) {
				return &Handoff{Offer: w.signWith(w.untrustedKey(), w.newOffer(planner, coder))}, Inbound{}
			}, nil},
			{"2 wrong audience", 2, ReasonWrongAudience, func() (*Handoff, Inbound) {
				return &Handoff{Offer: w.sign(w.newOffer(planner, tester))}, Inbound{}
			}, nil},
			{"3 stale", 3, ReasonStale, func() (*Handoff, Inbound) {
				o := w.newOffer(planner, coder)
				o.Iat, o.Exp = o.Iat-200, o.Iat-1
				return &Handoff{Offer: w.sign(o)}, Inbound{}
			}, nil},
			{"4 replay after lost records", 4, ReasonReplay, func() (*Handoff, Inbound) {
				return &Handoff{Offer: w.sign(w.newOffer(planner, coder))}, Inbound{}
			}, []ReceiverOption{WithRecordsLostAt(w.clock.Now())}},
			{"5 dialog", 5, ReasonPolicy, func() (*Handoff, Inbound) {
				return &Handoff{Offer: w.sign(w.newOffer(planner, coder))}, Inbound{Dialog: "other-dialog"}
			}, nil},
			{"6 broken chain", 6, ReasonBrokenChain, func() (*Handoff, Inbound) {
				h, _ := w.chain(user, planner, coder)
				h.Chain[0] = w.sign(w.newOffer(user, planner)) // not the offer prev names
				return h, Inbound{}
			}, nil},
			{"6 cycle", 6, ReasonCycle, func() (*Handoff, Inbound) {
				h, _ := w.chain(planner, user, planner, coder)
				return h, Inbound{}
			}, nil},
			{"6 too deep", 6, ReasonTooDeep, func() (*Handoff, Inbound) {
				h, _ := w.chain(user, tester, planner, coder)
				return h, Inbound{}
			}, []ReceiverOption{WithChainPolicy(ChainPolicy{MaxLength: 1})}},
			{"6 policy", 6, ReasonPolicy, func() (*Handoff, Inbound) {
				h, _ := w.chain(user, planner, coder)
				h.Chain = nil
				return h, Inbound{}
			}, []ReceiverOption{WithChainPolicy(ChainPolicy{RequireFull: true})}},
			{"7 unverifiable ref", 7, ReasonUnverifiableRef, func() (*Handoff, Inbound) {
				o := w.newOffer(planner, coder)
				o.Refs = []ContextRef{DigestRef(obj, "")}
				return &Handoff{Offer: w.sign(o)}, Inbound{}
			}, []ReceiverOption{WithRefPolicy(RefPolicy{Require: RequireAllRefs})}},
			{"7 ref mismatch", 7, ReasonRefMismatch, func() (*Handoff, Inbound) {
				o := w.newOffer(planner, coder)
				o.Refs = []ContextRef{DigestRef([]byte("other"), "")}
				return &Handoff{Offer: w.sign(o)}, Inbound{}
			}, []ReceiverOption{WithRefPolicy(RefPolicy{Require: RequireAllRefs, Source: RefSourceFunc(
				func(context.Context, ContextRef) (*RefObject, error) { return &RefObject{Octets: obj}, nil })})}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r, _ := w.receiver(coder, c.opts...)
				h, in := c.make()
				in.Handoff = h
				d, err := r.Receive(ctx, in)
				wantReject(t, d, err, c.reason)
				if d.Step != c.step {
					t.Fatalf("decided at step %d, want %d", d.Step, c.step)
				}
				// The delegate says why, in a "rejected" status of its own, for the
				// offer it received (section 5.1).
				vs := w.replyStatus(t, d)
				if vs.State != StateRejected || vs.ReasonValue() != c.reason || vs.Iss != coder || vs.Aud != planner ||
					!vs.Offer.Equal(h.Offer.Digest()) {
					t.Fatalf("reply %+v", vs.Status)
				}
			})
		}
	})
}

// Section 5.1: "The first failure ends processing."
func TestSec5_1_FirstFailureWins(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		staleWrongAud := w.newOffer(planner, tester)
		staleWrongAud.Iat, staleWrongAud.Exp = 1, 2
		// A broken chain whose outer offer is also stale.
		h, offers := w.chain(user, planner, coder)
		h.Chain[0] = w.sign(w.newOffer(user, planner))
		staleChain := *offers[1]
		staleChain.Iat, staleChain.Exp = 1, 2
		hs := &Handoff{Offer: w.sign(&staleChain), Chain: h.Chain}
		for name, tc := range map[string]struct {
			h      *Handoff
			in     Inbound
			reason Reason
		}{
			"bad signature before audience": {&Handoff{Offer: w.signWith(w.untrustedKey(), staleWrongAud)}, Inbound{}, ReasonUntrustedKey},
			"audience before freshness":     {&Handoff{Offer: w.sign(staleWrongAud)}, Inbound{}, ReasonWrongAudience},
			"freshness before chain":        {hs, Inbound{}, ReasonStale},
			"dialog before chain":           {h, Inbound{Dialog: "elsewhere"}, ReasonPolicy},
		} {
			r, _ := w.receiver(coder)
			tc.in.Handoff = tc.h
			d, err := r.Receive(context.Background(), tc.in)
			if d.Reason != tc.reason {
				t.Errorf("%s: %s (%v), want %s", name, d.Reason, err, tc.reason)
			}
		}
	})
}

// Section 5.2: freshness, with the default skew (60 s) and maximum lifetime (300 s),
// and configurable ones.
func TestSec5_2_Freshness(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		now := w.clock.Now().Unix()
		for _, tc := range []struct {
			name     string
			iat, exp int64
			ok       bool
			opts     []ReceiverOption
		}{
			{"fresh", now, now + 120, true, nil},
			{"exp equals iat", now, now, false, nil},
			{"exp before iat", now, now - 1, false, nil},
			// Only the rule "exp not later than iat" breaks in these two: both times are
			// ahead of the clock (not expired), iat is within the skew and the lifetime
			// is not over the maximum.
			{"exp equals iat, both ahead of the clock", now + 30, now + 30, false, nil},
			{"exp before iat, both ahead of the clock", now + 30, now + 20, false, nil},
			{"iat within skew ahead", now + 60, now + 120, true, nil},
			{"iat beyond skew", now + 61, now + 120, false, nil},
			{"expired", now - 100, now, false, nil},
			{"exp one second later", now - 100, now + 1, true, nil},
			{"lifetime 300", now, now + 300, true, nil},
			{"lifetime 301", now, now + 301, false, nil},
			{"lifetime 301 with max 600", now, now + 301, true, []ReceiverOption{WithMaxLifetime(600 * time.Second)}},
			{"iat 61 ahead with skew 120", now + 61, now + 120, true, []ReceiverOption{WithSkew(120 * time.Second)}},
			{"iat 1 ahead with skew 0", now + 1, now + 120, false, []ReceiverOption{WithSkew(0)}},
		} {
			o := w.newOffer(planner, coder)
			o.Iat, o.Exp = tc.iat, tc.exp
			r, recs := w.receiver(coder, tc.opts...)
			d, err := receive(r, &Handoff{Offer: w.sign(o)})
			if tc.ok {
				if err != nil {
					t.Errorf("%s: %v", tc.name, err)
				}
				continue
			}
			if d.Reason != ReasonStale {
				t.Errorf("%s: %s (%v), want stale", tc.name, d.Reason, err)
			}
			if recs.Len() != 0 {
				t.Errorf("%s: a stale offer was remembered", tc.name)
			}
		}
	})
}

// Section 5.2: the (iss, hop) pair that passed steps 1 to 3 is remembered at least
// until exp plus the skew; a second copy is not accepted again.
func TestSec5_2_ReplayAndRemembering(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		r, recs := w.receiver(coder)
		o, h := w.acceptedOffer(t, r)
		d, err := receive(r, h)
		if d.Outcome != OutcomeRetransmission || !hasCause(err, errcode.HandoffRetransmission) {
			t.Fatalf("replay: %s %v", d.Outcome, err)
		}
		// Undecided: remembered until exp + skew, and no longer.
		w.clock.Advance(time.Duration(o.Exp-w.clock.Now().Unix())*time.Second + DefaultSkew - time.Second)
		if _, err := r.Lookup(context.Background(), planner, o.Hop); err != nil {
			t.Fatalf("forgotten before exp + skew: %v", err)
		}
		w.clock.Advance(time.Second)
		if _, err := r.Lookup(context.Background(), planner, o.Hop); !hasCause(err, errcode.HandoffOfferMismatch) {
			t.Fatalf("kept after exp + skew: %v", err)
		}
		// Now the same octets are simply stale.
		d, err = receive(r, h)
		wantReject(t, d, err, ReasonStale)
		_ = recs
	})
}

// Section 5.2: aud and dialog bind the offer to one receiver and one dialog; an offer
// copied to another agent fails step 2.
func TestSec5_2_OfferCopiedToAnotherAudience(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h := &Handoff{Offer: w.sign(w.newOffer(planner, coder))}
		rc, _ := w.receiver(coder)
		d, err := receive(rc, h)
		wantAccept(t, d, err)
		// The coder (or anyone who saw it) copies the offer to the tester.
		rt, recs := w.receiver(tester)
		d, err = receive(rt, h)
		wantReject(t, d, err, ReasonWrongAudience)
		if recs.Len() != 0 {
			t.Fatal("the tester remembered an offer meant for the coder")
		}
		// And into another dialog at the right audience.
		rc2, _ := w.receiver(coder)
		d, err = rc2.Receive(context.Background(), Inbound{Handoff: h, Dialog: "ctx-other"})
		wantReject(t, d, err, ReasonPolicy)
	})
}

// Section 5.3: a retransmission is not processed again; the last status is resent as
// the identical octets, and only to a sender authenticated as offer.iss (section 8.4).
func TestSec5_3_RetransmissionAnsweredWithIdenticalStatus(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		r, _ := w.receiver(coder)
		o, h := w.acceptedOffer(t, r)
		// Not decided yet: nothing to send.
		d, _ := r.Receive(ctx, Inbound{Handoff: h, AuthenticatedSender: planner})
		if d.Outcome != OutcomeRetransmission || d.Reply != nil || d.Withheld {
			t.Fatalf("undecided retransmission: %+v", d)
		}
		acc, err := r.Accept(ctx, planner, o.Hop)
		if err != nil {
			t.Fatal(err)
		}
		// After exp, too (section 5.3, Appendix C).
		w.clock.Advance(time.Hour)
		d, _ = r.Receive(ctx, Inbound{Handoff: h, AuthenticatedSender: planner})
		if d.Outcome != OutcomeRetransmission || d.Reply == nil || !d.Reply.Equal(acc) {
			t.Fatalf("retransmission after exp: %+v", d)
		}
		// Not to an unauthenticated sender, nor to someone else.
		for _, sender := range []string{"", tester} {
			d, _ = r.Receive(ctx, Inbound{Handoff: h, AuthenticatedSender: sender})
			if d.Reply != nil || !d.Withheld {
				t.Fatalf("sender %q got the status", sender)
			}
		}
		// A terminal status replaces it, and is what is resent.
		done, err := r.Complete(ctx, planner, o.Hop, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, _ = r.Receive(ctx, Inbound{Handoff: h, AuthenticatedSender: planner})
		if d.Reply == nil || !d.Reply.Equal(done) {
			t.Fatal("retransmission after completed")
		}
		// A rejection at steps 5 to 7 is remembered and resent the same way.
		r2, _ := w.receiver(coder)
		h2 := &Handoff{Offer: w.sign(w.newOffer(planner, coder))}
		d, _ = r2.Receive(ctx, Inbound{Handoff: h2, Dialog: "elsewhere"})
		first := d.Reply
		d, _ = r2.Receive(ctx, Inbound{Handoff: h2, AuthenticatedSender: planner})
		if first == nil || d.Reply == nil || !d.Reply.Equal(*first) {
			t.Fatal("rejection not resent identically")
		}
	})
}

// Section 8.4: after losing its records, a receiver rejects offers issued before the
// loss with "replay" until the maximum lifetime has passed; such a rejection sets no
// state. The offer passed steps 1 to 3, so its pair is remembered (section 5.2): a
// copy gets the same rejection (to offer.iss only), nothing can be decided on the
// hop, and another offer for the pair is equivocation with no status and no work to
// stop. A store that survives the restart (records kept) answers as usual.
func TestSec8_4_RestartThatLostRecords(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		bo := w.newOffer(planner, coder)
		before := &Handoff{Offer: w.sign(bo)}
		w.clock.Advance(10 * time.Second)
		lost := w.clock.Now()
		w.clock.Advance(5 * time.Second)
		r, recs := w.receiver(coder, WithRecordsLostAt(lost))
		d, err := receive(r, before)
		wantReject(t, d, err, ReasonReplay)
		first := w.replyStatus(t, d)
		if first.ReasonValue() != ReasonReplay || !first.Offer.Equal(before.Offer.Digest()) {
			t.Fatalf("reply %+v", first.Status)
		}
		rec, err := r.Lookup(ctx, planner, bo.Hop)
		if err != nil || rec.State != recReplayed || !rec.Offer.Equal(before.Offer.Digest()) || recs.Len() != 1 {
			t.Fatalf("the pair of a replay rejection is not remembered: %+v %v", rec, err)
		}
		d, err = r.Receive(ctx, Inbound{Handoff: before, AuthenticatedSender: planner})
		if d.Outcome != OutcomeRetransmission || d.Reply == nil || !d.Reply.Equal(first.Signed) {
			t.Fatalf("copy after a replay rejection: %+v %v", d, err)
		}
		for _, err := range []error{
			func() error { _, err := r.Accept(ctx, planner, bo.Hop); return err }(),
			func() error { _, err := r.Reject(ctx, planner, bo.Hop, ReasonPolicy, ""); return err }(),
			func() error { _, err := r.Complete(ctx, planner, bo.Hop, nil); return err }(),
			func() error { _, err := r.Fail(ctx, planner, bo.Hop, Failure{}); return err }(),
		} {
			wantCode(t, err, errcode.HandoffInvalidTransition)
		}
		bo2 := *bo
		bo2.Task = String("equivocating")
		d, _ = receive(r, &Handoff{Offer: w.sign(&bo2)})
		if d.Outcome != OutcomeEquivocation || d.Reply != nil || d.StopWork {
			t.Fatalf("equivocation after a replay rejection: %+v", d)
		}
		if rec, _ := r.Lookup(ctx, planner, bo.Hop); rec.State != recReplayed || !rec.Equivocated {
			t.Fatalf("%+v", rec)
		}
		// Canceled after the replay rejection: no work to stop, and equivocation on it
		// sends nothing, since the first was answered.
		rp, _ := w.receiver(coder, WithRecordsLostAt(lost))
		if d, err := receive(rp, before); d.Reason != ReasonReplay {
			t.Fatalf("%+v %v", d, err)
		}
		cancel := &Status{Hop: bo.Hop, Offer: before.Offer.Digest(), Iss: planner, Aud: coder, Iat: w.clock.Now().Unix(), State: StateCanceled}
		if res, err := rp.HandleCancel(ctx, w.signStatus(cancel)); err != nil || res.StopWork {
			t.Fatalf("cancel after a replay rejection: %+v %v", res, err)
		}
		if d, _ := receive(rp, &Handoff{Offer: w.sign(&bo2)}); d.Outcome != OutcomeEquivocation || d.Reply != nil || d.StopWork {
			t.Fatalf("equivocation after replay and cancel: %+v", d)
		}
		// Remembered until exp plus the skew, no longer.
		w.clock.Advance(time.Duration(bo.Exp-w.clock.Now().Unix())*time.Second + DefaultSkew)
		if _, err := r.Lookup(ctx, planner, bo.Hop); !hasCause(err, errcode.HandoffOfferMismatch) {
			t.Fatalf("kept after exp + skew: %v", err)
		}
		after := &Handoff{Offer: w.sign(w.newOffer(planner, coder))}
		d, err = receive(r, after)
		wantAccept(t, d, err)

		// With the records kept (same store, new receiver as after a restart), the
		// rule does not apply: the hop is answered from its record.
		shared := store.NewMemoryRecords(store.WithClock(w.clock.Now))
		r1 := NewReceiver(coder, w.trust, shared, WithClock(w.clock.Now), WithStatusKey(w.key(coder)), WithRecordsLostAt(time.Time{}))
		o := w.newOffer(planner, coder)
		h := &Handoff{Offer: w.sign(o)}
		if d, err := receive(r1, h); err != nil {
			t.Fatal(d, err)
		}
		acc, _ := r1.Accept(ctx, planner, o.Hop)
		restart := w.clock.Now()
		w.clock.Advance(time.Second)
		r2 := NewReceiver(coder, w.trust, shared, WithClock(w.clock.Now), WithStatusKey(w.key(coder)), WithRecordsLostAt(restart))
		d, _ = r2.Receive(ctx, Inbound{Handoff: h, AuthenticatedSender: planner})
		if d.Outcome != OutcomeRetransmission || d.Reply == nil || !d.Reply.Equal(acc) {
			t.Fatalf("kept hop after restart: %+v", d)
		}
	})
}

// failingRecords is a store that cannot answer.
type failingRecords struct{ after int }

func (f *failingRecords) fail() error {
	if f.after > 0 {
		f.after--
		return nil
	}
	return errcode.Unavailable(errcode.StoreUnavailable, errors.New("down"), "test store")
}

func (f *failingRecords) Create(context.Context, string, []byte, time.Duration) ([]byte, error) {
	return nil, f.fail()
}
func (f *failingRecords) Get(context.Context, string) ([]byte, error) { return nil, f.fail() }
func (f *failingRecords) Swap(context.Context, string, []byte, []byte, time.Duration) (bool, error) {
	return false, f.fail()
}
func (f *failingRecords) Delete(context.Context, string, []byte) (bool, error) {
	return false, f.fail()
}

// Records fail closed: a store error is an Incomplete rejection without a reason or a
// status, never an acceptance.
func TestSec5_2_StoreErrorsFailClosed(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h := &Handoff{Offer: w.sign(w.newOffer(planner, coder))}
		for _, after := range []int{0, 1} { // Get fails; Create fails
			r := NewReceiver(coder, w.trust, &failingRecords{after: after}, WithClock(w.clock.Now), WithStatusKey(w.key(coder)))
			d, err := receive(r, h)
			if d.Outcome != OutcomeRejected || d.Reason != "" || d.Reply != nil || errcode.KindOf(err) != errcode.Incomplete ||
				!errcode.Is(err, errcode.StoreUnavailable) {
				t.Fatalf("after %d: %+v %v", after, d, err)
			}
		}
		r := NewReceiver(coder, w.trust, &failingRecords{}, WithClock(w.clock.Now), WithStatusKey(w.key(coder)))
		if _, err := r.Accept(context.Background(), planner, "q3Zl0v8bVfQmJm2c4bq1Ww"); errcode.KindOf(err) != errcode.Incomplete {
			t.Fatalf("Accept with a dead store: %v", err)
		}
	})
}

// Keys that cannot be fetched make the check incomplete too.
type downTrust struct{}

func (downTrust) KeysFor(context.Context, string) (keys.KeySet, error) {
	return nil, errcode.Unavailable(errcode.KeysUnavailable, nil, "down")
}

func TestSec3_4_KeySourceDownFailsClosed(t *testing.T) {
	w := newWorld(t, JWS)
	h := &Handoff{Offer: w.sign(w.newOffer(planner, coder))}
	r := NewReceiver(coder, downTrust{}, store.NewMemoryRecords(), WithClock(w.clock.Now))
	d, err := receive(r, h)
	if d.Outcome != OutcomeRejected || d.Reason != "" || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("%+v %v", d, err)
	}
}

// Section 5.1: "unless doing so would itself leak information its policy protects":
// quiet reasons produce no status.
func TestSec5_1_QuietReasons(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		r, _ := w.receiver(coder, WithQuietReasons(ReasonUntrustedKey, ReasonWrongAudience))
		d, err := receive(r, &Handoff{Offer: w.signWith(w.untrustedKey(), w.newOffer(planner, coder))})
		wantReject(t, d, err, ReasonUntrustedKey)
		if d.Reply != nil {
			t.Fatal("a quiet reason was answered")
		}
		d, _ = receive(r, &Handoff{Offer: w.sign(w.newOffer(planner, tester))})
		if d.Reply != nil {
			t.Fatal("a quiet reason was answered")
		}
		d, _ = r.Receive(context.Background(), Inbound{Handoff: &Handoff{Offer: w.sign(w.newOffer(planner, coder))}, Dialog: "x"})
		if d.Reply == nil {
			t.Fatal("policy is not quiet")
		}
	})
}

// flakyTrust cannot answer for one agent until healed.
type flakyTrust struct {
	Trust
	down string
}

func (f *flakyTrust) KeysFor(ctx context.Context, agent string) (keys.KeySet, error) {
	if agent == f.down {
		return nil, errcode.Unavailable(errcode.KeysUnavailable, nil, "down")
	}
	return f.Trust.KeysFor(ctx, agent)
}

// A check that cannot be completed after the pair was recorded (the keys of a chain
// element cannot be fetched) leaves no record behind: the retransmission is processed
// afresh instead of being taken for a copy of an undecided offer.
func TestSec5_2_IncompleteCheckForgetsThePair(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		h, _ := w.chain(user, planner, coder)
		ft := &flakyTrust{Trust: w.trust, down: user}
		recs := store.NewMemoryRecords(store.WithClock(w.clock.Now))
		r := NewReceiver(coder, ft, recs, WithClock(w.clock.Now), WithStatusKey(w.key(coder)), WithRecordsLostAt(time.Time{}))
		d, err := receive(r, h)
		if d.Outcome != OutcomeRejected || d.Reason != "" || d.Step != 6 || errcode.KindOf(err) != errcode.Incomplete || d.Reply != nil {
			t.Fatalf("%+v %v", d, err)
		}
		if recs.Len() != 0 {
			t.Fatal("the pair stayed recorded")
		}
		ft.down = ""
		d, err = receive(r, h)
		wantAccept(t, d, err)
	})
}

// An operator forgets a hop whose outcome could not be learned (section 5.4); after
// that the hop identifier is unknown again (section 8.4).
func TestSec5_4_OperatorForgetsHop(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		r, _ := w.receiver(coder)
		o, h := w.acceptedOffer(t, r)
		if _, err := r.Accept(context.Background(), planner, o.Hop); err != nil {
			t.Fatal(err)
		}
		if err := r.Forget(context.Background(), planner, o.Hop); err != nil {
			t.Fatal(err)
		}
		wantCode(t, r.Forget(context.Background(), planner, o.Hop), errcode.HandoffOfferMismatch)
		d, err := receive(r, h)
		wantAccept(t, d, err)
	})
}

// durableRecords stands for a store that survives restarts (Redis): the same records,
// not of type *store.MemoryRecords.
type durableRecords struct{ store.Records }

// Section 8.4 without being told: memory records lose everything at a restart, so a
// receiver with store.MemoryRecords takes its own start time as the records-lost time.
// Offers issued at or before it are rejected with "replay"; later ones pass. Told
// otherwise (WithRecordsLostAt), it uses that; other stores apply no rule by default.
func TestSec8_4_MemoryRecordsApplyTheRuleByThemselves(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		before := &Handoff{Offer: w.sign(w.newOffer(planner, coder))}
		w.clock.Advance(5 * time.Second)
		sameSecond := &Handoff{Offer: w.sign(w.newOffer(planner, coder))}
		mem := func() *store.MemoryRecords { return store.NewMemoryRecords(store.WithClock(w.clock.Now)) }
		r := NewReceiver(coder, w.trust, mem(), WithClock(w.clock.Now), WithStatusKey(w.key(coder)))
		for name, h := range map[string]*Handoff{"issued before the start": before, "issued in the second of the start": sameSecond} {
			d, err := receive(r, h)
			wantReject(t, d, err, ReasonReplay)
			if d.Step != 4 {
				t.Fatalf("%s: step %d", name, d.Step)
			}
		}
		w.clock.Advance(time.Second)
		d, err := receive(r, &Handoff{Offer: w.sign(w.newOffer(planner, coder))})
		wantAccept(t, d, err)

		// Told otherwise: no loss, or another time.
		for name, opt := range map[string]ReceiverOption{
			"nothing lost":      WithRecordsLostAt(time.Time{}),
			"lost a while back": WithRecordsLostAt(w.clock.Now().Add(-time.Minute)),
		} {
			r := NewReceiver(coder, w.trust, mem(), WithClock(w.clock.Now), opt)
			if d, err := receive(r, before); err != nil || d.Outcome != OutcomeAccepted {
				t.Fatalf("%s: %+v %v", name, d, err)
			}
		}
		// A store that survives restarts applies no rule unless told.
		r = NewReceiver(coder, w.trust, durableRecords{mem()}, WithClock(w.clock.Now))
		d, err = receive(r, before)
		wantAccept(t, d, err)
	})
}
