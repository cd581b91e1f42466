package handoff

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Defaults of a Delegator.
const (
	// DefaultOfferTTL is exp - iat of the offers a Delegator makes: inside the 300 s
	// a receiver accepts by default.
	DefaultOfferTTL = 120 * time.Second
	// DefaultMaxHops bounds the hops a Delegator tracks at once.
	DefaultMaxHops = 100_000
)

// DelegatorConfig configures NewDelegator.
type DelegatorConfig struct {
	// Self is this agent's AgentId: the iss of its offers and the aud of the statuses
	// it accepts.
	Self string
	// Key signs offers and cancels.
	Key *keys.PrivateKey
	// Trust binds the delegates' keys to their AgentIds, for their statuses.
	Trust Trust
	// Form of the offers (default JWS).
	Form Form
	// Now is the clock (default time.Now).
	Now func() time.Time
	// TTL is exp - iat of new offers (default DefaultOfferTTL).
	TTL time.Duration
	// MaxHops bounds the hops tracked at once (default DefaultMaxHops); resolved hops
	// are dropped with Forget.
	MaxHops int
	// MaxElementSize bounds a signed status (default DefaultMaxElementSize).
	MaxElementSize int
	// Flags is told about conflicting statuses.
	Flags func(Flag)
}

// Delegator is the delegator's side of handoffs: it signs offers (keeping their octets
// for retransmission, section 5.6), enforces the rule against a new offer for
// unresolved work (section 5.3), follows each hop's state from verified statuses
// (sections 4, 5.6), and cancels hops, propagating a cancel to the hops whose prev is a
// canceled offer (section 4). Its state is in memory. Safe for concurrent use.
type Delegator struct {
	cfg DelegatorConfig

	mu   sync.Mutex
	hops map[string]*outHop
}

type outHop struct {
	handoff *Handoff
	offer   *Offer
	digest  Digest
	work    string
	safe    bool

	state    State // offered, accepted, rejected, completed, failed, canceled
	outcome  State // the completed, failed or rejected that resolved a canceled hop
	reason   Reason
	refs     []ContextRef
	noEffect bool
	conflict bool
	forgot   bool // a "stale" or "replay" rejection arrived
	cancel   *Signed
	last     *Signed // the status that set the state
}

// NewDelegator returns a Delegator.
func NewDelegator(cfg DelegatorConfig) (*Delegator, error) {
	if cfg.Self == "" || cfg.Key == nil || cfg.Trust == nil {
		return nil, errcode.New(errcode.InvalidRequest, "a delegator needs Self, Key and Trust")
	}
	if cfg.Form == 0 {
		cfg.Form = JWS
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultOfferTTL
	}
	if cfg.MaxHops <= 0 {
		cfg.MaxHops = DefaultMaxHops
	}
	return &Delegator{cfg: cfg, hops: map[string]*outHop{}}, nil
}

// OfferRequest describes a new offer.
type OfferRequest struct {
	// Offer holds the members the caller chooses: Aud and Dialog (required), Task,
	// Obo, Grant, Refs, Extra. Hop, Iat and Exp default to a fresh hop identifier, now
	// and now plus the TTL; Iss is always Self; Prev comes from From.
	Offer Offer
	// Work names the work, for the rule against a new offer while a hop for the same
	// work is unresolved (section 5.3). "" opts out of the rule.
	Work string
	// SafeToRepeat says the work is safe to do twice, which lifts that rule.
	SafeToRepeat bool
	// From is the Handoff this agent received and now passes on: prev is its offer's
	// digest and the chain is its chain plus its offer, octets unchanged (section 3.3).
	// Obo is inherited from its offer when not set.
	From *Handoff
	// OmitChain sends prev without the chain (section 9, chain disclosure).
	OmitChain bool
}

