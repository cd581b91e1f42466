package handoff

import (
	"bytes"
	"context"
	"encoding/base64"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
)

// Defaults of a Receiver (section 5.2 and local policy).
const (
	DefaultSkew        = 60 * time.Second
	DefaultMaxLifetime = 300 * time.Second
	// DefaultRetention is how long a delegate keeps a hop's record after it sent
	// "rejected", "completed" or "failed" (section 5.2: "a further retention period,
	// set by local policy and made known to its delegators").
	DefaultRetention = 24 * time.Hour
)

// Outcome is what a Receiver decided about an offer.
type Outcome string

// Outcomes.
const (
	// OutcomeAccepted: every check of section 5.1 passed. The delegate takes the work
	// by calling Receiver.Accept, which sends "accepted", or refuses it with
	// Receiver.Reject.
	OutcomeAccepted Outcome = "accepted"
	// OutcomeRejected: a check failed (Decision.Reason), or could not be completed
	// (Decision.Err is Incomplete and Reason is empty).
	OutcomeRejected Outcome = "rejected"
	// OutcomeRetransmission: an exact copy of a remembered offer; it is not processed
	// again and is answered as section 5.3 says (Decision.Reply).
	OutcomeRetransmission Outcome = "retransmission"
	// OutcomeEquivocation: a second offer for a remembered (iss, hop) with other octets
	// (section 5.6). It is never accepted and never answered; Decision.Reply, when set,
	// is a status for the first offer.
	OutcomeEquivocation Outcome = "equivocation"
)

// Decision is the result of Receiver.Receive.
type Decision struct {
	Outcome Outcome
	// Reason is the reason value of a rejection (empty when the check could not be
	// completed).
	Reason Reason
	// Step is the step of section 5.1 that decided (1 to 7; 0 when all passed).
	Step int
	// Offer is the verified offer (nil when step 1 failed).
	Offer *VerifiedOffer
	// Chain is the chain after section 5.5 (nil when step 6 was not reached).
	Chain *ChainResult
	// Refs are the reference outcomes (nil when step 7 was not reached).
	Refs []RefResult
	// Reply is a signed status for the caller to send, or nil.
	Reply *Signed
	// Withheld is true when a status would have been resent but the sender of this
	// message was not authenticated as offer.iss (section 8.4).
	Withheld bool
	// StopWork asks the delegate to stop the work of the first offer if it can: the
	// hop was taken and then equivocated (section 5.6).
	StopWork bool
	// Flagged is true when the operator was (and should be) told: equivocation, or a
	// malleated copy.
	Flagged bool
	// Malleated is true for a copy of a remembered offer with the same signed content
	// (JWS header and payload; COSE protected header and payload) and other octets: a
	// different valid signature, which anyone can make from an ECDSA one, or other
	// unsigned parts. It is not the delegator signing twice (section 5.6), so it is
	// answered as a retransmission of the remembered offer (Outcome
	// OutcomeRetransmission, section 5.3) and flagged with Flag kind "malleated-copy".
	Malleated bool
	// Err is the rejection as an *errcode.Error (nil when accepted).
	Err error
}

// Inbound is an offer as it arrived.
type Inbound struct {
	Handoff *Handoff
	// Dialog is the dialog identifier of the host protocol message that carried the
	// handoff (for example an A2A contextId, or the Dialog-Context dlg); "" when the
	// message carries none. Step 5 compares it with offer.dialog.
	Dialog string
	// Credential is the credential that arrived with the request, exactly as presented
	// (the Txn-Token within a trust domain, the access token across one); nil when none
	// did. When the offer has a grant, it must be this credential's digest (section 5.7).
	Credential []byte
	// AuthenticatedSender is the AgentId the host protocol authenticated as the sender
	// of this message, "" when none. A remembered status is resent only to offer.iss
	// (section 8.4), and an offer that is not remembered is taken only from offer.iss:
	// from anyone else it is refused (errcode.HandoffSenderNotIssuer) without binding
	// its pair, so that a leaked copy cannot spend the delegator's offer. With "", the
	// receiver cannot tell a leaked copy from the delegator's unless the offer's grant
	// names the credential that arrived.
	AuthenticatedSender string
}

