package dialog_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/reqid"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/internal/testkit/audittest"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/tokenhash"
)

func (f *figure3) auditServer(t *testing.T, d authz.Decider) (*audittest.Sink, *audit.Log, *keys.PrivateKey, *atomic.Int32, chan int) {
	t.Helper()
	k, _ := keys.Generate(keys.ES256)
	sink := &audittest.Sink{}
	l, err := audit.New(sink, audit.FixedKey(k), audit.WithWriter("a2"), audit.WithClock(f.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	before := make(chan int, 16)
	rc := f.receiver(t, f.a2Srv.URL+"/mcp", f.a2, false, dialog.WithAuthorizer(d), dialog.WithAuditor(l, f.a2.ID))
	f.a2Srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		before <- len(sink.Records(t))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	return sink, l, k, &calls, before
}

// withTxn sends req from a in dialog dlg, initiated by a, carrying a's Txn-Token.
func withTxn(t *testing.T, a *agent.Agent, req *http.Request, dlg string) (*http.Response, error) {
	t.Helper()
	dc, err := dialog.New(dlg, a.Self)
	if err != nil {
		t.Fatal(err)
	}
	return a.Client.Do(req.WithContext(agent.WithDialog(req.Context(), dc)))
}

// Issue 26 (auditing at receivers): an accepted request is one "accepted" record,
// written before the handler runs, naming the verified sender, this receiver, the
// dialog, the Txn-Token's txn and req_wl, the token's SHA-256 (the TTS's
// issued_token_sha256 of it), the rule and the operation; a refused one is a
// "refused" record with its code, kind and status; a request without a proof is
// recorded with no identity at all. The trail verifies.
func TestIssue26_ReceiverAuditsEveryRequest(t *testing.T) {
	f := newFigure3(t)
	rules, err := authz.NewRules([]authz.Rule{{Name: "books", Allow: `operation == "tools/call" && name == "book"`}})
	if err != nil {
		t.Fatal(err)
	}
	sink, l, k, calls, before := f.auditServer(t, rules)
	url := f.a2Srv.URL + "/mcp"
	tok := f.txnToken(t, "D1", "a.example")
	a1 := f.agentLax(f.a1, agent.Forwarded(tok), proof.HTTPSig)

	res, err := withTxn(t, a1, rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book","arguments":{}}}`), "D1")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("allowed: %v %v", err, res)
	}
	acceptedID := res.Header.Get(reqid.Header)
	res.Body.Close()
	if n := <-before; n != 1 {
		t.Fatalf("the handler ran with %d records written, want the accepted one first", n)
	}
	res, err = withTxn(t, a1, rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete","arguments":{}}}`), "D1")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	garbage := rpc(t, url, `{}`)
	garbage.Header.Set("Dialog-Context", `dlg="D9", initiator="wimse://a.example/agent/evil"`)
	garbage.Header.Set("Txn-Token", tok)
	res, err = http.DefaultClient.Do(garbage)
	testkit.WantProblem(t, res, err, errcode.MissingCredential)
	if calls.Load() != 1 {
		t.Fatalf("%d calls", calls.Load())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	vs, err := audit.Verifiers([]*keys.PublicKey{k.Public()})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify([]audit.Input{{Name: "a2", R: bytes.NewReader(bytes.Join(sink.Lines(), nil))}}, nil, vs)
	if err != nil || !rep.OK() || rep.Records != 3 || rep.CheckpointsVerified != 1 {
		t.Fatalf("Verify = %+v %v", rep, err)
	}
	recs := sink.Records(t)
	acc, ref, gar := recs[0], recs[1], recs[2]
	if acc.Decision != audit.Accepted || acc.Handler != audit.HandlerReceiver || acc.Requester != f.a1.ID.String() ||
		len(acc.Audience) != 1 || acc.Audience[0] != f.a2.ID.String() || acc.Dialog != "D1" || acc.Txn != "97053963-771d-49cc-a4e3-20aad399c312" ||
		acc.ReqWL != f.a1.ID.String() || acc.SubjectSHA256 != tokenhash.Of(tok) || acc.Rule != "books" || acc.Operation != "tools/call book" ||
		acc.RequestID == "" || acc.RequestID != acceptedID || acc.Code != "" || acc.Status != 0 {
		t.Fatalf("accepted record %+v (response's request id %q)", acc, acceptedID)
	}
	if ref.Decision != audit.Refused || ref.Code != string(errcode.NotAuthorized) || ref.Kind != "failed" || ref.Status != 403 ||
		ref.Requester != f.a1.ID.String() || ref.Operation != "tools/call delete" || ref.Dialog != "D1" {
		t.Fatalf("refused record %+v", ref)
	}
	// Nothing of the unauthenticated request's fields is recorded as if verified: not
	// the dialog and initiator it named, nor the Txn-Token it carried.
	if gar.Decision != audit.Refused || gar.Code != string(errcode.MissingCredential) || gar.Status != 401 || gar.Requester != "" ||
		gar.Dialog != "" || gar.Txn != "" || gar.SubjectSHA256 != "" || gar.RequestID == "" {
		t.Fatalf("unauthenticated record %+v", gar)
	}
}

// Issue 26, fail closed: a receiver whose audit record cannot be written refuses the
// request it would have accepted (audit_unavailable, 503, could not be completed), and
// the handler never sees it.
func TestIssue26_ReceiverRefusesWithoutItsRecord(t *testing.T) {
	f := newFigure3(t)
	sink, _, _, calls, _ := f.auditServer(t, authz.DeciderFunc(func(context.Context, *authz.Request) (authz.Decision, error) {
		return authz.Decision{Allow: true, Rule: "all"}, nil
	}))
	sink.Fail()
	a1 := f.agentLax(f.a1, agent.Forwarded(f.txnToken(t, "D1", "a.example")), proof.HTTPSig)
	res, err := withTxn(t, a1, rpc(t, f.a2Srv.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book"}}`), "D1")
	testkit.WantProblem(t, res, err, errcode.AuditUnavailable)
	if res.StatusCode != http.StatusServiceUnavailable || calls.Load() != 0 {
		t.Fatalf("status %d, %d calls", res.StatusCode, calls.Load())
	}
}
