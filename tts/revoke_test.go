package tts

import (
	"context"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// testRevocations is a Memory store on the env's clock (set by withRevocations).
func testRevocations() (*revoke.Memory, *func() time.Time) {
	now := time.Now
	return revoke.NewMemory(revoke.WithClock(func() time.Time { return now() })), &now
}

func withRevocations(s revoke.Store, bound time.Duration, now ...*func() time.Time) envOption {
	return func(e *env, c *Config) {
		for _, n := range now {
			*n = e.clock.Now
		}
		c.Revocations = revoke.NewChecker(s, revoke.WithClock(e.clock.Now), revoke.WithBound(bound))
	}
}

func (e *env) revokeNow(s revoke.Store, k revoke.Kind, id string) {
	e.t.Helper()
	now := e.clock.Now()
	if err := s.Put(context.Background(), revoke.Revocation{Kind: k, ID: id, Reason: "runaway", Created: now, Expires: now.Add(time.Hour)}); err != nil {
		e.t.Fatal(err)
	}
}

// Issue 26, TTS: after the bound, no new token in a revoked dialog (first issuance and
// replacement), none for a revoked transaction (replacement) or workload (requester or
// subject), each with its code; other dialogs go on; within the bound the cached
// answer stands.
func TestIssue26_TTSRefusesRevoked(t *testing.T) {
	s, now := testRevocations()
	e := newEnv(t, withRevocations(s, 2*time.Second, now))
	a1, a2 := e.workload("/agent/a1"), e.workload("/agent/a2")
	tok, in := e.original(a1)
	first := func(dlg string) error {
		_, err := e.request(a1, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0),
			SubjectTokenType: TokenTypeAccessToken, Dialog: dlg})
		return err
	}

	e.revokeNow(s, revoke.Dialog, "D1")
	if _, err := e.replace(a2, tok, "trip.read", nil); err != nil {
		t.Fatalf("within the bound, the cached answer: %v", err)
	}
	e.clock.Advance(2 * time.Second)
	_, err := e.replace(a2, tok, "trip.read", nil)
	wantCode(t, err, errcode.DialogRevoked)
	wantCode(t, first("D1"), errcode.DialogRevoked)
	if err := first("D2"); err != nil {
		t.Fatalf("another dialog: %v", err)
	}

	if _, err := s.Delete(context.Background(), revoke.Dialog, "D1"); err != nil {
		t.Fatal(err)
	}
	e.revokeNow(s, revoke.Txn, in.Txn)
	e.clock.Advance(2 * time.Second)
	_, err = e.replace(a2, tok, "trip.read", nil)
	wantCode(t, err, errcode.TxnRevoked)

	e.revokeNow(s, revoke.Workload, a1.ID.String())
	e.clock.Advance(2 * time.Second)
	wantCode(t, first("D3"), errcode.WorkloadRevoked)
	e.revokeNow(s, revoke.Workload, in.Sub)
	e.clock.Advance(2 * time.Second)
	_, err = e.request(a2, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0),
		SubjectTokenType: TokenTypeAccessToken, Dialog: "D4"})
	wantCode(t, err, errcode.WorkloadRevoked)
}

type downRevocations struct{ revoke.Store }

func (downRevocations) List(context.Context) ([]revoke.Revocation, error) {
	return nil, errcode.Unavailable(errcode.StoreUnavailable, nil, "down")
}

// Issue 26, fail closed: revocations that cannot be read issue nothing
// (temporarily_unavailable, store_unavailable).
func TestIssue26_TTSFailsClosed(t *testing.T) {
	e := newEnv(t, withRevocations(downRevocations{revoke.NewMemory()}, time.Second))
	_, err := e.request(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0),
		SubjectTokenType: TokenTypeAccessToken, Dialog: "D1"})
	wantCode(t, err, errcode.StoreUnavailable)
	if errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("kind %v", errcode.KindOf(err))
	}
}
