package handoff

import (
	"context"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Section 5.3: "While a hop is unresolved, the delegator MUST NOT issue a new offer for
// the same work". A hop the delegate took ("accepted", outcome unknown) and a hop the
// delegator canceled are unresolved ("in each case the delegate may have done the
// work"). Each is here the only hop for its work, so that no other hop can be what
// blocks the new offer (issue 22).
func TestSec5_3_TakenOrCanceledHopBlocksNewOffer(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		again := func(p *pair, work string) error {
			_, err := p.dl.Offer(ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}, Work: work})
			return err
		}
		t.Run("accepted", func(t *testing.T) {
			p := newPair(t, w)
			_, hop := p.offer(t, "deploy")
			acc, err := p.r.Accept(ctx, planner, hop)
			if err != nil {
				t.Fatal(err)
			}
			if u := p.deliver(t, acc); u.Hop.State != StateAccepted || u.Hop.Resolved {
				t.Fatalf("%+v", u.Hop)
			}
			if n := len(p.dl.Unresolved()); n != 1 {
				t.Fatalf("%d unresolved hops, want only the taken one", n)
			}
			wantCode(t, again(p, "deploy"), errcode.HandoffUnresolvedWork)
			// Its outcome resolves it, and the work may be offered again.
			done, err := p.r.Complete(ctx, planner, hop, nil)
			if err != nil {
				t.Fatal(err)
			}
			p.deliver(t, done)
			if err := again(p, "deploy"); err != nil {
				t.Fatalf("after completed: %v", err)
			}
		})
		t.Run("canceled", func(t *testing.T) {
			p := newPair(t, w)
			_, hop := p.offer(t, "deploy")
			if _, err := p.dl.Cancel(ctx, hop); err != nil {
				t.Fatal(err)
			}
			if hs, _ := p.dl.State(hop); hs.State != StateCanceled || hs.Resolved {
				t.Fatalf("%+v", hs)
			}
			if n := len(p.dl.Unresolved()); n != 1 {
				t.Fatalf("%d unresolved hops, want only the canceled one", n)
			}
			wantCode(t, again(p, "deploy"), errcode.HandoffUnresolvedWork)
			// A late outcome resolves the canceled hop (section 5.6).
			f, err := p.r.Fail(ctx, planner, hop, Failure{Detail: "no effect"})
			if err != nil {
				t.Fatal(err)
			}
			p.deliver(t, f)
			if err := again(p, "deploy"); err != nil {
				t.Fatalf("after a late failed: %v", err)
			}
		})
	})
}

// Section 4: the cancel follows the hops down to every unresolved hop whose prev is the
// canceled offer. A resolved hop under it (its outcome is known: there is nothing to
// cancel) is skipped, and does not stop the propagation to the hops after it (issue
// 22): whichever order the hops are visited in, every unresolved one is canceled and
// nothing fails.
func TestSec4_CancelPropagationSkipsResolvedHops(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		pl, co := w.delegator(planner), w.delegator(coder)
		rc, _ := w.receiver(coder)
		h1, err := pl.Offer(ctx, OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}})
		if err != nil {
			t.Fatal(err)
		}
		d, err := rc.Receive(ctx, Inbound{Handoff: h1})
		wantAccept(t, d, err)

		// Under h1: one hop the tester completed, and several still open, so that the
		// resolved one is met before some open one in any map order.
		rt, _ := w.receiver(tester)
		under := func() *Handoff {
			h, err := co.Offer(ctx, OfferRequest{Offer: Offer{Aud: tester, Dialog: "d"}, From: h1})
			if err != nil {
				t.Fatal(err)
			}
			d, err := rt.Receive(ctx, Inbound{Handoff: h})
			wantAccept(t, d, err)
			return h
		}
		done := under()
		doneHop := mustHop(t, w, done)
		st, err := rt.Complete(ctx, coder, doneHop, nil)
		if err != nil {
			t.Fatal(err)
		}
		if u, err := co.HandleStatus(ctx, st); err != nil || !u.Hop.Resolved {
			t.Fatalf("%+v %v", u, err)
		}
		open := map[string]bool{}
		for range 4 {
			open[mustHop(t, w, under())] = true
		}

		down, err := co.PropagateCancel(ctx, h1.Offer.Digest())
		if err != nil {
			t.Fatalf("propagation stopped at a resolved hop: %v (after %d cancels)", err, len(down))
		}
		if len(down) != len(open) {
			t.Fatalf("%d cancels, want %d", len(down), len(open))
		}
		for _, c := range down {
			if !open[c.Hop] {
				t.Fatalf("canceled hop %s, which is not an open hop under the canceled offer", c.Hop)
			}
			if hs, _ := co.State(c.Hop); hs.State != StateCanceled {
				t.Fatalf("hop %s is %s", c.Hop, hs.State)
			}
		}
		if hs, _ := co.State(doneHop); hs.State != StateCompleted || !hs.Resolved {
			t.Fatalf("the resolved hop changed: %+v", hs)
		}
	})
}
