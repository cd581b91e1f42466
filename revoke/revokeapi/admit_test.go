package revokeapi_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/store"
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
	clock := testkit.NewClock(testkit.Epoch)
	a := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	alice := a.Workload(t, "/ops/alice", keys.ES256)
	st := &unreadable{Store: revoke.NewMemory(revoke.WithClock(clock.Now))}
	srvURL, srv := newAPIServer(t)
	h, err := revokeapi.New(revokeapi.Config{
		Store:        st,
		Signatures:   httpsig.NewVerifier(a.Validator(), httpsig.WithAudiences(srvURL), httpsig.WithReplay(store.NewMemory(store.WithClock(clock.Now))), httpsig.WithClock(clock.Now)),
		Admins:       []identifier.ID{alice.ID},
		TrustDomains: []string{"a.example"},
		DefaultTTL:   time.Hour,
		Now:          clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	c := &revokeapi.Client{URL: srvURL, Signer: httpsig.NewSigner(alice.Key, alice.WIT, httpsig.WithClock(clock.Now))}
	_, err = c.Revoke(context.Background(), revokeapi.Request{Kind: revoke.Txn, ID: "t1", Reason: "x"})
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
