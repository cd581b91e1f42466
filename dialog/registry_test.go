package dialog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/store"
)

var (
	a2 = identifier.MustParse("wimse://a.example/agent/a2")
	x9 = identifier.MustParse("wimse://a.example/agent/x9")
)

// Section 5: the server checks that the initiator named in the field is the sender and
// that the dialog identifier is not in use, then creates the dialog.
func TestDialogBindingSec5_Establishment(t *testing.T) {
	ctx := context.Background()
	reg := dialog.NewRegistry(store.NewMemoryRecords())
	d1, _ := dialog.New("D1", a1)

	if _, err := reg.Accept(ctx, d1, x9); errcode.CodeOf(err) != errcode.InitiatorMismatch {
		t.Fatalf("a forged initiator established a dialog: %v", err)
	}
	out, err := reg.Accept(ctx, d1, a1)
	if err != nil || out != dialog.Established {
		t.Fatalf("establish: %v %v", out, err)
	}
	if rec, _ := reg.Lookup(ctx, "D1"); rec == nil || rec.Initiator != a1.String() {
		t.Fatalf("record %+v", rec)
	}
	// The initiator continues; another participant continues under the same initiator.
	if out, err := reg.Accept(ctx, d1, a1); err != nil || out != dialog.Continued {
		t.Fatalf("continue: %v %v", out, err)
	}
	if out, err := reg.Accept(ctx, d1, a2); err != nil || out != dialog.Continued {
		t.Fatalf("continue by a participant: %v %v", out, err)
	}
	// Another workload proposes the same identifier as its own dialog.
	hijack, _ := dialog.New("D1", x9)
	if _, err := reg.Accept(ctx, hijack, x9); errcode.CodeOf(err) != errcode.DialogInUse {
		t.Fatalf("dialog identifier in use: %v", err)
	}
	if _, err := reg.Accept(ctx, hijack, a2); errcode.CodeOf(err) != errcode.InitiatorMismatch {
		t.Fatalf("other initiator for a known dialog: %v", err)
	}
}

type brokenRecords struct{ store.Records }

func (brokenRecords) Create(context.Context, string, []byte, time.Duration) ([]byte, error) {
	return nil, errcode.Unavailable(errcode.StoreUnavailable, errors.New("down"), "records")
}

func (brokenRecords) Get(context.Context, string) ([]byte, error) {
	return nil, errcode.Unavailable(errcode.StoreUnavailable, errors.New("down"), "records")
}

// Section 12: a check that cannot be completed rejects, and says so.
func TestDialogBindingSec12_StoreFailureRejects(t *testing.T) {
	reg := dialog.NewRegistry(brokenRecords{})
	d1, _ := dialog.New("D1", a1)
	for _, sender := range []identifier.ID{a1, a2} {
		_, err := reg.Accept(context.Background(), d1, sender)
		if errcode.KindOf(err) != errcode.Incomplete || errcode.CodeOf(err) != errcode.StoreUnavailable {
			t.Fatalf("got %v", err)
		}
	}
}
