package agent_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
)

// signingServer verifies each request's HTTP signature and answers it with status, a
// body of content type ct, signed by signer and bound to the request's nonce, echoing no
// Dialog-Context: as a receiver answers with its refusal of a request whose proof
// verified (dialog.Receiver.Middleware), or, for anything but a refusal, as no receiver
// may answer a request in a dialog.
func (sw *signerWorld) signingServer(t *testing.T, signer *testkit.Workload, status int, ct, body string) string {
	srv := httptest.NewUnstartedServer(nil)
	aud := "http://" + srv.Listener.Addr().String() + "/"
	v := httpsig.NewVerifier(sw.wits, httpsig.WithAudiences(aud))
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := v.VerifyRequest(r.Context(), r)
		if err != nil {
			problem.Write(w, err)
			return
		}
		h := http.Header{"Content-Type": {ct}}
		if err := httpsig.NewSigner(signer.Key, signer.WIT).SignResponse(status, h, []byte(body), r, res.Nonce); err != nil {
			problem.Write(w, err)
			return
		}
		for k, vs := range h {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// Dialog-binding sections 5 and 7: a signed response must echo the request's
// Dialog-Context, but for a signed refusal, which echoes none (the refused request
// took no dialog). To an agent that requires signed responses, the receiver's signed
// JSON-RPC refusal of a dialog's first request is its code and kind, marked signed by
// the receiver (agent.SignedRefusal), not unverified; a signed refusal on 403 is the
// response, as it came; the same JSON-RPC refusal within a dialog is the response, its
// body whole. A signed success that echoes no Dialog-Context is still
// dialog_context_mismatch, and so is a signed answer that only looks like a refusal
// (a result beside the error, an error without a code).
func TestDialogBindingSec7_SignedRefusalEchoesNoContext(t *testing.T) {
	sw := newSignerWorld(t)
	a1 := sw.a.Workload(t, "/agent/a1", keys.EdDSA)
	t1 := sw.a.Workload(t, "/tool/t1", keys.EdDSA)
	tr := &agent.Transport{Source: credOf(a1), Responses: httpsig.NewVerifier(sw.wits), RequireSignedResponse: true}
	a := &agent.Agent{Self: a1.ID, Client: &http.Client{Transport: tr}}
	call := func(url string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete"}}`))
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	rpcRefusal := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"not authorized","data":{"code":"not_authorized","kind":"failed","detail":"no rule allows it"}}}`

	_, _, err := a.Start(context.Background(), call(sw.signingServer(t, t1, 200, "application/json", rpcRefusal)), "")
	var sr *agent.SignedRefusal
	var ur *agent.UnverifiedRefusal
	if errcode.CodeOf(err) != errcode.NotAuthorized || !errors.As(err, &sr) || sr.Signer != t1.ID || sr.Status != 200 || errors.As(err, &ur) ||
		strings.Contains(err.Error(), "not verified") {
		t.Fatalf("a signed JSON-RPC refusal of the first request: %v, want not_authorized signed by %s", err, t1.ID)
	}

	rec := httptest.NewRecorder()
	problem.Write(rec, errcode.New(errcode.DialogRevoked, "the dialog is revoked"))
	res, _, err := a.Start(context.Background(), call(sw.signingServer(t, t1, 403, "application/problem+json", rec.Body.String())), "")
	if err != nil || res.StatusCode != 403 {
		t.Fatalf("a signed refusal on 403: %v %v", res, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if errcode.CodeOf(problem.Read(res.StatusCode, b)) != errcode.DialogRevoked {
		t.Fatalf("a signed refusal on 403: %s", b)
	}

	dc, _ := dialog.New("D1", a1.ID)
	res, err = a.Continue(context.Background(), call(sw.signingServer(t, t1, 200, "application/json", rpcRefusal)), dc, nil)
	if err != nil {
		t.Fatalf("a signed JSON-RPC refusal within a dialog: %v", err)
	}
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != rpcRefusal {
		t.Fatalf("the refusal's body as the caller reads it: %s", b)
	}

	for _, c := range []struct{ ct, body string }{
		{"application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"application/json", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":-32602,"message":"x","data":{"code":"not_authorized","kind":"failed"}}}`},
		{"application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}`},
		{"text/plain", rpcRefusal},
	} {
		_, _, err := a.Start(context.Background(), call(sw.signingServer(t, t1, 200, c.ct, c.body)), "")
		if errcode.CodeOf(err) != errcode.DialogContextMismatch {
			t.Errorf("a signed %s answer %s that echoes no Dialog-Context: %v, want dialog_context_mismatch", c.ct, c.body, err)
		}
	}
}