// Offer signs a new offer and returns the Handoff to send.
func (d *Delegator) Offer(_ context.Context, req OfferRequest) (*Handoff, error) {
	o := req.Offer
	if o.Iss != "" && o.Iss != d.cfg.Self {
		return nil, errcode.New(errcode.InvalidRequest, "iss %q is not this delegator (%q)", o.Iss, d.cfg.Self)
	}
	if o.Aud == "" || o.Dialog == "" {
		return nil, errcode.New(errcode.InvalidRequest, "an offer needs aud and dialog")
	}
	o.Iss = d.cfg.Self
	now := d.cfg.Now().Unix()
	if o.Hop == "" {
		o.Hop = NewHopID()
	}
	if o.Iat == 0 {
		o.Iat = now
	}
	if o.Exp == 0 {
		o.Exp = o.Iat + int64(d.cfg.TTL/time.Second)
	}
	h := &Handoff{}
	if req.From != nil {
		prev := req.From.Offer.Digest()
		o.Prev = &prev
		if o.Obo == nil {
			if e, err := parseElement(req.From.Offer, "offer", 0); err == nil {
				o.Obo = e.offer.Obo
			}
		}
		if !req.OmitChain {
			h.Chain = append(slices.Clone(req.From.Chain), req.From.Offer)
		}
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.hops[o.Hop]; dup {
		// Section 5.6: a hop is never signed twice.
		return nil, errcode.New(errcode.InvalidRequest, "hop %s was already offered; retransmit it instead", o.Hop)
	}
	if req.Work != "" && !req.SafeToRepeat {
		for _, x := range d.hops {
			if x.work == req.Work && !x.resolved() {
				return nil, errcode.New(errcode.HandoffUnresolvedWork,
					"hop %s for this work is unresolved: ask again, or observe its outcome, before a new offer (section 5.3)", x.offer.Hop)
			}
		}
	}
	if len(d.hops) >= d.cfg.MaxHops {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, nil, "delegator tracks %d hops; forget resolved ones", len(d.hops))
	}
	signed, err := SignOffer(d.cfg.Key, d.cfg.Form, &o)
	if err != nil {
		return nil, err
	}
	h.Offer = signed
	d.hops[o.Hop] = &outHop{handoff: h, offer: &o, digest: signed.Digest(), work: req.Work, safe: req.SafeToRepeat, state: StateOffered}
	return h, nil
}

// Retransmit returns the identical Handoff of an earlier offer (section 5.3: "the
// identical octets"), never a re-signed one.
func (d *Delegator) Retransmit(hop string) (*Handoff, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, ok := d.hops[hop]
	if !ok {
		return nil, errcode.New(errcode.HandoffOfferMismatch, "no hop %s", hop)
	}
	c := *x.handoff
	return &c, nil
}

// CheckStatus applies the checks of section 5.6 to a status whose signature has been
// verified: it answers offer (whose handoff digest is offerDigest), it comes from the
// party allowed to send its state (offer.aud; offer.iss for "canceled") and it is
// addressed to the other party, which is self when self is not "".
func CheckStatus(vs *VerifiedStatus, offer *Offer, offerDigest Digest, self string) error {
	if vs.Hop != offer.Hop {
		return errcode.New(errcode.HandoffOfferMismatch, "status is for hop %s, the offer is hop %s", vs.Hop, offer.Hop)
	}
	wantIss, wantAud := offer.Aud, offer.Iss
	if vs.State == StateCanceled {
		wantIss, wantAud = offer.Iss, offer.Aud
	}
	if vs.Iss != wantIss {
		return errcode.New(errcode.IssuerMismatch, "a %q status must come from %q, this one is from %q", vs.State, wantIss, vs.Iss)
	}
	if vs.Aud != wantAud || self != "" && vs.Aud != self {
		return reject(ReasonWrongAudience, "status is for %q", vs.Aud)
	}
	if !vs.Offer.Equal(offerDigest) {
		return errcode.New(errcode.HandoffOfferMismatch, "status names offer %s, not %s", vs.Offer.Val, offerDigest.Val)
	}
	return nil
}

// StatusUpdate is what a verified status did to a hop.
type StatusUpdate struct {
	Status *VerifiedStatus
	// Hop is the hop's state after the status.
	Hop HopState
	// Changed is true when the status set or resolved the hop's state.
	Changed bool
	// Ignored is true for a "rejected" with reason "stale" or "replay": it shows only
	// that the delegate does not remember the hop, and never sets its state.
	Ignored bool
	// Conflict is true when the status conflicts with the first one verified, which
	// stands (section 5.6); the conflict is flagged.
	Conflict bool
}

