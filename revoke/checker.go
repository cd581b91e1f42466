package revoke

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// DefaultBound is how old a Checker's snapshot may be when it answers, unless
// WithBound says otherwise: a revocation is in force everywhere at most this long after
// it was stored, even when no change notice arrives.
const DefaultBound = 5 * time.Second

// Subject is what a token request or a verified request is in. Empty fields are not
// checked.
type Subject struct {
	// Dialog is the request's dialog (Dialog-Context dlg, or the token's tctx.dlg).
	Dialog string
	// LinkedFrom names the dialogs Dialog was linked from, where the caller knows the
	// link (dialog-binding section 11); a revocation of one of them with Linked set
	// revokes Dialog too.
	LinkedFrom []string
	// Workloads are the workloads involved: the sender or requester, the subject, the
	// initiator.
	Workloads []string
	// Txn is the transaction, the Txn-Token's txn.
	Txn string
}

// Checker answers Check from a local snapshot of a Store no older than its bound.
type Checker struct {
	store Store
	now   func() time.Time
	bound time.Duration

	snap atomic.Pointer[snapshot]
	gen  atomic.Uint64 // bumped by every change notice
	mu   sync.Mutex    // one fetch at a time
}

type snapshot struct {
	at    time.Time // taken no earlier than this
	gen   uint64    // the notices heard before the fetch began
	n     int
	byKey [3]map[string]Revocation // Dialog, Workload, Txn
}

// NewChecker returns a Checker of s (options WithClock, WithBound). Call Start to have
// it hear s's change notices when s is a Notifier.
func NewChecker(s Store, opts ...Option) *Checker {
	o := newOptions(opts)
	if o.bound <= 0 {
		o.bound = DefaultBound
	}
	return &Checker{store: s, now: o.now, bound: o.bound}
}

// Bound is the checker's bound.
func (c *Checker) Bound() time.Duration { return c.bound }

// Start subscribes to the store's change notices, when it is a Notifier, until ctx
// ends: each notice makes the next Check fetch again, and a fetch starts at once in the
// background so that checks seldom wait for it. A store that is not a Notifier (or a
// subscription that fails or ends) leaves the bound's polling, which always holds.
func (c *Checker) Start(ctx context.Context) error {
	n, ok := c.store.(Notifier)
	if !ok {
		return nil
	}
	ch, err := n.Subscribe(ctx)
	if err != nil {
		return err
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-ch:
				if !ok {
					return
				}
				c.gen.Add(1)
				_ = c.Refresh(ctx) // a failure leaves the next Check to fetch again
			}
		}
	}()
	return nil
}

// Notify makes the next Check fetch again (what a change notice does).
func (c *Checker) Notify() { c.gen.Add(1) }

// Refresh fetches the store's revocations now.
func (c *Checker) Refresh(ctx context.Context) error {
	_, err := c.fetch(ctx, nil)
	return err
}

// fetch takes a new snapshot unless one newer than stale already replaced it.
func (c *Checker) fetch(ctx context.Context, stale *snapshot) (*snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.snap.Load(); stale != nil && cur != stale && c.fresh(cur) {
		return cur, nil
	}
	gen, at := c.gen.Load(), c.now()
	list, err := c.store.List(ctx)
	if err != nil {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "the revocations could not be read")
	}
	s := &snapshot{at: at, gen: gen, n: len(list)}
	for i := range s.byKey {
		s.byKey[i] = map[string]Revocation{}
	}
	for _, r := range list {
		if m := s.mapOf(r.Kind); m != nil {
			m[r.ID] = r
		}
	}
	c.snap.Store(s)
	return s, nil
}

func (s *snapshot) mapOf(k Kind) map[string]Revocation {
	switch k {
	case Dialog:
		return s.byKey[0]
	case Workload:
		return s.byKey[1]
	case Txn:
		return s.byKey[2]
	}
	return nil
}

func (c *Checker) fresh(s *snapshot) bool {
	return s != nil && s.gen == c.gen.Load() && c.now().Sub(s.at) < c.bound
}

// Check returns nil when nothing sub is in is revoked; a failed errcode.DialogRevoked,
// WorkloadRevoked or TxnRevoked when something is (without the operator's reason); and an
// Incomplete errcode.StoreUnavailable when the snapshot is older than the bound (or a
// change was heard) and the store cannot be read (fail closed).
func (c *Checker) Check(ctx context.Context, sub Subject) error {
	s := c.snap.Load()
	if !c.fresh(s) {
		var err error
		if s, err = c.fetch(ctx, s); err != nil {
			return err
		}
	}
	if s.n == 0 {
		return nil
	}
	now := c.now()
	if sub.Dialog != "" {
		if r, ok := s.byKey[0][sub.Dialog]; ok && r.Live(now) {
			return refusal(errcode.DialogRevoked, r, "the dialog is revoked")
		}
	}
	for _, l := range sub.LinkedFrom {
		if r, ok := s.byKey[0][l]; ok && r.Linked && r.Live(now) {
			return refusal(errcode.DialogRevoked, r, "the dialog this one was linked from is revoked, with its linked dialogs")
		}
	}
	for _, w := range sub.Workloads {
		if r, ok := s.byKey[1][w]; ok && w != "" && r.Live(now) {
			return refusal(errcode.WorkloadRevoked, r, "workload "+errcode.Cut(w)+" is revoked")
		}
	}
	if sub.Txn != "" {
		if r, ok := s.byKey[2][sub.Txn]; ok && r.Live(now) {
			return refusal(errcode.TxnRevoked, r, "the transaction is revoked")
		}
	}
	return nil
}

// refusal is the error of a revoked subject. The operator's reason is not sent: it is
// for the operator's records (the admin API lists it), not for the caller.
func refusal(code errcode.Code, _ Revocation, what string) error {
	return errcode.New(code, "%s by the trust domain's operator", what)
}
