package revoke

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Store keeps the revocations of a trust domain.
//
// Put stores r (validated with Revocation.Validate), replacing one of the same Key.
// Delete removes the revocation of kind and id, reporting whether one was live. List
// returns every live revocation. Every error that is not a caller mistake
// (errcode.InvalidRequest) is an Incomplete errcode.StoreUnavailable: callers never
// read an error as "nothing is revoked".
type Store interface {
	Put(ctx context.Context, r Revocation) error
	Delete(ctx context.Context, kind Kind, id string) (bool, error)
	List(ctx context.Context) ([]Revocation, error)
}

// Notifier is a Store that tells of changes: Subscribe returns a channel that receives
// (a value, possibly coalesced) after every change any writer made, until ctx ends.
// A Checker refetches on each.
type Notifier interface {
	Subscribe(ctx context.Context) (<-chan struct{}, error)
}

// Option configures a Memory or a Checker.
type Option func(*options)

type options struct {
	now   func() time.Time
	bound time.Duration
}

// WithClock sets the clock (tests move it instead of sleeping).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithBound sets how old a Checker's snapshot may be when it answers (DefaultBound).
func WithBound(d time.Duration) Option { return func(o *options) { o.bound = d } }

func newOptions(opts []Option) options {
	o := options{now: time.Now, bound: DefaultBound}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Memory is a Store for one process: lost on restart, so only for a single process
// and tests. It notifies its subscribers of every change.
type Memory struct {
	now  func() time.Time
	mu   sync.Mutex
	m    map[string]Revocation
	subs []chan struct{}
}

var (
	_ Store    = (*Memory)(nil)
	_ Notifier = (*Memory)(nil)
)

// NewMemory returns an empty Memory (option WithClock).
func NewMemory(opts ...Option) *Memory {
	return &Memory{now: newOptions(opts).now, m: map[string]Revocation{}}
}

// Put implements Store.
func (s *Memory) Put(ctx context.Context, r Revocation) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return errcode.Unavailable(errcode.StoreUnavailable, err, "revocation not stored")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, v := range s.m {
		if !v.Live(now) {
			delete(s.m, k)
		}
	}
	if _, ok := s.m[r.Key()]; !ok && len(s.m) >= MaxRevocations {
		return errcode.Unavailable(errcode.StoreUnavailable, nil, "the revocation store is full (%d live revocations)", MaxRevocations)
	}
	s.m[r.Key()] = r
	s.notifyLocked()
	return nil
}

// Delete implements Store.
func (s *Memory) Delete(ctx context.Context, kind Kind, id string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, errcode.Unavailable(errcode.StoreUnavailable, err, "revocation not deleted")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[Key(kind, id)]
	if !ok {
		return false, nil
	}
	delete(s.m, Key(kind, id))
	s.notifyLocked()
	return r.Live(s.now()), nil
}

// List implements Store: the live revocations, ordered by kind and identifier.
func (s *Memory) List(ctx context.Context) ([]Revocation, error) {
	if err := ctx.Err(); err != nil {
		return nil, errcode.Unavailable(errcode.StoreUnavailable, err, "revocations not listed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := make([]Revocation, 0, len(s.m))
	for _, r := range s.m {
		if r.Live(now) {
			out = append(out, r)
		}
	}
	Sort(out)
	return out, nil
}

// Subscribe implements Notifier.
func (s *Memory) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs = append(s.subs, ch)
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, c := range s.subs {
			if c == ch {
				s.subs = append(s.subs[:i], s.subs[i+1:]...)
				break
			}
		}
	}()
	return ch, nil
}

func (s *Memory) notifyLocked() {
	for _, c := range s.subs {
		select {
		case c <- struct{}{}:
		default: // one pending notice is enough: the checker fetches everything
		}
	}
}

// Sort orders revocations by kind, then identifier.
func Sort(rs []Revocation) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Key() < rs[j].Key() })
}
