package dialog

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/store"
)

// DefaultDialogTTL is how long a participant keeps a dialog it created.
const DefaultDialogTTL = 24 * time.Hour

// Registry is a stateful participant's record of its dialogs (dialog-binding section 5):
// which dialog identifiers are in use and who initiated each. A stateless participant
// (a tool) has no Registry and takes the caller's context as given.
type Registry struct {
	records store.Records
	ttl     time.Duration
	now     func() time.Time
	prefix  string
}

// RegistryOption configures a Registry.
type RegistryOption func(*Registry)

// WithDialogTTL sets how long a dialog is kept (default 24h).
func WithDialogTTL(d time.Duration) RegistryOption { return func(r *Registry) { r.ttl = d } }

// WithRegistryClock injects the clock (creation times in records).
func WithRegistryClock(now func() time.Time) RegistryOption {
	return func(r *Registry) { r.now = now }
}

// NewRegistry keeps dialogs in records (memory or Redis: store.NewMemoryRecords,
// redisstore.NewRecords).
func NewRegistry(records store.Records, opts ...RegistryOption) *Registry {
	r := &Registry{records: records, ttl: DefaultDialogTTL, now: time.Now, prefix: "dialog:"}
	for _, o := range opts {
		o(r)
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
//     sender (initiator_mismatch otherwise: nobody starts a dialog in another's name);
//   - a known dialog must have the same initiator (dialog_in_use when the sender tries
//     to establish a dialog identifier someone else holds, initiator_mismatch when a
//     request names another initiator for it).
//
// A store failure is an Incomplete error: the request is rejected, never let through.
func (r *Registry) Accept(ctx context.Context, dc *Context, sender identifier.ID) (Outcome, error) {
	key := r.prefix + dc.DLG()
	if dc.Initiator().Equal(sender) {
		rec, _ := json.Marshal(Record{DLG: dc.DLG(), Initiator: dc.Initiator().String(), Created: r.now().Unix()})
		existing, err := r.records.Create(ctx, key, rec, r.ttl)
		if err != nil {
			return 0, err
		}
		if existing == nil {
			return Established, nil
		}
		prev, err := decodeRecord(existing)
		if err != nil {
			return 0, err
		}
		if prev.Initiator != dc.Initiator().String() {
			return 0, errcode.New(errcode.DialogInUse, "dialog %s is in use by another initiator", dc.DLG())
		}
		return Continued, nil
	}
	existing, err := r.records.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if existing == nil {
		return 0, errcode.New(errcode.InitiatorMismatch, "dialog %s is unknown here and the sender %s is not its initiator", dc.DLG(), sender)
	}
	prev, err := decodeRecord(existing)
	if err != nil {
		return 0, err
	}
	if prev.Initiator != dc.Initiator().String() {
		return 0, errcode.New(errcode.InitiatorMismatch, "dialog %s was initiated by another workload", dc.DLG())
	}
	return Continued, nil
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
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "dialog record is unreadable")
	}
	return &rec, nil
}
