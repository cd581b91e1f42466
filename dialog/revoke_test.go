package dialog_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/store"
)

// revokeServer puts A2 behind a stateful receiver checking revocations of s with the
// bound given, counting the requests that reach the handler.
func (f *figure3) revokeServer(t *testing.T, s revoke.Store, bound time.Duration) (*atomic.Int32, *dialog.Registry) {
	t.Helper()
	var calls atomic.Int32
	reg := dialog.NewRegistry(store.NewMemoryRecords(store.WithClock(f.clock.Now)))
	ch := revoke.NewChecker(s, revoke.WithClock(f.clock.Now), revoke.WithBound(bound))
	rc := f.receiver(t, f.a2Srv.URL+"/task", f.a2, false, dialog.WithRegistry(reg), dialog.WithRevocations(ch))
	f.a2Srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
	}))
	return &calls, reg
}

func (f *figure3) revokeNow(t *testing.T, s revoke.Store, k revoke.Kind, id string) {
	t.Helper()
	now := f.clock.Now()
	if err := s.Put(context.Background(), revoke.Revocation{Kind: k, ID: id, Reason: "runaway", Created: now, Expires: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
}

// Issue 26, receivers: once the bound has passed, a request in a revoked dialog, from a
// revoked workload or with a revoked txn is refused with its code after verification,
// reaches no handler and establishes no dialog; within the bound the cached answer
// stands (the check is really cached), and other dialogs go on.
func TestIssue26_ReceiverRefusesRevoked(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	s := revoke.NewMemory(revoke.WithClock(f.clock.Now))
	calls, reg := f.revokeServer(t, s, 2*time.Second)
	url := f.a2Srv.URL + "/task"
	send := func(dlg string) (*http.Response, error) {
		a1 := f.agentLax(f.a1, agent.Forwarded(f.txnToken(t, dlg, "a.example")), proof.HTTPSig)
		res, _, err := a1.Start(ctx, post(t, url), dlg)
		return res, err
	}
	accepted := func(dlg, what string) {
		t.Helper()
		res, err := send(dlg)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("%s: %v %v", what, err, res)
		}
		res.Body.Close()
	}
	// refused revokes (kind, id) and, once the bound has passed, sends in dlg.
	refused := func(kind revoke.Kind, id, dlg string, code errcode.Code) *http.Response {
		t.Helper()
		f.revokeNow(t, s, kind, id)
		f.clock.Advance(2 * time.Second)
		res, err := send(dlg)
		testkit.WantProblem(t, res, err, code)
		return res
	}
	accepted("D1", "before revocation")

	if res := refused(revoke.Dialog, "D1", "D1", errcode.DialogRevoked); res.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d", res.StatusCode)
	}
	accepted("D2", "another dialog")

	// The figure's Txn-Tokens all carry one txn: revoking it refuses D3 too.
	refused(revoke.Txn, "97053963-771d-49cc-a4e3-20aad399c312", "D3", errcode.TxnRevoked)
	if rec, _ := reg.Lookup(ctx, "D3"); rec != nil {
		t.Fatal("a revoked request established its dialog")
	}
	if _, err := s.Delete(ctx, revoke.Txn, "97053963-771d-49cc-a4e3-20aad399c312"); err != nil {
		t.Fatal(err)
	}
	refused(revoke.Workload, f.a1.ID.String(), "D4", errcode.WorkloadRevoked)
	if calls.Load() != 2 {
		t.Fatalf("%d requests reached the handler, want the 2 not revoked", calls.Load())
	}
}

type downStore struct{ revoke.Store }

func (downStore) List(context.Context) ([]revoke.Revocation, error) {
	return nil, errcode.Unavailable(errcode.StoreUnavailable, nil, "down")
}

// Issue 26, fail closed: a receiver whose revocations cannot be read answers 503
// store_unavailable (could not be completed), never lets the request through.
func TestIssue26_ReceiverFailsClosed(t *testing.T) {
	f := newFigure3(t)
	calls, _ := f.revokeServer(t, downStore{revoke.NewMemory()}, time.Second)
	a1 := f.agentLax(f.a1, agent.Forwarded(f.txnToken(t, "D1", "a.example")), proof.HTTPSig)
	res, err := inDialog(t, a1, post(t, f.a2Srv.URL+"/task"), "D1")
	testkit.WantProblem(t, res, err, errcode.StoreUnavailable)
	if res.StatusCode != http.StatusServiceUnavailable || calls.Load() != 0 {
		t.Fatalf("status %d, %d calls", res.StatusCode, calls.Load())
	}
}
