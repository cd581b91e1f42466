package revokeapi_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit/audittest"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// auditedWorld is a world whose API writes to an audit file; it returns the log, its
// path and the checkpoint key.
func auditedWorld(t *testing.T, store revoke.Store) (*world, *audit.Log, string, *keys.PrivateKey) {
	t.Helper()
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	sink, err := audit.OpenFile(path, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.New(sink, audit.FixedKey(k), audit.WithWriter("tts-0"))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorldWith(t, func(c *revokeapi.Config) {
		c.Auditor = l
		if store != nil {
			c.Store = store
		}
	})
	return w, l, path, k
}

// verifiedRecords closes l, verifies its file with k's public key and returns its
// records.
func verifiedRecords(t *testing.T, l *audit.Log, path string, k *keys.PrivateKey) []audit.Entry {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return audittest.VerifiedFile(t, path, k)
}

// Issue 26 ("revocations ... are audited"): a revocation and its lift are each one
// record of the trail, which audit.Verify accepts, naming the administrator, what
// changed and why.
func TestIssue26_RevocationsAreAudited(t *testing.T) {
	w, l, path, k := auditedWorld(t, nil)
	ctx := context.Background()
	c := w.client(w.admin)
	if _, err := c.Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1", Linked: true, Reason: "runaway <b>"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Lift(ctx, revoke.Dialog, "D1"); !ok || err != nil {
		t.Fatalf("Lift = %v, %v", ok, err)
	}
	recs := verifiedRecords(t, l, path, k)
	if len(recs) != 2 {
		t.Fatalf("records: %+v", recs)
	}
	admin := w.admin.ID.String()
	r, lift := recs[0], recs[1]
	if r.Decision != audit.Revoked || r.Handler != audit.HandlerRevocations || r.Requester != admin || r.TargetKind != "dialog" ||
		r.Target != "D1" || r.Reason != "runaway <b>" || !r.Linked || r.RequestID == "" || r.Status != 201 {
		t.Fatalf("revocation record %+v", r)
	}
	if lift.Decision != audit.Lifted || lift.Handler != audit.HandlerRevocations || lift.Requester != admin || lift.TargetKind != "dialog" ||
		lift.Target != "D1" || lift.Status != 200 {
		t.Fatalf("lift record %+v", lift)
	}
}

// failingSink refuses every line.
type failingSink struct{}

func (failingSink) Write([]byte) error { return errors.New("disk full") }

// Issue 26, fail closed: a change whose audit record cannot be written is refused
// (audit_unavailable, 503) and not made: nothing changes in the store, neither a
// revocation nor a lift.
func TestIssue26_RevocationRefusedWhenAuditFails(t *testing.T) {
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	l, err := audit.New(failingSink{}, audit.FixedKey(k))
	if err != nil {
		t.Fatal(err)
	}
	w := newWorldWith(t, func(c *revokeapi.Config) { c.Auditor = l })
	ctx := context.Background()
	c := w.client(w.admin)
	_, err = c.Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1", Reason: "runaway"})
	if errcode.CodeOf(err) != errcode.AuditUnavailable || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("Revoke = %v (%s)", err, errcode.CodeOf(err))
	}
	if live := w.live(t); len(live) != 0 {
		t.Fatalf("store changed: %+v", live)
	}
	// A revocation made without the auditor stays when its lift cannot be audited.
	if err := w.store.Put(ctx, revoke.Revocation{Kind: revoke.Dialog, ID: "D2", Reason: "r", By: w.admin.ID.String(),
		Created: w.clock.Now(), Expires: w.clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lift(ctx, revoke.Dialog, "D2"); errcode.CodeOf(err) != errcode.AuditUnavailable {
		t.Fatalf("Lift = %v", err)
	}
	if live := w.live(t); len(live) != 1 || live[0].ID != "D2" {
		t.Fatalf("store changed: %+v", live)
	}
}

// brokenStore fails every change.
type brokenStore struct{ revoke.Store }

func (brokenStore) Put(context.Context, revoke.Revocation) error {
	return errcode.Unavailable(errcode.StoreUnavailable, nil, "redis down")
}

// Issue 26: the record is written before the change; a change the store then fails
// is followed by a refused record with the store's code, so the trail never shows a
// failed revocation as made.
func TestIssue26_RevocationStoreFailureIsAudited(t *testing.T) {
	w, l, path, k := auditedWorld(t, brokenStore{revoke.NewMemory()})
	_, err := w.client(w.admin).Revoke(context.Background(), revokeapi.Request{Kind: revoke.Txn, ID: "T1", Reason: "leak"})
	if errcode.CodeOf(err) != errcode.StoreUnavailable {
		t.Fatalf("Revoke = %v", err)
	}
	recs := verifiedRecords(t, l, path, k)
	if len(recs) != 2 || recs[0].Decision != audit.Revoked || recs[1].Decision != audit.Refused ||
		recs[1].Code != string(errcode.StoreUnavailable) || recs[1].Kind != "could_not_complete" || recs[1].Status != 503 ||
		recs[1].Target != "T1" || recs[1].RequestID != recs[0].RequestID || recs[1].Requester != w.admin.ID.String() {
		t.Fatalf("records %+v", recs)
	}
}
