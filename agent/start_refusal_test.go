package agent_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// Issue 25 (and section 5): the receiver refuses a dialog's first JSON-RPC request
// after its proof verified (its authorization) with a JSON-RPC error on 200 that
// echoes no Dialog-Context, since it did not establish the dialog. Start returns that
// refusal's own code and kind, marked unverified (agent.UnverifiedRefusal, status 200),
// rather than dialog_context_mismatch. Every other answer without the echo stays a
// mismatch: a result, a JSON-RPC error without a stable code in its data, one whose
// code is in another member, one with a result beside it, one that is not
// application/json, one on another 2xx status, one over the bound.
func TestIssue25_StartPassesOnTheReceiversRefusal(t *testing.T) {
	self := identifier.MustParse("wimse://a.example/agent/a1")
	var answer func(w http.ResponseWriter)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { answer(w) }))
	defer srv.Close()
	a := &agent.Agent{Self: self, Client: srv.Client()}
	start := func() error {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete"}}`))
		res, _, err := a.Start(context.Background(), req, "D1")
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	for _, c := range []struct {
		name string
		err  error
		kind errcode.Kind
	}{
		{"not authorized", errcode.New(errcode.NotAuthorized, "not authorized by policy"), errcode.Failed},
		{"undecided", errcode.Unavailable(errcode.DecisionUnavailable, errors.New("pdp down"), "the decision could not be made"), errcode.Incomplete},
	} {
		answer = func(w http.ResponseWriter) { hostproto.WriteError(w, []byte("7"), c.err) }
		err := start()
		var ur *agent.UnverifiedRefusal
		if errcode.CodeOf(err) != errcode.CodeOf(c.err) || errcode.KindOf(err) != c.kind || !errors.As(err, &ur) || ur.Status != 200 ||
			!strings.Contains(err.Error(), "not verified") {
			t.Errorf("%s: %v, want the receiver's %s marked unverified", c.name, err, errcode.CodeOf(c.err))
		}
	}

	refusal := `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"not_authorized","data":{"code":"not_authorized","kind":"failed"}}}`
	for _, c := range []struct {
		name, ct, body string
		status         int
	}{
		{"a result", "application/json", `{"jsonrpc":"2.0","id":7,"result":{}}`, 200},
		{"an error without a code in its data", "application/json", `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method"}}`, 200},
		{"a code outside the error's data", "application/json", `{"jsonrpc":"2.0","id":7,"code":"not_authorized","kind":"failed","error":{"code":-32601,"message":"x"}}`, 200},
		{"a result beside the error", "application/json", strings.Replace(refusal, `"error"`, `"result":{"ok":true},"error"`, 1), 200},
		{"a problem document", "application/problem+json", `{"type":"urn:dialogtrust:error:not_authorized","code":"not_authorized","kind":"failed","status":403}`, 200},
		{"an event stream", "text/event-stream", "data: " + refusal + "\n\n", 200},
		{"202", "application/json", refusal, 202},
		{"over the bound", "application/json", strings.Replace(refusal, `"message":"not_authorized"`, `"message":"`+strings.Repeat("x", 17<<10)+`"`, 1), 200},
	} {
		answer = func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", c.ct)
			w.WriteHeader(c.status)
			_, _ = io.WriteString(w, c.body)
		}
		var ur *agent.UnverifiedRefusal
		if err := start(); errcode.CodeOf(err) != errcode.DialogContextMismatch || errors.As(err, &ur) {
			t.Errorf("%s: %v, want dialog_context_mismatch", c.name, err)
		}
	}

	// An event stream that stays open: its content type already says it is no refusal,
	// so Start reads none of it and does not wait for octets that come late or never.
	release := make(chan struct{})
	answer = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		<-release
	}
	got := make(chan error, 1)
	go func() { got <- start() }()
	select {
	case err := <-got:
		if errcode.CodeOf(err) != errcode.DialogContextMismatch {
			t.Errorf("an open event stream: %v, want dialog_context_mismatch", err)
		}
	case <-time.After(time.Minute): // a watchdog, not a timing: Start must not wait on the stream
		t.Error("Start waited on an open event stream that echoes no Dialog-Context")
	}
	close(release)

	// The refusal with the echo is not one the receiver sends for a dialog it did not
	// establish; Start leaves it to the caller as the answer it is, as before.
	answer = func(w http.ResponseWriter) {
		w.Header().Set(dialog.HeaderName, `dlg="D1", initiator="wimse://a.example/agent/a1"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, refusal)
	}
	if err := start(); err != nil {
		t.Fatalf("an answer with the echo: %v", err)
	}
}
