package revoke_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revoketest"
)

func put(t *testing.T, s revoke.Store, c *testkit.Clock, k revoke.Kind, id string, linked bool) {
	t.Helper()
	now := c.Now()
	revoketest.MustPut(t, s, revoke.Revocation{Kind: k, ID: id, Linked: linked, Reason: "secret reason", Created: now, Expires: now.Add(time.Hour)})
}

// Issue 26: each kind refuses with its own code, only what it names, and the
// operator's reason is not sent to the caller.
func TestIssue26CheckRefusesWhatIsRevoked(t *testing.T) {
	c := newClock()
	s := revoke.NewMemory(revoke.WithClock(c.Now))
	put(t, s, c, revoke.Dialog, "d1", false)
	put(t, s, c, revoke.Dialog, "d2", true)
	put(t, s, c, revoke.Workload, "wimse://a.example/bad", false)
	put(t, s, c, revoke.Txn, "t1", false)
	ch := revoke.NewChecker(s, revoke.WithClock(c.Now), revoke.WithBound(time.Second))
	ctx := context.Background()
	for _, tc := range []struct {
		sub  revoke.Subject
		want errcode.Code
	}{
		{revoke.Subject{Dialog: "d1"}, errcode.DialogRevoked},
		{revoke.Subject{Dialog: "d3", LinkedFrom: []string{"d2"}}, errcode.DialogRevoked},
		{revoke.Subject{Dialog: "d3", LinkedFrom: []string{"d1"}}, ""}, // d1 revoked without its linked dialogs
		{revoke.Subject{Workloads: []string{"wimse://a.example/ok", "wimse://a.example/bad"}}, errcode.WorkloadRevoked},
		{revoke.Subject{Txn: "t1"}, errcode.TxnRevoked},
		{revoke.Subject{Dialog: "d1x", Txn: "t2", Workloads: []string{"wimse://a.example/ok"}}, ""},
		{revoke.Subject{Dialog: "t1"}, ""}, // a txn's id is not a dialog's
	} {
		err := ch.Check(ctx, tc.sub)
		if errcode.CodeOf(err) != tc.want && !(tc.want == "" && err == nil) {
			t.Errorf("Check(%+v) = %v, want %q", tc.sub, err, tc.want)
		}
		if err != nil && (errcode.KindOf(err) != errcode.Failed || containsReason(err)) {
			t.Errorf("Check(%+v) = %v: want a failed check without the reason", tc.sub, err)
		}
	}
}

func containsReason(err error) bool {
	var e *errcode.Error
	return errors.As(err, &e) && (len(e.Detail) == 0 || contains(e.Detail, "secret reason"))
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// Issue 26: a revocation made after the checker's snapshot is in force once the bound
// has passed, even when no change notice arrives (polling), and not before a notice or
// the bound (the cache is really used).
func TestIssue26BoundHoldsWithoutNotices(t *testing.T) {
	c := newClock()
	s := revoke.NewMemory(revoke.WithClock(c.Now))
	ch := revoke.NewChecker(s, revoke.WithClock(c.Now), revoke.WithBound(3*time.Second))
	ctx := context.Background()
	if err := ch.Check(ctx, revoke.Subject{Dialog: "d1"}); err != nil {
		t.Fatal(err)
	}
	put(t, s, c, revoke.Dialog, "d1", false)
	c.Advance(3*time.Second - time.Nanosecond)
	if err := ch.Check(ctx, revoke.Subject{Dialog: "d1"}); err != nil {
		t.Fatalf("within the bound, without a notice: %v (want the cached answer)", err)
	}
	c.Advance(time.Nanosecond)
	if err := ch.Check(ctx, revoke.Subject{Dialog: "d1"}); !errcode.Is(err, errcode.DialogRevoked) {
		t.Fatalf("after the bound: %v, want dialog_revoked", err)
	}
}

// Issue 26: a change notice makes the very next check see the change.
func TestIssue26NoticeRefreshes(t *testing.T) {
	c := newClock()
	s := revoke.NewMemory(revoke.WithClock(c.Now))
	ch := revoke.NewChecker(s, revoke.WithClock(c.Now), revoke.WithBound(time.Hour))
	ctx := context.Background()
	if err := ch.Check(ctx, revoke.Subject{Txn: "t"}); err != nil {
		t.Fatal(err)
	}
	put(t, s, c, revoke.Txn, "t", false)
	ch.Notify()
	if err := ch.Check(ctx, revoke.Subject{Txn: "t"}); !errcode.Is(err, errcode.TxnRevoked) {
		t.Fatalf("after a notice: %v", err)
	}
	if _, err := s.Delete(ctx, revoke.Txn, "t"); err != nil {
		t.Fatal(err)
	}
	ch.Notify()
	if err := ch.Check(ctx, revoke.Subject{Txn: "t"}); err != nil {
		t.Fatalf("after a deletion's notice: %v", err)
	}
}

// A revocation that expired no longer refuses, even from a snapshot that holds it.
func TestIssue26ExpiredRevocationNoLongerRefuses(t *testing.T) {
	c := newClock()
	s := revoke.NewMemory(revoke.WithClock(c.Now))
	put(t, s, c, revoke.Dialog, "d", false)
	ch := revoke.NewChecker(s, revoke.WithClock(c.Now), revoke.WithBound(2*time.Hour))
	ctx := context.Background()
	if err := ch.Check(ctx, revoke.Subject{Dialog: "d"}); !errcode.Is(err, errcode.DialogRevoked) {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	if err := ch.Check(ctx, revoke.Subject{Dialog: "d"}); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}

type failing struct{ revoke.Store }

func (failing) List(context.Context) ([]revoke.Revocation, error) {
	return nil, errcode.Unavailable(errcode.StoreUnavailable, nil, "down")
}

// Issue 26, fail closed: a snapshot past its bound that cannot be refetched is not
// used; every check could not be completed.
func TestIssue26StaleSnapshotFailsClosed(t *testing.T) {
	c := newClock()
	mem := revoke.NewMemory(revoke.WithClock(c.Now))
	s := &switchable{Store: mem}
	ch := revoke.NewChecker(s, revoke.WithClock(c.Now), revoke.WithBound(time.Second))
	ctx := context.Background()
	if err := ch.Check(ctx, revoke.Subject{Dialog: "d"}); err != nil {
		t.Fatal(err)
	}
	s.Store = failing{mem}
	c.Advance(time.Second)
	if err := ch.Check(ctx, revoke.Subject{Dialog: "d"}); !errcode.Is(err, errcode.StoreUnavailable) || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("stale snapshot, store down: %v, want an incomplete store_unavailable", err)
	}
}

type switchable struct{ revoke.Store }

func (s *switchable) List(ctx context.Context) ([]revoke.Revocation, error) { return s.Store.List(ctx) }

// Start hears the Memory store's notices: the checker refetches without waiting for
// the bound.
func TestIssue26StartHearsNotices(t *testing.T) {
	c := newClock()
	s := revoke.NewMemory(revoke.WithClock(c.Now))
	ch := revoke.NewChecker(s, revoke.WithClock(c.Now), revoke.WithBound(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := ch.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ch.Check(ctx, revoke.Subject{Dialog: "d"}); err != nil {
		t.Fatal(err)
	}
	put(t, s, c, revoke.Dialog, "d", false)
	deadline := time.Now().Add(10 * time.Second) // a failure deadline; the loop waits on the notice's effect
	for ch.Check(ctx, revoke.Subject{Dialog: "d"}) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the notice was not heard")
		}
		time.Sleep(time.Millisecond)
	}
}
