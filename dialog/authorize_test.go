package dialog_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/authz"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
)

// authzServer puts A2 behind a stateful receiver that asks d, counting the requests
// that reach the handler and keeping the body each one read.
func (f *figure3) authzServer(t *testing.T, d authz.Decider) (*atomic.Int32, *dialog.Registry, chan string) {
	t.Helper()
	var calls atomic.Int32
	bodies := make(chan string, 16)
	reg := dialog.NewRegistry(store.NewMemoryRecords(store.WithClock(f.clock.Now)))
	rc := f.receiver(t, f.a2Srv.URL+"/mcp", f.a2, false, dialog.WithRegistry(reg), dialog.WithAuthorizer(d))
	f.a2Srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		b, _ := io.ReadAll(r.Body)
		bodies <- string(b)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	return &calls, reg, bodies
}

func rpc(t *testing.T, url, body string) *http.Request {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// rpcError reads a JSON-RPC error response: its id, JSON-RPC code and stable code.
func rpcError(t *testing.T, res *http.Response) (string, int, errcode.Code) {
	t.Helper()
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
			Data struct {
				Code errcode.Code `json:"code"`
			} `json:"data"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if res.StatusCode != 200 || json.Unmarshal(b, &r) != nil || r.Error == nil {
		t.Fatalf("status %d %s, want a JSON-RPC error", res.StatusCode, b)
	}
	if strings.Contains(string(b), "secret") {
		t.Fatalf("the decision's reason was sent: %s", b)
	}
	return string(r.ID), r.Error.Code, r.Error.Data.Code
}

// inDialog sends req from a in dialog dlg with a as initiator, reading the answer as it
// comes (a JSON-RPC error echoes no Dialog-Context: Start would return it as an error).
func inDialog(t *testing.T, a *agent.Agent, req *http.Request, dlg string) (*http.Response, error) {
	t.Helper()
	dc, err := dialog.New(dlg, a.Self)
	if err != nil {
		t.Fatal(err)
	}
	dc.Set(req.Header)
	return a.Client.Do(req)
}

// Issue 25, receivers: an allow rule over what was verified and the MCP tool. The
// allowed tool reaches the handler with its body whole; a tool not allowed never does,
// and is answered with a JSON-RPC error (not_authorized) that does not carry the
// decision's reason; the dialog a refused request proposed is not established.
func TestIssue25_ReceiverAllowsOnlyTheToolsOfItsRules(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	rules, err := authz.NewRules([]authz.Rule{{Name: "travel-books",
		Allow: `sender == "` + f.a1.ID.String() + `" && initiator_proved && has(txn.scope) && txn.scope == "trip.book" && operation == "tools/call" && name in ["book", "search"]`}})
	if err != nil {
		t.Fatal(err)
	}
	calls, reg, bodies := f.authzServer(t, authz.DeciderFunc(func(ctx context.Context, r *authz.Request) (authz.Decision, error) {
		d, err := rules.Decide(ctx, r)
		if !d.Allow {
			d.Reason = "secret reason"
		}
		return d, err
	}))
	url := f.a2Srv.URL + "/mcp"
	a1 := f.agentLax(f.a1, agent.Forwarded(f.txnToken(t, "D1", "a.example")), proof.HTTPSig)

	refused := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete","arguments":{}}}`
	res, err := inDialog(t, a1, rpc(t, url, refused), "D1")
	if err != nil {
		t.Fatal(err)
	}
	if id, code, c := rpcError(t, res); id != "7" || code != -32602 || c != errcode.NotAuthorized {
		t.Fatalf("id %s code %d %s", id, code, c)
	}
	if rec, err := reg.Lookup(ctx, "D1"); err != nil || rec != nil {
		t.Fatalf("a refused request established its dialog: %+v %v", rec, err)
	}
	if calls.Load() != 0 {
		t.Fatal("a refused tool reached the handler")
	}

	allowed := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"book","arguments":{"to":"Oslo"}}}`
	res, _, err = a1.Start(ctx, rpc(t, url, allowed), "D1")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("%v %v", err, res)
	}
	res.Body.Close()
	if calls.Load() != 1 || <-bodies != allowed {
		t.Fatal("the allowed tool did not reach the handler with its body")
	}
	if rec, _ := reg.Lookup(ctx, "D1"); rec == nil {
		t.Fatal("the allowed request did not establish its dialog")
	}

	// The same sender without the Txn-Token the rule reads: refused.
	res, err = inDialog(t, f.agentLax(f.a1, nil, proof.HTTPSig), rpc(t, url, allowed), "D2")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, c := rpcError(t, res); c != errcode.NotAuthorized {
		t.Fatal(c)
	}
	// Another sender, a plain HTTP body: the problem document, 403.
	res, _, err = f.agentLax(f.t1, agent.Forwarded(f.txnToken(t, "D3", "a.example")), proof.HTTPSig).Start(ctx, post(t, url), "D3")
	testkit.WantProblem(t, res, err, errcode.NotAuthorized)
	if calls.Load() != 1 {
		t.Fatal("a refused request reached the handler")
	}
}

// Dialog-binding section 7 and http-signature-07 section 3.5: a receiver with a
// response signer signs its refusal of a request whose HTTP signature verified (the
// authorization's, here), bound to that request and echoing no Dialog-Context, so that
// an agent that requires signed responses reads the receiver's code, verified: a
// dialog's first tool call refused is not_authorized signed by the receiver
// (agent.SignedRefusal); the same refusal within the dialog is the signed JSON-RPC
// error; a plain request's is the signed problem document. A refusal before the proof
// verified (a Txn-Token of another dialog) goes unsigned: the agent gets its code marked
// unverified.
func TestDialogBindingSec7_ReceiverSignsItsRefusalsOnceTheProofVerified(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	rules, err := authz.NewRules([]authz.Rule{{Name: "book-only", Allow: `operation == "tools/call" && name == "book"`}})
	if err != nil {
		t.Fatal(err)
	}
	calls, _, _ := f.authzServer(t, rules)
	url := f.a2Srv.URL + "/mcp"
	a1 := f.agentOpts(f.a1, agent.Forwarded(f.txnToken(t, "D1", "a.example")), proof.HTTPSig, true)
	refused := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete","arguments":{}}}`
	allowed := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"book","arguments":{}}}`

	_, _, err = a1.Start(ctx, rpc(t, url, refused), "D1")
	var sr *agent.SignedRefusal
	var ur *agent.UnverifiedRefusal
	if errcode.CodeOf(err) != errcode.NotAuthorized || !errors.As(err, &sr) || sr.Signer != f.a2.ID || errors.As(err, &ur) {
		t.Fatalf("the first request refused: %v, want not_authorized signed by %s", err, f.a2.ID)
	}
	res, _, err := a1.Start(ctx, rpc(t, url, allowed), "D1")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	res, err = inDialog(t, a1, rpc(t, url, refused), "D1")
	if err != nil {
		t.Fatalf("a refusal within the dialog: %v", err)
	}
	if res.Header.Get("Signature-Input") == "" || res.Header.Get(dialog.HeaderName) != "" {
		t.Fatalf("the refusal within the dialog is not signed, or echoes a Dialog-Context: %v", res.Header)
	}
	if _, _, c := rpcError(t, res); c != errcode.NotAuthorized {
		t.Fatal(c)
	}

	t1 := f.agentOpts(f.t1, agent.Forwarded(f.txnToken(t, "D3", "a.example")), proof.HTTPSig, true)
	res, _, err = t1.Start(ctx, post(t, url), "D3")
	if err != nil || res.Header.Get("Signature-Input") == "" || res.StatusCode != http.StatusForbidden {
		t.Fatalf("a plain request refused: %v %v", res, err)
	}
	testkit.WantProblem(t, res, err, errcode.NotAuthorized)

	// The Txn-Token records D4, the request is in D5: refused before the proof's body
	// and nonce are checked, so unsigned.
	_, _, err = f.agentOpts(f.a1, agent.Forwarded(f.txnToken(t, "D4", "a.example")), proof.HTTPSig, true).Start(ctx, rpc(t, url, allowed), "D5")
	if errcode.CodeOf(err) != errcode.DialogMismatch || !errors.As(err, &ur) || errors.As(err, &sr) {
		t.Fatalf("a refusal before the proof verified: %v, want dialog_mismatch marked unverified", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("%d requests reached the handler, want the one allowed", calls.Load())
	}
}

// Issue 25: a decision that could not be made refuses (decision_unavailable, could not
// be completed: a JSON-RPC internal error), and nothing reaches the handler.
func TestIssue25_ReceiverUndecidedRefuses(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	calls, _, _ := f.authzServer(t, authz.DeciderFunc(func(context.Context, *authz.Request) (authz.Decision, error) {
		return authz.Decision{Allow: true, Reason: "secret"}, errors.New("pdp down")
	}))
	a1 := f.agentLax(f.a1, agent.Forwarded(f.txnToken(t, "D1", "a.example")), proof.HTTPSig)
	res, err := inDialog(t, a1, rpc(t, f.a2Srv.URL+"/mcp", `{"jsonrpc":"2.0","id":"x","method":"SendMessage","params":{"message":{"metadata":{"skill":"book"}}}}`), "D1")
	if err != nil {
		t.Fatal(err)
	}
	if id, code, c := rpcError(t, res); id != `"x"` || code != -32603 || c != errcode.DecisionUnavailable {
		t.Fatalf("id %s code %d %s", id, code, c)
	}
	// A rule that cannot be evaluated: the same.
	rules, _ := authz.NewRules([]authz.Rule{{Name: "broken", Allow: `txn.nope == "x"`}})
	f.authzServer(t, rules)
	res, _, err = a1.Start(ctx, post(t, f.a2Srv.URL+"/mcp"), "D1")
	testkit.WantProblem(t, res, err, errcode.DecisionUnavailable)
	if calls.Load() != 0 {
		t.Fatal("an undecided request reached the handler")
	}
}

// Issue 25: the decision point is asked about what was verified, each fact in its
// place: sender, trust domain, proof, initiator and whether it was proved, dialog, the
// Txn-Token's claims, method, path, and the operation read from the body (here an A2A
// 0.3 message naming its skill).
func TestIssue25_ReceiverAsksAboutWhatWasVerified(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	got := make(chan *authz.Request, 4)
	f.authzServer(t, authz.DeciderFunc(func(_ context.Context, r *authz.Request) (authz.Decision, error) {
		got <- r
		return authz.Decision{Allow: true, Rule: "all"}, nil
	}))
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[],"metadata":{"skill":"book-flight"}}}}`
	res, _, err := f.agentLax(f.a1, agent.Forwarded(f.txnToken(t, "D1", "a.example")), proof.HTTPSig).Start(ctx, rpc(t, f.a2Srv.URL+"/mcp", body), "D1")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("%v %v", err, res)
	}
	res.Body.Close()
	r := <-got
	want := authz.Request{Sender: f.a1.ID.String(), SenderTrustDomain: "a.example", Proof: "httpsig",
		Initiator: f.a1.ID.String(), InitiatorProved: true, Dialog: "D1", Method: "POST", Path: "/mcp",
		Protocol: "a2a", Operation: "message/send", Name: "book-flight"}
	txn := r.Txn
	r.Txn = nil
	if !reflect.DeepEqual(*r, want) {
		t.Fatalf("asked %+v\nwant  %+v", *r, want)
	}
	if txn["sub"] != "user@a.example" || txn["scope"] != "trip.book" || txn["tctx"].(map[string]any)["dlg"] != "D1" {
		t.Fatalf("txn %v", txn)
	}
	// A WPT without a Dialog-Context or Txn-Token: those facts are empty.
	req, _ := http.NewRequest("GET", f.a2Srv.URL+"/mcp", nil)
	res, err = f.agentLax(f.t1, nil, proof.WPT).Client.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("%v %v", err, res)
	}
	res.Body.Close()
	r = <-got
	if r.Proof != "wpt" || r.Sender != f.t1.ID.String() || r.Dialog != "" || r.Initiator != "" || r.Txn != nil || r.Protocol != "" || r.Method != "GET" {
		t.Fatalf("%+v", r)
	}
}

