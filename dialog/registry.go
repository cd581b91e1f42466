package dialog

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/store"
)

// DefaultDialogTTL is how long a participant keeps a dialog it created.
const DefaultDialogTTL = 24 * time.Hour

// DefaultMaxDialogsPerSender bounds how many dialogs one sender may have established
// and not yet expired at a Registry: without a bound, one workload could fill the
// records store and keep every other initiator from establishing a dialog.
const DefaultMaxDialogsPerSender = 1000

// MaxDialogsPerSenderLimit is the largest per-sender bound WithMaxDialogsPerSender
// accepts: a sender's dialogs are listed in one record of at most store.MaxRecordSize.
const MaxDialogsPerSenderLimit = store.MaxRecordSize / senderEntrySize

// Registry is a stateful participant's record of its dialogs (dialog-binding section 5):
// which dialog identifiers are in use and who initiated each. A stateless participant
// (a tool) has no Registry and takes the caller's context as given.
type Registry struct {
	records store.Records
	ttl     time.Duration
	now     func() time.Time
	prefix  string
	// perSender bounds the live dialogs one sender established (0: unbounded).
	perSender int
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// WithDialogTTL sets how long a dialog is kept (default 24h).
func WithDialogTTL(d time.Duration) RegistryOption { return func(r *Registry) { r.ttl = d } }

// WithClock sets the clock of NewRegistry (default time.Now): creation times in
// records, dialog expiry. Time is an input: tests move it instead of sleeping. A nil
// clock keeps the default. The Registry is the one type of this package that keeps
// time; the provenance verifier takes its clock from its WIT validator.
func WithClock(now func() time.Time) RegistryOption {
	return func(r *Registry) { r.now = now }
}

// WithMaxDialogsPerSender bounds how many live dialogs one sender may establish
// (default DefaultMaxDialogsPerSender; at most MaxDialogsPerSenderLimit, larger values
// are cut to it). A request that would establish one more is refused with
// too_many_dialogs; continuing an existing dialog is never counted.
func WithMaxDialogsPerSender(n int) RegistryOption {
	return func(r *Registry) {
		if n > 0 {
			r.perSender = min(n, MaxDialogsPerSenderLimit)
		}
	}
}

// NewRegistry keeps dialogs in records (memory or Redis: store.NewMemoryRecords,
// redisstore.NewRecords).
func NewRegistry(records store.Records, opts ...RegistryOption) *Registry {
	r := &Registry{records: records, ttl: DefaultDialogTTL, now: time.Now, prefix: "dialog:", perSender: DefaultMaxDialogsPerSender}
	for _, o := range opts {
		o(r)
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r
}

// Record is what a Registry keeps about a dialog.
type Record struct {
	DLG       string `json:"dlg"`
	Initiator string `json:"initiator"`
	Created   int64  `json:"created"`
}

// Outcome says what Accept did.
type Outcome int

const (
	// Established: this request created the dialog (section 5).
	Established Outcome = iota + 1
	// Continued: the dialog existed with the same initiator.
	Continued
)

// Accept applies section 5 to a request in the dialog dc whose proof was verified with
// the WIT of sender:
//   - an unknown dialog is created only when the initiator named in the field is the
//     sender (initiator_mismatch otherwise: nobody starts a dialog in another's name),
//     and only while the sender holds fewer live dialogs than the per-sender bound
//     (too_many_dialogs);
//   - a known dialog must have the same initiator (dialog_in_use when the sender tries
//     to establish a dialog identifier someone else holds, initiator_mismatch when a
//     request names another initiator for it).
//
// Creation is atomic in the store: of two requests proposing one new identifier, only
// one establishes it. A receiver calls Check first and Accept only once every other
// check of the request has passed.
//
// A store failure is an Incomplete error: the request is rejected, never let through.
func (r *Registry) Accept(ctx context.Context, dc *Context, sender identifier.ID) (Outcome, error) {
	key := r.prefix + dc.DLG()
	existing, err := r.records.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if existing != nil || !dc.Initiator().Equal(sender) {
		return r.known(existing, dc, sender)
	}
	if err := r.reserve(ctx, sender, dc.DLG()); err != nil {
		return 0, err
	}
	rec, _ := json.Marshal(Record{DLG: dc.DLG(), Initiator: dc.Initiator().String(), Created: r.now().Unix()})
	existing, err = r.records.Create(ctx, key, rec, r.ttl)
	if err != nil {
		// The outcome is unknown: the reservation stays, counting against the sender
		// until it expires, rather than letting the bound be passed.
		return 0, err
	}
	if existing != nil {
		// Another request established it first; this one did not take a place.
		if err := r.release(ctx, sender, dc.DLG()); err != nil {
			return 0, err
		}
		return r.known(existing, dc, sender)
	}
	return Established, nil
}

// Check reports what Accept would do now, changing nothing: the same refusals, and
// Established for an unknown dialog the sender may establish. Accept still decides (a
// concurrent request may establish the dialog in between); Check lets a receiver refuse
// early without a refused request ever taking a dialog identifier.
func (r *Registry) Check(ctx context.Context, dc *Context, sender identifier.ID) (Outcome, error) {
	existing, err := r.records.Get(ctx, r.prefix+dc.DLG())
	if err != nil {
		return 0, err
	}
	if existing != nil || !dc.Initiator().Equal(sender) {
		return r.known(existing, dc, sender)
	}
	list, err := r.records.Get(ctx, r.senderKey(sender))
	if err != nil {
		return 0, err
	}
	live, err := liveEntries(list, r.now(), "")
	if err != nil {
		return 0, err
	}
	if len(live)/senderEntrySize >= r.perSender {
		return 0, r.tooMany(sender)
	}
	return Established, nil
}

// known applies section 5 to a dialog whose record is existing (nil: unknown here, and
// the sender is not the initiator named in dc).
func (r *Registry) known(existing []byte, dc *Context, sender identifier.ID) (Outcome, error) {
	if existing == nil {
		return 0, errcode.New(errcode.InitiatorMismatch, "dialog %s is unknown here and the sender %s is not its initiator", dc.DLG(), sender)
	}
	prev, err := decodeRecord(existing)
	if err != nil {
		return 0, err
	}
	if prev.Initiator != dc.Initiator().String() {
		if dc.Initiator().Equal(sender) {
			return 0, errcode.New(errcode.DialogInUse, "dialog %s is in use by another initiator", dc.DLG())
		}
		return 0, errcode.New(errcode.InitiatorMismatch, "dialog %s was initiated by another workload", dc.DLG())
	}
	return Continued, nil
}

// A sender's dialogs are listed in one record under senderKey: one entry per dialog it
// established, the first 12 octets of SHA-256 of the dlg and the entry's expiry in Unix
// seconds (8 octets, big-endian). Expired entries are dropped whenever the list is
// written; the record lives as long as its newest entry.
const (
	senderEntrySize  = 20
	senderDigestSize = 12
)

func (r *Registry) senderKey(sender identifier.ID) string {
	return "dialog-sender:" + sender.String()
}

func (r *Registry) tooMany(sender identifier.ID) error {
	return errcode.New(errcode.TooManyDialogs, "the sender %s already holds %d dialogs here, the limit", sender, r.perSender)
}

func dialogDigest(dlg string) []byte {
	h := sha256.Sum256([]byte(dlg))
	return h[:senderDigestSize]
}

// liveEntries returns the entries of list that have not expired at now, without the
// entry of the dialog without (when not "").
func liveEntries(list []byte, now time.Time, without string) ([]byte, error) {
	if len(list)%senderEntrySize != 0 {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, nil, "dialog list record is unreadable")
	}
	var drop []byte
	if without != "" {
		drop = dialogDigest(without)
	}
	live := make([]byte, 0, len(list)+senderEntrySize)
	for i := 0; i < len(list); i += senderEntrySize {
		e := list[i : i+senderEntrySize]
		if int64(binary.BigEndian.Uint64(e[senderDigestSize:])) <= now.Unix() {
			continue
		}
		if drop != nil && string(e[:senderDigestSize]) == string(drop) {
			drop = nil // one entry per establishment
			continue
		}
		live = append(live, e...)
	}
	return live, nil
}

// maxListRetries bounds the compare-and-swap rounds on a sender's list; past it the
// store is too contended to complete the check.
const maxListRetries = 8

// reserve adds dlg to the sender's list, refusing when the list is full.
func (r *Registry) reserve(ctx context.Context, sender identifier.ID, dlg string) error {
	key := r.senderKey(sender)
	for range maxListRetries {
		now := r.now()
		old, err := r.records.Get(ctx, key)
		if err != nil {
			return err
		}
		live, err := liveEntries(old, now, "")
		if err != nil {
			return err
		}
		if len(live)/senderEntrySize >= r.perSender {
			return r.tooMany(sender)
		}
		live = append(live, dialogDigest(dlg)...)
		live = binary.BigEndian.AppendUint64(live, uint64(now.Add(r.ttl).Unix()))
		if old == nil {
			existing, err := r.records.Create(ctx, key, live, r.ttl)
			if err != nil {
				return err
			}
			if existing == nil {
				return nil
			}
			continue
		}
		ok, err := r.records.Swap(ctx, key, old, live, r.ttl)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return errcode.Unavailable(errcode.StoreUnavailable, nil, "the dialog list of %s kept changing", sender)
}

// release takes the entry of dlg off the sender's list again.
func (r *Registry) release(ctx context.Context, sender identifier.ID, dlg string) error {
	key := r.senderKey(sender)
	for range maxListRetries {
		old, err := r.records.Get(ctx, key)
		if err != nil || old == nil {
			return err
		}
		live, err := liveEntries(old, r.now(), dlg)
		if err != nil {
			return err
		}
		var ok bool
		if len(live) == 0 {
			ok, err = r.records.Delete(ctx, key, old)
		} else {
			ok, err = r.records.Swap(ctx, key, old, live, r.ttl)
		}
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return errcode.Unavailable(errcode.StoreUnavailable, nil, "the dialog list of %s kept changing", sender)
}

// Lookup returns the record of dlg, or nil when this participant does not know it.
func (r *Registry) Lookup(ctx context.Context, dlg string) (*Record, error) {
	b, err := r.records.Get(ctx, r.prefix+dlg)
	if err != nil || b == nil {
		return nil, err
	}
	return decodeRecord(b)
}

func decodeRecord(b []byte) (*Record, error) {
	var rec Record
	if err := netjson.DecodeObject(b, &rec); err != nil {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "dialog record is unreadable")
	}
	return &rec, nil
}