// Flag is something the operator should be told (sections 5.3, 5.4, 5.6).
type Flag struct {
	Kind   string // "equivocation", "malleated-copy" or "conflict"
	Iss    string
	Hop    string
	Detail string
}

// ReceiverOption configures NewReceiver.
type ReceiverOption func(*Receiver)

// WithClock sets the clock of NewReceiver (default time.Now). Time is an input: tests
// move it instead of sleeping. A nil clock keeps the default.
func WithClock(now func() time.Time) ReceiverOption {
	return func(r *Receiver) { r.now = now }
}

// WithSkew sets the allowed clock skew (default 60 s).
func WithSkew(d time.Duration) ReceiverOption { return func(r *Receiver) { r.skew = d } }

// WithMaxLifetime sets the maximum exp - iat of an offer (default 300 s).
func WithMaxLifetime(d time.Duration) ReceiverOption {
	return func(r *Receiver) { r.maxLifetime = d }
}

// WithRetention sets how long a hop's record is kept after a terminal status.
func WithRetention(d time.Duration) ReceiverOption { return func(r *Receiver) { r.retention = d } }

// WithChainPolicy sets the chain policy (section 5.5; default: partial chains
// accepted, maximum length 16, no re-entry).
func WithChainPolicy(p ChainPolicy) ReceiverOption { return func(r *Receiver) { r.chain = p } }

// WithRefPolicy sets which references are checked before accepting (step 7).
func WithRefPolicy(p RefPolicy) ReceiverOption { return func(r *Receiver) { r.refs = p } }

// WithStatusKey sets the delegate's signing key for statuses. Without one, no status
// is produced and Accept, Reject, Complete and Fail fail.
func WithStatusKey(k *keys.PrivateKey) ReceiverOption { return func(r *Receiver) { r.key = k } }

// WithRecordsLostAt says when the records were last lost (for example the start of a
// process whose records are in memory). Until the maximum lifetime has passed, offers
// issued at or before that time that the receiver does not remember are rejected with
// reason "replay" (section 8.4). A store that survives restarts (Redis) needs none.
//
// A receiver with store.MemoryRecords, which lose everything at a restart, applies the
// rule by itself with its own start time (the clock when NewReceiver runs) as the
// records-lost time. WithRecordsLostAt overrides that; the zero time says that no
// records were lost, for records as new as every key that can sign for them (a test,
// a demonstration, a one-shot check of an offer).
func WithRecordsLostAt(t time.Time) ReceiverOption {
	return func(r *Receiver) { r.lostAt, r.lostAtSet = t, true }
}

// WithMaxElementSize bounds each signed handoff (default DefaultMaxElementSize).
func WithMaxElementSize(n int) ReceiverOption { return func(r *Receiver) { r.maxElem = n } }

// WithQuietReasons lists reasons for which no "rejected" status is produced (section
// 5.1: "unless doing so would itself leak information its policy protects").
func WithQuietReasons(rs ...Reason) ReceiverOption {
	return func(r *Receiver) {
		for _, x := range rs {
			r.quiet[x] = true
		}
	}
}

// WithGrantRequired rejects (reason policy) an offer without a grant, or whose grant
// cannot be checked because no credential arrived with it.
func WithGrantRequired() ReceiverOption { return func(r *Receiver) { r.grantRequired = true } }

// WithFlags sets the function told about flagged hops.
func WithFlags(f func(Flag)) ReceiverOption { return func(r *Receiver) { r.flag = f } }

// CancelSender sends one propagated "canceled" status to the delegate of a hop this
// agent offered (c.Aud), in the host protocol (for example an A2A Cancel Task request
// or an MCP notifications/cancelled, section 6).
type CancelSender func(ctx context.Context, c Canceled) error