// Issue 25: a body whose operation the receiver cannot read as the application would
// is refused with invalid_request before the decision point is asked: compressed, in
// another charset, a JSON-RPC batch, a tool named twice (JavaScript reads the last
// copy), a method in another case (encoding/json matches it).
func TestIssue25_ReceiverRefusesBodiesItCannotReadTheOperationOf(t *testing.T) {
	f := newFigure3(t)
	var asked atomic.Int32
	calls, _, _ := f.authzServer(t, authz.DeciderFunc(func(context.Context, *authz.Request) (authz.Decision, error) {
		asked.Add(1)
		return authz.Decision{Allow: true}, nil
	}))
	url := f.a2Srv.URL + "/mcp"
	for _, c := range []struct{ name, body, ct, ce string }{
		{"gzip", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, "application/json", "gzip"},
		{"charset", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, "application/json; charset=utf-16", ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]`, "application/json", ""},
		{"name twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","name":"delete"}}`, "application/json", ""},
		{"method case", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"delete"}}`, "application/json", ""},
		{"byte order mark", "\ufeff" + `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete"}}`, "application/json", ""},
	} {
		req := rpc(t, url, c.body)
		req.Header.Set("Content-Type", c.ct)
		if c.ce != "" {
			req.Header.Set("Content-Encoding", c.ce)
		}
		res, err := f.agentLax(f.a1, nil, proof.HTTPSig).Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if got := errcode.CodeOf(problem.Read(res.StatusCode, b)); got != errcode.InvalidRequest && !strings.Contains(string(b), `"invalid_request"`) {
			t.Errorf("%s: %d %s", c.name, res.StatusCode, b)
		}
	}
	if asked.Load() != 0 || calls.Load() != 0 {
		t.Fatalf("asked %d, handled %d", asked.Load(), calls.Load())
	}
}
