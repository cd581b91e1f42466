package revoketest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/revoke"
)

// Env is one store under test: the store, the clock it was built with, and a function
// that moves that clock.
type Env struct {
	Store   revoke.Store
	Now     func() time.Time
	Advance func(time.Duration)
}

// RunStore checks what every revoke.Store must do. newEnv returns a fresh, empty store.
func RunStore(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	ctx := context.Background()
	rev := func(e Env, k revoke.Kind, id string, ttl time.Duration) revoke.Revocation {
		now := e.Now()
		return revoke.Revocation{Kind: k, ID: id, Reason: "runaway agent", By: "wimse://a.example/ops", Created: now, Expires: now.Add(ttl)}
	}

	t.Run("PutThenList", func(t *testing.T) {
		e := newEnv(t)
		for _, k := range []revoke.Kind{revoke.Dialog, revoke.Workload, revoke.Txn} {
			MustPut(t, e.Store, rev(e, k, "x-"+string(k), time.Hour))
		}
		l := MustList(t, e.Store)
		if len(l) != 3 {
			t.Fatalf("List = %v, want 3", l)
		}
		for _, r := range l {
			if r.ID != "x-"+string(r.Kind) || r.Reason != "runaway agent" || r.By != "wimse://a.example/ops" ||
				!r.Expires.Equal(e.Now().Add(time.Hour)) {
				t.Errorf("listed %+v", r)
			}
		}
	})

	t.Run("SameKindAndIDReplaces", func(t *testing.T) {
		e := newEnv(t)
		MustPut(t, e.Store, rev(e, revoke.Dialog, "d1", time.Hour))
		r := rev(e, revoke.Dialog, "d1", 2*time.Hour)
		r.Linked, r.Reason = true, "second"
		MustPut(t, e.Store, r)
		MustPut(t, e.Store, rev(e, revoke.Workload, "d1", time.Hour)) // another kind, another key
		l := MustList(t, e.Store)
		if len(l) != 2 || l[0].Kind != revoke.Dialog || !l[0].Linked || l[0].Reason != "second" {
			t.Fatalf("List = %+v", l)
		}
	})

	t.Run("Expires", func(t *testing.T) {
		e := newEnv(t)
		MustPut(t, e.Store, rev(e, revoke.Txn, "t1", time.Minute))
		MustPut(t, e.Store, rev(e, revoke.Txn, "t2", time.Hour))
		e.Advance(time.Minute)
		l := MustList(t, e.Store)
		if len(l) != 1 || l[0].ID != "t2" {
			t.Fatalf("List after the first expired = %+v", l)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		e := newEnv(t)
		MustPut(t, e.Store, rev(e, revoke.Dialog, "d1", time.Hour))
		if ok, err := e.Store.Delete(ctx, revoke.Workload, "d1"); ok || err != nil {
			t.Fatalf("Delete of another kind = %v, %v", ok, err)
		}
		if ok, err := e.Store.Delete(ctx, revoke.Dialog, "d1"); !ok || err != nil {
			t.Fatalf("Delete = %v, %v", ok, err)
		}
		if l := MustList(t, e.Store); len(l) != 0 {
			t.Fatalf("List after Delete = %+v", l)
		}
		if ok, err := e.Store.Delete(ctx, revoke.Dialog, "d1"); ok || err != nil {
			t.Fatalf("second Delete = %v, %v", ok, err)
		}
	})

	t.Run("InvalidIsRefusedAndStoresNothing", func(t *testing.T) {
		e := newEnv(t)
		now := e.Now()
		bad := []revoke.Revocation{
			{Kind: "session", ID: "x", Created: now, Expires: now.Add(time.Hour)},
			{Kind: revoke.Dialog, ID: "", Created: now, Expires: now.Add(time.Hour)},
			{Kind: revoke.Dialog, ID: strings.Repeat("a", revoke.MaxIDLen+1), Created: now, Expires: now.Add(time.Hour)},
			{Kind: revoke.Dialog, ID: "d\nx", Created: now, Expires: now.Add(time.Hour)},
			{Kind: revoke.Dialog, ID: "d", Reason: "\xff", Created: now, Expires: now.Add(time.Hour)},
			{Kind: revoke.Dialog, ID: "d", Reason: strings.Repeat("r", revoke.MaxReasonLen+1), Created: now, Expires: now.Add(time.Hour)},
			{Kind: revoke.Workload, ID: "w", Linked: true, Created: now, Expires: now.Add(time.Hour)},
			{Kind: revoke.Dialog, ID: "d", Created: now, Expires: now},
			{Kind: revoke.Dialog, ID: "d", Created: now, Expires: now.Add(revoke.MaxLifetime + time.Second)},
		}
		for _, r := range bad {
			if err := e.Store.Put(ctx, r); !errcode.Is(err, errcode.InvalidRequest) || errcode.KindOf(err) != errcode.Failed {
				t.Errorf("Put(%+v) = %v, want a failed invalid_request", r, err)
			}
		}
		if l := MustList(t, e.Store); len(l) != 0 {
			t.Fatalf("List after refused puts = %+v", l)
		}
	})

	t.Run("CanceledContextIsUnavailable", func(t *testing.T) {
		e := newEnv(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.Store.List(cctx); !errcode.Is(err, errcode.StoreUnavailable) || errcode.KindOf(err) != errcode.Incomplete {
			t.Errorf("List on a canceled context = %v, want an incomplete store_unavailable", err)
		}
		if err := e.Store.Put(cctx, rev(e, revoke.Dialog, "d", time.Hour)); !errcode.Is(err, errcode.StoreUnavailable) {
			t.Errorf("Put on a canceled context = %v", err)
		}
	})

	t.Run("NotifierTellsOfChanges", func(t *testing.T) {
		e := newEnv(t)
		n, ok := e.Store.(revoke.Notifier)
		if !ok {
			t.Skip("not a Notifier")
		}
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch, err := n.Subscribe(sctx)
		if err != nil {
			t.Fatal(err)
		}
		MustPut(t, e.Store, rev(e, revoke.Dialog, "d", time.Hour))
		wait(t, ch, "a put")
		if _, err := e.Store.Delete(ctx, revoke.Dialog, "d"); err != nil {
			t.Fatal(err)
		}
		wait(t, ch, "a delete")
	})
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second): // a failure deadline, not a wait for expiry
		t.Fatalf("no change notice after %s", what)
	}
}

// MustPut puts r or fails t.
func MustPut(t testing.TB, s revoke.Store, r revoke.Revocation) {
	t.Helper()
	if err := s.Put(context.Background(), r); err != nil {
		t.Fatalf("Put(%+v): %v", r, err)
	}
}

// MustList lists or fails t.
func MustList(t testing.TB, s revoke.Store) []revoke.Revocation {
	t.Helper()
	l, err := s.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return l
}
