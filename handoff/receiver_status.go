package handoff

import (
	"context"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store"
)

// sign makes one of the delegate's statuses.
func (r *Receiver) sign(form Form, hop string, offer Digest, aud string, state State, reason Reason, detail string, refs []ContextRef) (Signed, error) {
	if r.key == nil {
		return Signed{}, errcode.New(errcode.InvalidRequest, "the receiver has no status key")
	}
	st := &Status{Hop: hop, Offer: offer, Iss: r.self, Aud: aud, Iat: r.now().Unix(), State: state, Refs: refs}
	if reason != "" {
		st.Reason = &reason
	}
	if detail != "" {
		st.Detail = &detail
	}
	return SignStatus(r.key, form, st)
}

// change is a status the delegate is about to send for a remembered hop.
type change struct {
	state  State
	reason Reason
	detail string
	refs   []ContextRef
}

// transition signs a status for a remembered hop and records it as the last status,
// atomically with the state change (compare and swap on the record). plan sees the
// record, refuses what section 4 forbids, and says what to send.
func (r *Receiver) transition(ctx context.Context, iss, hop string, plan func(*hopRecord) (change, error)) (Signed, error) {
	rec, raw, err := r.load(ctx, iss, hop)
	if err != nil {
		return Signed{}, err
	}
	c, err := plan(rec)
	if err != nil {
		return Signed{}, err
	}
	st, err := r.sign(Form(rec.Form), hop, rec.digest(), iss, c.state, c.reason, c.detail, c.refs)
	if err != nil {
		return Signed{}, err
	}
	next := *rec
	next.Status = st.Octets
	ttl := store.NoExpiry
	switch {
	case State(rec.State) == StateCanceled:
		next.Outcome = string(c.state)
		ttl = r.terminalTTL(rec.Exp, r.now())
	case c.state == StateAccepted:
		next.State = string(c.state)
	default:
		next.State = string(c.state)
		ttl = r.terminalTTL(rec.Exp, r.now())
	}
	ok, err := r.records.Swap(ctx, recordKey(iss, hop), raw, next.encode(), ttl)
	if err != nil {
		return Signed{}, err
	}
	if !ok {
		return Signed{}, errcode.New(errcode.HandoffInvalidTransition, "hop %s changed while its status was made; try again", hop)
	}
	return st, nil
}

func badTransition(rec *hopRecord, want string) error {
	return errcode.New(errcode.HandoffInvalidTransition, "hop is %s: %s is not allowed (section 4)", rec.State, want)
}

// Accept takes the work of a hop that passed Receive and returns the signed
// "accepted" status to send. The undecided pair is remembered until the offer's exp
// plus the skew; after that there is nothing left to accept. The hop is then kept until a terminal status (or until
// its operator forgets it), since its outcome is not known yet (section 5.2).
func (r *Receiver) Accept(ctx context.Context, iss, hop string) (Signed, error) {
	return r.transition(ctx, iss, hop, func(rec *hopRecord) (change, error) {
		if rec.State != recReceived {
			return change{}, badTransition(rec, "accepted")
		}
		return change{state: StateAccepted}, nil
	})
}

// Reject refuses a remembered hop that has not been taken (a delegate sends at most
// one of "accepted" and "rejected", and never "rejected" for a hop it has taken).
// "stale" and "replay" are reserved for hops the delegate does not remember. reason
// must be one of the values section 2 lists: others are never produced here.
func (r *Receiver) Reject(ctx context.Context, iss, hop string, reason Reason, detail string) (Signed, error) {
	if reason == "" || reason.nonterminal() {
		return Signed{}, errcode.New(errcode.InvalidRequest, "reason %q cannot reject a remembered hop", reason)
	}
	if !reason.Listed() {
		return Signed{}, errcode.New(errcode.InvalidRequest, "reason %q is not one of section 2's values", reason)
	}
	return r.transition(ctx, iss, hop, func(rec *hopRecord) (change, error) {
		if rec.State != recReceived {
			return change{}, badTransition(rec, "rejected")
		}
		return change{state: StateRejected, reason: reason, detail: detail}, nil
	})
}

// Complete sends "completed" for a hop whose work took full effect. Call it only when
// that is known (section 5.4): while it is not, the hop stays "accepted". refs may name
// the results. "accepted" need not have been sent before (section 4).
func (r *Receiver) Complete(ctx context.Context, iss, hop string, refs []ContextRef) (Signed, error) {
	if len(refs) == 0 {
		refs = nil
	}
	return r.transition(ctx, iss, hop, func(rec *hopRecord) (change, error) {
		if err := outcomeAllowed(rec, "completed"); err != nil {
			return change{}, err
		}
		return change{state: StateCompleted, refs: refs}, nil
	})
}

// Failure describes a failed hop.
type Failure struct {
	Reason Reason
	Detail string
	// Effects names, by digest, a record of each part of the work that took effect.
	Effects []ContextRef
	// Partial says that part of the work took effect: Effects must then list it
	// (section 5.4). A failure with no effects says the work took no effect.
	Partial bool
}

// Fail sends "failed" for a hop whose outcome is known (section 5.4). After
// equivocation, the reason defaults to "equivocation" (section 5.6). A reason, when
// given, must be one of the values section 2 lists.
func (r *Receiver) Fail(ctx context.Context, iss, hop string, f Failure) (Signed, error) {
	if f.Reason != "" && !f.Reason.Listed() {
		return Signed{}, errcode.New(errcode.InvalidRequest, "reason %q is not one of section 2's values", f.Reason)
	}
	if f.Partial && len(f.Effects) == 0 {
		return Signed{}, errcode.New(errcode.InvalidRequest, "part of the work took effect: refs must list it (section 5.4)")
	}
	var refs []ContextRef
	if len(f.Effects) > 0 {
		refs = f.Effects
	}
	return r.transition(ctx, iss, hop, func(rec *hopRecord) (change, error) {
		if err := outcomeAllowed(rec, "failed"); err != nil {
			return change{}, err
		}
		reason := f.Reason
		if reason == "" && rec.Equivocated {
			reason = ReasonEquivocation
		}
		return change{state: StateFailed, reason: reason, detail: f.Detail, refs: refs}, nil
	})
}

// outcomeAllowed: "completed" or "failed" go out at most once, for a hop that was
// received or accepted, or canceled by the delegator meanwhile (section 5.6: a late
// outcome still resolves the hop for the delegator).
func outcomeAllowed(rec *hopRecord, what string) error {
	switch {
	case rec.State == recReceived, State(rec.State) == StateAccepted:
		return nil
	case State(rec.State) == StateCanceled && rec.Outcome == "":
		return nil
	}
	return badTransition(rec, what)
}