// WithCancelPropagation makes the receiver follow section 4: "A delegate that receives
// a valid "canceled" SHOULD send "canceled" for each offer it issued whose prev equals
// this hop's offer digest." d is this agent's own Delegator; once HandleCancel has
// checked and recorded a cancel, it cancels d's unresolved hops under the canceled
// offer (Delegator.PropagateCancel) and hands each cancel to send.
func WithCancelPropagation(d *Delegator, send CancelSender) ReceiverOption {
	return func(r *Receiver) { r.downstream, r.sendCancel = d, send }
}

// Receiver is the delegate's side of handoffs: it checks offers (section 5.1), keeps
// the (iss, hop) records of section 5.2 in a store.Records, answers retransmissions
// (5.3), handles equivocation (5.6) and cancels, and signs the delegate's statuses
// (section 4). It is safe for concurrent use; concurrent changes to one hop are
// serialised by the store's compare-and-swap.
type Receiver struct {
	self          string
	trust         Trust
	records       store.Records
	key           *keys.PrivateKey
	now           func() time.Time
	skew          time.Duration
	maxLifetime   time.Duration
	retention     time.Duration
	lostAt        time.Time
	lostAtSet     bool
	maxElem       int
	chain         ChainPolicy
	refs          RefPolicy
	quiet         map[Reason]bool
	grantRequired bool
	flag          func(Flag)
	downstream    *Delegator
	sendCancel    CancelSender
}