// HandleStatus verifies a status from a delegate (section 5.6) and applies it to its
// hop: the first verified state stands, a conflicting later one is flagged, a "stale"
// or "replay" rejection never sets the state, a late "completed" or "failed" still
// resolves a canceled hop, and "accepted" is implied by either.
func (d *Delegator) HandleStatus(ctx context.Context, s Signed) (*StatusUpdate, error) {
	vs, err := VerifyStatusSignature(ctx, d.cfg.Trust, s, d.cfg.MaxElementSize)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	x, ok := d.hops[vs.Hop]
	if !ok {
		return nil, errcode.New(errcode.HandoffOfferMismatch, "no offer for hop %s", vs.Hop)
	}
	if err := CheckStatus(vs, x.offer, x.digest, d.cfg.Self); err != nil {
		return nil, err
	}
	u := &StatusUpdate{Status: vs}
	st := vs.State
	r := vs.ReasonValue()
	set := func(s State) {
		x.state, x.reason, x.refs, x.last, u.Changed = s, r, vs.Refs, &vs.Signed, true
	}
	conflict := func() {
		x.conflict, u.Conflict = true, true
		if d.cfg.Flags != nil {
			d.cfg.Flags(Flag{Kind: "conflict", Iss: d.cfg.Self, Hop: vs.Hop,
				Detail: "status " + string(st) + " after " + string(x.state) + "; the first verified state stands"})
		}
	}
	switch {
	case st == StateRejected && r.nonterminal():
		x.forgot, u.Ignored = true, true
	case st == StateCanceled:
		// CheckStatus lets "canceled" through only from offer.iss, which is this
		// delegator itself: nothing to apply.
	case x.state == StateCanceled:
		// Each party keeps the first terminal state; a later outcome still resolves
		// the hop (section 5.6).
		switch {
		case st == StateAccepted:
		case x.outcome == "":
			x.outcome, x.reason, x.refs, x.last, u.Changed = st, r, vs.Refs, &vs.Signed, true
		case x.outcome != st:
			conflict()
		}
	case x.state == StateOffered:
		set(st)
	case x.state == st:
		// The same state again (a resent status): nothing changes.
	case st == StateAccepted && (x.state == StateCompleted || x.state == StateFailed):
		// A late "accepted" after the outcome it was implied by.
	case x.state == StateAccepted && (st == StateCompleted || st == StateFailed):
		set(st)
	default:
		// rejected after accepted or an outcome, accepted after rejected, completed
		// after failed, and so on: at most one of each pair (section 4).
		conflict()
	}
	u.Hop = d.view(x)
	return u, nil
}

// Cancel revokes a hop (section 4) and returns the signed "canceled" status to send.
// Canceling again returns the same octets. A resolved hop cannot be canceled.
func (d *Delegator) Cancel(_ context.Context, hop string) (Signed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, ok := d.hops[hop]
	if !ok {
		return Signed{}, errcode.New(errcode.HandoffOfferMismatch, "no hop %s", hop)
	}
	return d.cancel(x)
}

func (d *Delegator) cancel(x *outHop) (Signed, error) {
	if x.cancel != nil {
		return *x.cancel, nil
	}
	if x.resolved() {
		return Signed{}, errcode.New(errcode.HandoffInvalidTransition, "hop %s is resolved (%s)", x.offer.Hop, x.state)
	}
	st := &Status{Hop: x.offer.Hop, Offer: x.digest, Iss: d.cfg.Self, Aud: x.offer.Aud, Iat: d.cfg.Now().Unix(), State: StateCanceled}
	s, err := SignStatus(d.cfg.Key, d.cfg.Form, st)
	if err != nil {
		return Signed{}, err
	}
	x.cancel, x.state = &s, StateCanceled
	return s, nil
}

