package dialog_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Sections 5 and 12: a request refused by a later check (a missing Txn-Token: 401
// missing_credential; a Txn-Token of another dialog: 403 dialog_mismatch) establishes no
// dialog, so the identifier it proposed stays free for the initiator that succeeds.
func TestDialogBindingSec5_RefusedRequestTakesNoDialog(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	reg := dialog.NewRegistry(store.NewMemoryRecords(store.WithClock(f.clock.Now)))
	aud := f.a2Srv.URL + "/task"
	wits := f.d.Validator()
	ttsKeys, _ := keys.NewStaticSet(f.ttsKey.Public())
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(aud), httpsig.WithClock(f.clock.Now))),
		dialog.WithTxnTokens(txntoken.NewVerifier(ttsKeys, "a.example", txntoken.WithClock(f.clock.Now))),
		dialog.WithRegistry(reg), dialog.RequireTxnToken())
	if err != nil {
		t.Fatal(err)
	}
	f.a2Srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.seen <- dialog.FromRequest(r)
	}))

	// T1 proposes D9 as its own dialog, first without a Txn-Token, then with a token
	// recorded for another dialog: both refused.
	res, _, err := f.agentLax(f.t1, nil, proof.HTTPSig).Start(ctx, post(t, aud), "D9")
	testkit.WantProblem(t, res, err, errcode.MissingCredential)
	res, _, err = f.agentLax(f.t1, agent.Forwarded(f.txnToken(t, "D8", "a.example")), proof.HTTPSig).Start(ctx, post(t, aud), "D9")
	testkit.WantProblem(t, res, err, errcode.DialogMismatch)
	if rec, err := reg.Lookup(ctx, "D9"); err != nil || rec != nil {
		t.Fatalf("a refused request left the dialog record %+v (%v)", rec, err)
	}

	// A1 then establishes D9.
	res, _, err = f.agentLax(f.a1, agent.Forwarded(f.txnToken(t, "D9", "a.example")), proof.HTTPSig).Start(ctx, post(t, aud), "D9")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the initiator could not establish D9 after refused proposals: status %d", res.StatusCode)
	}
	if v := <-f.seen; v.Outcome != dialog.Established || !v.Sender.Equal(f.a1.ID) {
		t.Fatalf("at A2: %+v", v)
	}
}

// Section 5: one sender holds a bounded number of live dialogs; continuing one is not
// counted, and an expired dialog frees its place.
func TestDialogBindingSec5_DialogsPerSenderAreBounded(t *testing.T) {
	ctx := context.Background()
	clock := time.Unix(1_800_000_000, 0)
	now := func() time.Time { return clock }
	reg := dialog.NewRegistry(store.NewMemoryRecords(store.WithClock(now)),
		dialog.WithClock(now), dialog.WithDialogTTL(time.Hour), dialog.WithMaxDialogsPerSender(2))
	dc := func(dlg string) *dialog.Context {
		c, err := dialog.New(dlg, a1)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, dlg := range []string{"D1", "D2"} {
		if out, err := reg.Accept(ctx, dc(dlg), a1); err != nil || out != dialog.Established {
			t.Fatalf("establish %s: %v %v", dlg, out, err)
		}
	}
	if _, err := reg.Check(ctx, dc("D3"), a1); errcode.CodeOf(err) != errcode.TooManyDialogs {
		t.Fatalf("Check of a third dialog: %v", err)
	}
	_, err := reg.Accept(ctx, dc("D3"), a1)
	if errcode.CodeOf(err) != errcode.TooManyDialogs || errcode.KindOf(err) != errcode.Failed || problem.Status(err) != http.StatusTooManyRequests {
		t.Fatalf("Accept of a third dialog: %v (status %d)", err, problem.Status(err))
	}
	if rec, _ := reg.Lookup(ctx, "D3"); rec != nil {
		t.Fatal("a refused dialog was created")
	}
	if out, err := reg.Accept(ctx, dc("D1"), a1); err != nil || out != dialog.Continued {
		t.Fatalf("continuing at the bound: %v %v", out, err)
	}
	// Another sender is not affected by a1's bound.
	d4, _ := dialog.New("D4", a2)
	if out, err := reg.Accept(ctx, d4, a2); err != nil || out != dialog.Established {
		t.Fatalf("another sender: %v %v", out, err)
	}
	clock = clock.Add(time.Hour + time.Second)
	if out, err := reg.Accept(ctx, dc("D3"), a1); err != nil || out != dialog.Established {
		t.Fatalf("after the first dialogs expired: %v %v", out, err)
	}
}

// Section 5: two requests propose one new identifier and both pass Check; the other
// one establishes the dialog between this one's look-up and its creation. Accept refuses
// this one with dialog_in_use and gives its place under the per-sender bound back.
func TestDialogBindingSec5_ConcurrentProposalsOneWins(t *testing.T) {
	ctx := context.Background()
	recs := &racingRecords{Records: store.NewMemoryRecords()}
	reg := dialog.NewRegistry(recs, dialog.WithMaxDialogsPerSender(1))
	mine, _ := dialog.New("D5", a1)
	theirs, _ := dialog.New("D5", x9)
	if _, err := reg.Check(ctx, mine, a1); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Check(ctx, theirs, x9); err != nil {
		t.Fatal(err)
	}
	recs.before = func() {
		if out, err := dialog.NewRegistry(recs.Records).Accept(ctx, mine, a1); err != nil || out != dialog.Established {
			t.Errorf("the concurrent request: %v %v", out, err)
		}
	}
	if _, err := reg.Accept(ctx, theirs, x9); errcode.CodeOf(err) != errcode.DialogInUse {
		t.Fatalf("second proposal of D5: %v", err)
	}
	if rec, _ := reg.Lookup(ctx, "D5"); rec == nil || rec.Initiator != a1.String() {
		t.Fatalf("D5 is %+v", rec)
	}
	d6, _ := dialog.New("D6", x9)
	if out, err := reg.Accept(ctx, d6, x9); err != nil || out != dialog.Established {
		t.Fatalf("the loser's place was not given back: %v %v", out, err)
	}
}

// racingRecords runs before once, just before the first Create of a dialog record.
type racingRecords struct {
	store.Records
	before func()
}

func (r *racingRecords) Create(ctx context.Context, key string, value []byte, ttl time.Duration) ([]byte, error) {
	if f := r.before; f != nil && strings.HasPrefix(key, "dialog:D") {
		r.before = nil
		f()
	}
	return r.Records.Create(ctx, key, value, ttl)
}