// NewReceiver returns the receiver of agent self.
func NewReceiver(self string, trust Trust, records store.Records, opts ...ReceiverOption) *Receiver {
	r := &Receiver{self: self, trust: trust, records: records, now: time.Now, skew: DefaultSkew,
		maxLifetime: DefaultMaxLifetime, retention: DefaultRetention, maxElem: DefaultMaxElementSize,
		quiet: map[Reason]bool{}}
	for _, o := range opts {
		o(r)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if _, volatile := records.(*store.MemoryRecords); volatile && !r.lostAtSet {
		// Memory records start empty: whatever an earlier run of this process saw is
		// gone (section 8.4).
		r.lostAt = r.now()
	}
	return r
}

// Receive checks an offer as section 5.1 says: steps 1 to 7 in order, the first
// failure wins. It returns the Decision and, unless the offer passed, its Err.
func (r *Receiver) Receive(ctx context.Context, in Inbound) (*Decision, error) {
	if in.Handoff == nil {
		err := errcode.New(errcode.InvalidRequest, "no handoff")
		return &Decision{Outcome: OutcomeRejected, Err: err}, err
	}
	now := r.now()
	h := in.Handoff

	// Step 1: signed form, v and type, signature with a key bound to iss.
	e, err := parseElement(h.Offer, "offer", r.maxElem)
	if err != nil {
		// Nothing is answered: the payload is unreadable, or the element is unsigned,
		// which section 3 treats as absent.
		return r.decide(&Decision{Outcome: OutcomeRejected, Step: 1, Reason: ReasonBadSignature,
			Err: rejectWrap(ReasonBadSignature, err, "signed offer")})
	}
	vo, err := e.verifiedOffer(ctx, r.trust)
	if err != nil {
		if errcode.KindOf(err) == errcode.Incomplete {
			return r.decide(&Decision{Outcome: OutcomeRejected, Step: 1, Err: err})
		}
		return r.rejectUnrecorded(e.offer, h.Offer, &Decision{Step: 1, Err: err})
	}
	o := vo.Offer
	d := &Decision{Offer: vo}

	// Step 2: audience.
	if o.Aud != r.self {
		d.Step, d.Err = 2, reject(ReasonWrongAudience, "offer is for %q, this agent is %q", o.Aud, r.self)
		return r.rejectUnrecorded(o, h.Offer, d)
	}

	// A remembered pair skips step 3 and is handled by step 4 (retransmission or
	// equivocation, even after exp).
	key := recordKey(o.Iss, o.Hop)
	raw, err := r.records.Get(ctx, key)
	if err != nil {
		d.Outcome, d.Step, d.Err = OutcomeRejected, 3, err
		return r.decide(d)
	}
	if raw != nil {
		return r.remembered(ctx, key, raw, vo, in)
	}

	// Step 3: freshness (section 5.2). A stale offer is not remembered and sets no
	// state.
	if err := r.fresh(o, now); err != nil {
		d.Step, d.Err = 3, err
		return r.rejectUnrecorded(o, h.Offer, d)
	}

	// Whose copy may bind the pair (sections 5.2, 5.3, 8.4), checked before anything is
	// recorded and reported as step 5 (the offer against the message that carries it).
	// A message authenticated as another party than offer.iss, or, with no sender
	// authenticated, carrying another credential than the one grant names, is not the
	// delegator's sending of the offer: it is refused, the pair stays unbound and
	// nothing is signed, so that the delegator's own copy of the same octets is still
	// processed afresh.
	if err := r.checkSender(o, in); err != nil {
		d.Step, d.Err = 5, err
		return r.refuseUnbound(d)
	}

	// Step 4: not seen before. After a loss of records, an offer issued before the
	// loss may have been seen: "replay" (section 8.4).
	digestRaw, _ := base64.RawURLEncoding.DecodeString(vo.Digest.Val)
	rec := &hopRecord{Digest: digestRaw, Form: int(h.Offer.Form), State: recReceived, Exp: o.Exp, Content: vo.content[:]}
	if !r.lostAt.IsZero() && o.Iat <= r.lostAt.Unix() {
		d.Step, d.Err = 4, reject(ReasonReplay, "records were lost at %d and this offer was issued at %d", r.lostAt.Unix(), o.Iat)
		return r.rejectReplayed(ctx, key, rec, d, in, now)
	}
	recRaw := rec.encode()
	existing, err := r.records.Create(ctx, key, recRaw, r.receivedTTL(o.Exp, now))
	if err != nil {
		d.Outcome, d.Step, d.Err = OutcomeRejected, 4, err
		return r.decide(d)
	}
	if existing != nil { // a concurrent copy got there first
		return r.remembered(ctx, key, existing, vo, in)
	}

	// Step 5: dialog, and the grant binding of section 5.7.
	if in.Dialog != "" && o.Dialog != in.Dialog {
		d.Step, d.Err = 5, reject(ReasonPolicy, "offer is for dialog %q, the message is in %q", o.Dialog, in.Dialog)
		return r.rejectRecorded(ctx, key, rec, recRaw, d, now)
	}
	if err := r.checkGrant(o, in.Credential); err != nil {
		d.Step, d.Err = 5, err
		return r.rejectRecorded(ctx, key, rec, recRaw, d, now)
	}

	// Step 6: the chain.
	cc := &chainChecker{trust: r.trust, self: r.self, skew: r.skew, maxElem: r.maxElem, policy: r.chain}
	d.Chain, err = cc.check(ctx, vo, h.Chain)
	if err != nil {
		d.Step, d.Err = 6, err
		if errcode.KindOf(err) == errcode.Incomplete {
			return r.undo(ctx, key, recRaw, d)
		}
		return r.rejectRecorded(ctx, key, rec, recRaw, d, now)
	}

	// Step 7: references local policy requires.
	d.Refs, err = checkRefs(ctx, o.Refs, r.refs)
	if err != nil {
		d.Step, d.Err = 7, err
		return r.rejectRecorded(ctx, key, rec, recRaw, d, now)
	}
	d.Outcome = OutcomeAccepted
	return d, nil
}

func (r *Receiver) decide(d *Decision) (*Decision, error) {
	if d.Outcome == "" {
		d.Outcome = OutcomeRejected
	}
	if d.Reason == "" {
		d.Reason = ReasonOf(d.Err)
	}
	return d, d.Err
}

// undo forgets a pair whose processing could not be completed, so that a
// retransmission is processed afresh instead of being taken for a copy of an offer on
// which nothing was decided.
func (r *Receiver) undo(ctx context.Context, key string, recRaw []byte, d *Decision) (*Decision, error) {
	_, _ = r.records.Delete(ctx, key, recRaw)
	d.Outcome, d.Reason = OutcomeRejected, ""
	return d, d.Err
}

// fresh applies section 5.2.
func (r *Receiver) fresh(o *Offer, now time.Time) error {
	n := now.Unix()
	switch {
	case o.Exp <= o.Iat:
		return reject(ReasonStale, "exp %d is not later than iat %d", o.Exp, o.Iat)
	case o.Iat > satAdd(n, r.seconds(r.skew)):
		return reject(ReasonStale, "issued at %d, after now %d plus skew", o.Iat, n)
	case o.Exp <= n:
		return reject(ReasonStale, "expired at %d, now %d", o.Exp, n)
	case o.Exp-o.Iat > r.seconds(r.maxLifetime):
		return reject(ReasonStale, "lifetime %ds exceeds the maximum %s", o.Exp-o.Iat, r.maxLifetime)
	}
	return nil
}

func (r *Receiver) checkGrant(o *Offer, credential []byte) error {
	if o.Grant == nil {
		if r.grantRequired {
			return errcode.New(errcode.HandoffGrantMismatch, "the offer names no grant")
		}
		return nil
	}
	// Whether or not a credential arrived: a grant that is not a digest may be the
	// credential itself (section 2), and no check could ever pass against it.
	if err := checkGrantIsDigest(o.Grant); err != nil {
		return err
	}
	if credential == nil {
		if r.grantRequired {
			return errcode.New(errcode.HandoffGrantMismatch, "no credential arrived to check the grant against")
		}
		return nil
	}
	return CheckGrant(o, credential)
}

// checkSender decides whether this copy of the offer may bind its (iss, hop) pair, that
// is, whether it is the delegator's (sections 5.2, 5.3, 8.4). A copy whose sender the
// host protocol authenticated is the delegator's when that sender is offer.iss, and
// from anyone else it is refused (errcode.HandoffSenderNotIssuer). With no sender
// authenticated, the credential that arrived is the only sign of the delegator: when
// the offer names a grant, a copy with another credential, or with none where one is
// required, is refused (errcode.HandoffGrantMismatch). A grant the offer gets wrong by
// itself (checkGrantIsDigest, an unimplemented hash) is left to step 5, where it is
// the hop's rejection; so is everything else about a copy from offer.iss.
func (r *Receiver) checkSender(o *Offer, in Inbound) error {
	switch {
	case in.AuthenticatedSender == o.Iss:
		return nil
	case in.AuthenticatedSender != "":
		return errcode.New(errcode.HandoffSenderNotIssuer, "the message was sent by %q and the offer is from %q: only the delegator's copy is processed",
			errcode.Cut(in.AuthenticatedSender), errcode.Cut(o.Iss))
	case o.Grant == nil || checkGrantIsDigest(o.Grant) != nil || o.Grant.Alg != SHA256:
		return nil
	case in.Credential == nil && !r.grantRequired:
		return nil
	}
	return r.checkGrant(o, in.Credential)
}

// refuseUnbound refuses a copy that may not bind its pair (checkSender): nothing is
// recorded and no status is signed. A signed "rejected" would resolve the hop for the
// delegator (section 5.3) while its own copy of the same offer can still be accepted;
// the refusal (Decision.Err) goes back alone, and the hop stays open for the delegator
// to send or retransmit.
func (r *Receiver) refuseUnbound(d *Decision) (*Decision, error) {
	d.Outcome = OutcomeRejected
	d.Reason = ReasonOf(d.Err)
	return d, d.Err
}

// rejectUnrecorded rejects at steps 1 to 4 without remembering the pair. It still
// produces a "rejected" status when the payload could be read, a key is configured and
// the reason is not quiet; the status never sets the hop's state at the delegate
// (nothing is recorded).
func (r *Receiver) rejectUnrecorded(o *Offer, s Signed, d *Decision) (*Decision, error) {
	d.Outcome = OutcomeRejected
	d.Reason = ReasonOf(d.Err)
	if o != nil && r.key != nil && !r.quiet[d.Reason] {
		if st, err := r.sign(s.Form, o.Hop, s.Digest(), o.Iss, StateRejected, d.Reason, "", nil); err == nil {
			d.Reply = &st
		}
	}
	return d, d.Err
}

// rejectReplayed rejects with "replay" after a loss of records (section 8.4) an offer
// that passed steps 1 to 3, and remembers its pair as section 5.2 requires, with the
// rejection as its last status. The rejection sets no state: the record is
// recReplayed, kept until exp plus the skew.
func (r *Receiver) rejectReplayed(ctx context.Context, key string, rec *hopRecord, d *Decision, in Inbound, now time.Time) (*Decision, error) {
	d.Outcome = OutcomeRejected
	d.Reason = ReasonOf(d.Err)
	o := d.Offer
	next := *rec
	next.State = recReplayed
	var st Signed
	if r.key != nil && !r.quiet[d.Reason] {
		var err error
		if st, err = r.sign(Form(rec.Form), o.Hop, o.Digest, o.Iss, StateRejected, d.Reason, "", nil); err == nil {
			next.Status = st.Octets
		}
	}
	existing, err := r.records.Create(ctx, key, next.encode(), r.receivedTTL(o.Exp, now))
	if err != nil {
		d.Reason, d.Err = "", err
		return d, err
	}
	if existing != nil { // a concurrent copy got there first
		return r.remembered(ctx, key, existing, o, in)
	}
	if next.Status != nil {
		d.Reply = &st
	}
	return d, d.Err
}

// rejectRecorded rejects at steps 5 to 7: the pair is remembered, and the "rejected"
// status becomes its last status, resent to retransmissions.
func (r *Receiver) rejectRecorded(ctx context.Context, key string, rec *hopRecord, old []byte, d *Decision, now time.Time) (*Decision, error) {
	d.Outcome = OutcomeRejected
	d.Reason = ReasonOf(d.Err)
	o := d.Offer
	next := *rec
	next.State = string(StateRejected)
	var st Signed
	if r.key != nil && !r.quiet[d.Reason] {
		var err error
		st, err = r.sign(Form(rec.Form), o.Hop, o.Digest, o.Iss, StateRejected, d.Reason, "", nil)
		if err == nil {
			next.Status = st.Octets
		}
	}
	ok, err := r.records.Swap(ctx, key, old, next.encode(), r.terminalTTL(o.Exp, now))
	if err == nil && ok && next.Status != nil {
		d.Reply = &st
	}
	return d, d.Err
}

// remembered handles an offer whose (iss, hop) is remembered: a retransmission (same
// digest, section 5.3) or equivocation (different digest, section 5.6).
func (r *Receiver) remembered(ctx context.Context, key string, raw []byte, vo *VerifiedOffer, in Inbound) (*Decision, error) {
	rec, err := decodeRecord(raw)
	if err != nil {
		return r.decide(&Decision{Outcome: OutcomeRejected, Step: 4, Offer: vo, Err: err})
	}
	o := vo.Offer
	digest, _ := base64.RawURLEncoding.DecodeString(vo.Digest.Val)
	d := &Decision{Offer: vo, Step: 4}
	same := bytes.Equal(digest, rec.Digest)
	// Other octets over the same signed content: a copy whose signature (or unsigned
	// part) someone else changed, not a second offer signed by iss.
	malleated := !same && len(rec.Content) > 0 && bytes.Equal(vo.content[:], rec.Content)
	if same || malleated {
		d.Outcome = OutcomeRetransmission
		d.Err = errcode.New(errcode.HandoffRetransmission, "offer %s was already received; it is not processed again", o.Hop)
		if malleated {
			d.Malleated, d.Flagged = true, true
			d.Err = errcode.New(errcode.HandoffRetransmission,
				"offer %s was already received; this copy has the same signed content with other octets (a malleated signature), answered as a retransmission", o.Hop)
			if r.flag != nil {
				r.flag(Flag{Kind: "malleated-copy", Iss: o.Iss, Hop: o.Hop,
					Detail: "offer " + vo.Digest.Val + " is a malleated copy of " + rec.digest().Val})
			}
		}
		reply := rec.lastStatus()
		if reply == nil && State(rec.State) == StateAccepted && r.key != nil {
			// Taken, but no status was sent (a crash between the two): send "accepted",
			// for the remembered offer.
			st, err := r.sign(Form(rec.Form), o.Hop, rec.digest(), o.Iss, StateAccepted, "", "", nil)
			if err == nil {
				next := *rec
				next.Status = st.Octets
				if ok, err := r.records.Swap(ctx, key, raw, next.encode(), store.NoExpiry); err == nil && ok {
					reply = &st
				}
			}
		}
		if reply != nil {
			if in.AuthenticatedSender == o.Iss {
				d.Reply = reply
			} else {
				d.Withheld = true
			}
		}
		return d, d.Err
	}

	// Equivocation: never accepted, never answered for itself.
	d.Outcome, d.Reason, d.Flagged = OutcomeEquivocation, ReasonEquivocation, true
	d.Err = reject(ReasonEquivocation, "a second offer for hop %s of %q with other octets", o.Hop, o.Iss)
	if r.flag != nil {
		r.flag(Flag{Kind: "equivocation", Iss: o.Iss, Hop: o.Hop, Detail: "offer " + vo.Digest.Val + " conflicts with " + rec.digest().Val})
	}
	next := *rec
	next.Equivocated = true
	now := r.now()
	// rejectFirst signs the rejection of the first offer with reason equivocation and
	// stores it in next; the reply carries it once the record is swapped.
	rejectFirst := func() {
		var st Signed
		if r.key != nil {
			if st, err = r.sign(Form(rec.Form), o.Hop, rec.digest(), o.Iss, StateRejected, ReasonEquivocation, "", nil); err == nil {
				next.Status = st.Octets
			}
		}
		if ok, err := r.records.Swap(ctx, key, raw, next.encode(), r.terminalTTL(rec.Exp, now)); err == nil && ok && next.Status != nil {
			d.Reply = &st
		}
	}
	switch {
	case rec.State == recReceived && len(rec.Status) == 0:
		// Neither taken nor answered: reject the first, with reason equivocation.
		next.State = string(StateRejected)
		rejectFirst()
	case State(rec.State) == StateCanceled && rec.Untaken && rec.Outcome == "" && len(rec.Status) == 0:
		// Canceled by the delegator before the delegate took it, and unanswered: the
		// delegate has "neither taken the work nor answered the first", so it rejects
		// the first with reason equivocation (section 5.6). There is no work to stop.
		// The hop keeps "canceled", its first terminal state; the rejection is its
		// outcome, which resolves the hop for the delegator (section 5.3).
		next.Outcome = string(StateRejected)
		rejectFirst()
	case rec.State == recReplayed, State(rec.State) == StateCanceled && rec.Untaken && rec.Outcome == "":
		// Answered "replay" after a loss of records (and perhaps canceled since): the
		// first was answered, so no other status for it, and this process took no
		// work to stop.
		ttl := r.receivedTTL(rec.Exp, now)
		if rec.State != recReplayed {
			ttl = r.terminalTTL(rec.Exp, now)
		}
		_, _ = r.records.Swap(ctx, key, raw, next.encode(), ttl)
	case rec.terminal():
		// Already rejected or terminal: no other status for the first offer.
	default:
		// Taken, no terminal status: stop the work if possible; once the outcome is
		// known, Complete or Fail (which then defaults to reason equivocation).
		d.StopWork = true
		_, _ = r.records.Swap(ctx, key, raw, next.encode(), store.NoExpiry)
	}
	return d, d.Err
}
