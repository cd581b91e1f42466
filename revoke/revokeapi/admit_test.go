package revokeapi_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// unreadable is a store that cannot be listed (and counts the writes that reach it).
type unreadable struct {
	revoke.Store
	puts atomic.Int32
}

func (u *unreadable) List(context.Context) ([]revoke.Revocation, error) {
	return nil, errcode.Unavailable(errcode.StoreUnavailable, errors.New("down"), "revocations not listed")
}

func (u *unreadable) Put(ctx context.Context, r revoke.Revocation) error {
	u.puts.Add(1)
	return u.Store.Put(ctx, r)
}

// Issue 26: whether an administrator is revoked is checked at every request; when the
// revocations cannot be read, the API fails closed (store_unavailable, could not be
// completed) and makes no change.
func TestAdmit_UnreadableStoreFailsClosed(t *testing.T) {
	st := &unreadable{}
	w := newWorldWith(t, func(c *revokeapi.Config) {
		st.Store = revoke.NewMemory(revoke.WithClock(c.Now))
		c.Store = st
	})
	alice, h := w.admin, w.api
	c := w.client(alice)
	_, err := c.Revoke(context.Background(), revokeapi.Request{Kind: revoke.Txn, ID: "t1", Reason: "x"})
	if !errcode.Is(err, errcode.StoreUnavailable) || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("revoke with the revocations unreadable: %v", err)
	}
	if st.puts.Load() != 0 {
		t.Error("a revocation was stored although the administrator could not be checked")
	}
	if err := h.Admit(context.Background(), alice.ID); !errcode.Is(err, errcode.StoreUnavailable) {
		t.Errorf("Admit: %v", err)
	}
}
