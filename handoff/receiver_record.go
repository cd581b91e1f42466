package handoff

import (
	"bytes"
	"context"
	"encoding/base64"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Delegate-side record states. "received" is a remembered offer on which the delegate
// has decided nothing and sent nothing.
const (
	recReceived = "received"
	// recReplayed is a pair that passed steps 1 to 3 after a loss of records and was
	// answered "rejected" with reason "replay" (section 8.4). It is remembered (section
	// 5.2), so that a copy gets the same answer and another offer for the pair is
	// equivocation, but the rejection sets no hop state and nothing may be decided on
	// the hop.
	recReplayed = "rejected-replay"
)

// hopRecord is what the delegate keeps per (iss, hop) (section 5.2): the handoff digest
// of the offer, the state, and the octets of the last status it sent.
type hopRecord struct {
	Digest      []byte `cbor:"1,keyasint"`
	Form        int    `cbor:"2,keyasint"`
	State       string `cbor:"3,keyasint"`
	Status      []byte `cbor:"4,keyasint,omitempty"`
	Exp         int64  `cbor:"5,keyasint"`
	Equivocated bool   `cbor:"6,keyasint,omitempty"`
	// Outcome is "completed" or "failed" when it was sent after a cancel (the state
	// stays "canceled": each party keeps the first terminal state, section 5.6).
	Outcome string `cbor:"7,keyasint,omitempty"`
	// Content names the offer's signed content (element.signedContent), to tell a
	// malleated copy from equivocation. Absent in records written before it was kept:
	// every other digest is then equivocation, as it was.
	Content []byte `cbor:"8,keyasint,omitempty"`
	// Untaken is true for a hop canceled before the delegate took it: equivocation on
	// it then rejects the first offer (section 5.6) instead of stopping work.
	Untaken bool `cbor:"9,keyasint,omitempty"`
}

func (h *hopRecord) encode() []byte {
	b, err := cborEnc.Marshal(h)
	if err != nil {
		panic(err) // a struct of plain fields always encodes
	}
	return b
}

func decodeRecord(b []byte) (*hopRecord, error) {
	var h hopRecord
	if err := cbor.Unmarshal(b, &h); err != nil || len(h.Digest) == 0 {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "unreadable handoff record")
	}
	return &h, nil
}

func (h *hopRecord) digest() Digest {
	return Digest{Alg: SHA256, Val: base64.RawURLEncoding.EncodeToString(h.Digest)}
}

func (h *hopRecord) lastStatus() *Signed {
	if len(h.Status) == 0 {
		return nil
	}
	return &Signed{Form: Form(h.Form), Octets: bytes.Clone(h.Status)}
}

// terminal reports whether the delegate has sent a terminal status for the hop.
func (h *hopRecord) terminal() bool {
	switch State(h.State) {
	case StateRejected, StateCompleted, StateFailed:
		return true
	}
	return h.Outcome != ""
}

func recordKey(iss, hop string) string { return "handoff\x00" + iss + "\x00" + hop }

func (r *Receiver) seconds(d time.Duration) int64 { return int64(d / time.Second) }

// receivedTTL keeps a remembered pair at least until exp plus the skew (section 5.2).
func (r *Receiver) receivedTTL(exp int64, now time.Time) time.Duration {
	until := time.Unix(min(exp, 1<<40), 0).Add(r.skew).Sub(now)
	return max(until, time.Second)
}

// terminalTTL keeps a hop for the retention period after a terminal status, and at
// least as long as the pair itself must be remembered.
func (r *Receiver) terminalTTL(exp int64, now time.Time) time.Duration {
	return max(r.receivedTTL(exp, now), r.retention, time.Second)
}

// load returns the record of (iss, hop) and its raw value.
func (r *Receiver) load(ctx context.Context, iss, hop string) (*hopRecord, []byte, error) {
	raw, err := r.records.Get(ctx, recordKey(iss, hop))
	if err != nil {
		return nil, nil, err
	}
	if raw == nil {
		return nil, nil, errcode.New(errcode.HandoffOfferMismatch, "no record of hop %s of %q", hop, iss)
	}
	rec, err := decodeRecord(raw)
	return rec, raw, err
}

// HopRecord is the delegate's view of one hop.
type HopRecord struct {
	Offer Digest
	// State is "received" (remembered, nothing decided), or a status state.
	State       string
	Outcome     State
	LastStatus  *Signed
	Equivocated bool
}

// Lookup returns the delegate's record of (iss, hop).
func (r *Receiver) Lookup(ctx context.Context, iss, hop string) (*HopRecord, error) {
	rec, _, err := r.load(ctx, iss, hop)
	if err != nil {
		return nil, err
	}
	return &HopRecord{Offer: rec.digest(), State: rec.State, Outcome: State(rec.Outcome), LastStatus: rec.lastStatus(),
		Equivocated: rec.Equivocated}, nil
}

// Forget drops the record of a hop, for an operator who has resolved a hop whose
// outcome could not be learned (section 5.4). A forgotten hop identifier can be reused
// undetected (section 8.4).
func (r *Receiver) Forget(ctx context.Context, iss, hop string) error {
	_, raw, err := r.load(ctx, iss, hop)
	if err != nil {
		return err
	}
	ok, err := r.records.Delete(ctx, recordKey(iss, hop), raw)
	if err != nil {
		return err
	}
	if !ok {
		return errcode.New(errcode.HandoffInvalidTransition, "hop changed while it was forgotten; try again")
	}
	return nil
}
