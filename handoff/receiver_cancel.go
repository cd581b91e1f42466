package handoff

import (
	"context"
	"errors"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store"
)

// CancelResult is what Receiver.HandleCancel found.
type CancelResult struct {
	Status *VerifiedStatus
	// Offer is the handoff digest of the canceled offer: the prev of the offers this
	// delegate issued for the same work, to which the cancel propagates (section 4,
	// Delegator.PropagateCancel).
	Offer Digest
	// StopWork is true when the work had been taken and no terminal status was sent.
	StopWork bool
	// AlreadyTerminal is true when the delegate had sent a terminal status first; it
	// keeps that state (section 5.6).
	AlreadyTerminal bool
	// Propagated are the cancels made for this agent's own offers under the canceled
	// one and handed to the CancelSender (WithCancelPropagation); nil without it.
	Propagated []Canceled
	// PropagateErr is what went wrong making or sending them. The cancel itself was
	// checked and recorded: retrying HandleCancel with the same cancel resends the
	// same octets.
	PropagateErr error
}

// HandleCancel checks a "canceled" status from the delegator (section 5.6: signed by
// a key bound to status.iss, status.iss the offer's iss, status.aud this agent,
// status.offer the offer's digest) and records the hop as canceled.
func (r *Receiver) HandleCancel(ctx context.Context, s Signed) (*CancelResult, error) {
	vs, err := VerifyStatusSignature(ctx, r.trust, s, r.maxElem)
	if err != nil {
		return nil, err
	}
	if vs.State != StateCanceled {
		return nil, errcode.New(errcode.HandoffInvalidTransition, "a delegate is sent only %q, not %q", StateCanceled, vs.State)
	}
	// The record is found under (status.iss, hop): a cancel from any party but the
	// offer's iss finds none.
	rec, raw, err := r.load(ctx, vs.Iss, vs.Hop)
	if err != nil {
		return nil, err
	}
	if vs.Aud != r.self {
		return nil, reject(ReasonWrongAudience, "cancel is for %q", vs.Aud)
	}
	if !vs.Offer.Equal(rec.digest()) {
		return nil, errcode.New(errcode.HandoffOfferMismatch, "cancel names offer %s, the hop's offer is %s", vs.Offer.Val, rec.digest().Val)
	}
	res := &CancelResult{Status: vs, Offer: rec.digest()}
	switch {
	case rec.terminal():
		res.AlreadyTerminal = true
		return r.propagate(ctx, res), nil
	case State(rec.State) == StateCanceled:
		return r.propagate(ctx, res), nil
	}
	next := *rec
	ttl := store.NoExpiry // taken: the outcome may still have to be learned and sent
	if rec.State == recReceived || rec.State == recReplayed {
		ttl = r.terminalTTL(rec.Exp, r.now())
		next.Untaken = true
	} else {
		res.StopWork = true
	}
	next.State = string(StateCanceled)
	ok, err := r.records.Swap(ctx, recordKey(vs.Iss, vs.Hop), raw, next.encode(), ttl)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errcode.New(errcode.HandoffInvalidTransition, "hop changed while the cancel was recorded; try again")
	}
	return r.propagate(ctx, res), nil
}

// propagate sends the cancel down (section 4): every valid cancel, also one for a hop
// the delegate had already finished or canceled, since the hops it offered under the
// canceled one serve work the delegator no longer wants. Delegator.PropagateCancel
// skips resolved hops and returns the same octets for hops canceled before.
func (r *Receiver) propagate(ctx context.Context, res *CancelResult) *CancelResult {
	if r.downstream == nil || r.sendCancel == nil {
		return res
	}
	down, err := r.downstream.PropagateCancel(ctx, res.Offer)
	res.Propagated = down
	errs := []error{err}
	for _, c := range down {
		if err := r.sendCancel(ctx, c); err != nil {
			errs = append(errs, err)
		}
	}
	res.PropagateErr = errors.Join(errs...)
	return res
}