// Canceled is one cancel a Delegator made while propagating.
type Canceled struct {
	Hop    string
	Aud    string
	Status Signed
}

// PropagateCancel cancels every unresolved hop whose offer's prev is canceledOffer,
// the digest of an offer this agent received and that its delegator canceled (section
// 4: "the cancel follows the hops down").
func (d *Delegator) PropagateCancel(_ context.Context, canceledOffer Digest) ([]Canceled, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Canceled
	for _, x := range d.hops {
		if x.offer.Prev == nil || !x.offer.Prev.Equal(canceledOffer) || x.resolved() {
			continue
		}
		s, err := d.cancel(x)
		if err != nil {
			return out, err
		}
		out = append(out, Canceled{Hop: x.offer.Hop, Aud: x.offer.Aud, Status: s})
	}
	slices.SortFunc(out, func(a, b Canceled) int {
		switch {
		case a.Hop < b.Hop:
			return -1
		case a.Hop > b.Hop:
			return 1
		}
		return 0
	})
	return out, nil
}

// ObservedNoEffect records an authoritative observation that the hop's work did not
// take effect, which resolves it (section 5.3).
func (d *Delegator) ObservedNoEffect(hop string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, ok := d.hops[hop]
	if !ok {
		return errcode.New(errcode.HandoffOfferMismatch, "no hop %s", hop)
	}
	x.noEffect = true
	return nil
}

// HopState is the delegator's view of one hop.
type HopState struct {
	Hop   string
	Aud   string
	Offer Digest
	Work  string
	Exp   int64
	State State // offered, expired, accepted, rejected, completed, failed or canceled
	// Outcome is the completed, failed or rejected that resolved a canceled hop.
	Outcome State
	Reason  Reason
	Refs    []ContextRef
	// Resolved: a verified "completed" or "failed", a verified "rejected" with a
	// reason other than "stale" or "replay", or an observation that the work did not
	// take effect (section 5.3). Expired, stale, replayed and canceled hops are not.
	Resolved bool
	// Conflict: conflicting statuses arrived (flagged).
	Conflict bool
	// DelegateForgot: a "stale" or "replay" rejection arrived.
	DelegateForgot bool
	// LastStatus is the verified status that set the state (or outcome).
	LastStatus *Signed
}

func (x *outHop) resolved() bool {
	if x.noEffect {
		return true
	}
	switch x.state {
	case StateCompleted, StateFailed, StateRejected:
		return true
	}
	return x.outcome != ""
}

func (d *Delegator) view(x *outHop) HopState {
	st := x.state
	if st == StateOffered && d.cfg.Now().Unix() >= x.offer.Exp {
		st = StateExpired // local and provisional: a later verified status replaces it
	}
	return HopState{Hop: x.offer.Hop, Aud: x.offer.Aud, Offer: x.digest, Work: x.work, Exp: x.offer.Exp, State: st,
		Outcome: x.outcome, Reason: x.reason, Refs: x.refs, Resolved: x.resolved(), Conflict: x.conflict,
		DelegateForgot: x.forgot, LastStatus: x.last}
}

// State returns the delegator's view of a hop.
func (d *Delegator) State(hop string) (HopState, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, ok := d.hops[hop]
	if !ok {
		return HopState{}, false
	}
	return d.view(x), true
}

// Unresolved lists the hops that are not resolved, for asking again or for flagging to
// the operator (section 5.3).
func (d *Delegator) Unresolved() []HopState {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []HopState
	for _, x := range d.hops {
		if !x.resolved() {
			out = append(out, d.view(x))
		}
	}
	slices.SortFunc(out, func(a, b HopState) int {
		if a.Hop < b.Hop {
			return -1
		}
		return 1
	})
	return out
}

// Forget drops a resolved hop (an unresolved one stays, so that the rule of section 5.3
// keeps applying to its work).
func (d *Delegator) Forget(hop string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	x, ok := d.hops[hop]
	if !ok {
		return nil
	}
	if !x.resolved() {
		return errcode.New(errcode.HandoffUnresolvedWork, "hop %s is unresolved", hop)
	}
	delete(d.hops, hop)
	return nil
}
