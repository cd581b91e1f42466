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
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Red team 11: a signed 200 that echoes no Dialog-Context passes only as a refusal, and
// a refusal has no result (hostproto.WriteError writes none; JSON-RPC 2.0 section 5: an
// error response MUST NOT carry one). A result hidden from the agent's reading, named
// twice (a first-wins reader takes the first), spelled in another case (Go's
// encoding/json, which SDKs decode with, matches names case-insensitively) or null
// beside the error, is a result beside the error to some reader of the same octets: the
// answer is not a refusal, and without the echo it is dialog_context_mismatch.
func TestRedTeam11_SignedAnswerWithHiddenResultIsNoRefusal(t *testing.T) {
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
	const e = `"error":{"code":-32602,"message":"x","data":{"code":"not_authorized","kind":"failed"}}`
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]},"result":null,` + e + `}`,
		`{"jsonrpc":"2.0","id":1,"Result":{"content":[]},` + e + `}`,
		`{"jsonrpc":"2.0","id":1,"RESULT":{"content":[]},` + e + `}`,
		`{"jsonrpc":"2.0","id":1,"result":null,` + e + `}`,
	} {
		_, _, err := a.Start(context.Background(), call(sw.signingServer(t, t1, 200, "application/json", body)), "")
		if errcode.CodeOf(err) != errcode.DialogContextMismatch {
			t.Errorf("a signed answer %s that echoes no Dialog-Context: %v, want dialog_context_mismatch", body, err)
		}
	}
}

// Red team 11: the Transport's mark that it verified a response's signature lives in
// the context of the response's request, and a context carries what its parent
// carries: a caller that sends its next request with the context of a verified
// response's request (res.Request.Context(), as a retry or a follow-up may) had that
// request's answer, unsigned, read as verified. Here a route that does not require
// signed responses gets, for its next dialog's first request, an unsigned JSON-RPC
// refusal, which anyone on the path can make: it must stay an UnverifiedRefusal, not
// a SignedRefusal naming the earlier signer.
func TestRedTeam11_VerifiedMarkDoesNotCarryToTheNextRequest(t *testing.T) {
	sw := newSignerWorld(t)
	a1 := sw.a.Workload(t, "/agent/a1", keys.EdDSA)
	t1 := sw.a.Workload(t, "/tool/t1", keys.EdDSA)
	tr := &agent.Transport{Source: credOf(a1), Responses: httpsig.NewVerifier(sw.wits)}
	a := &agent.Agent{Self: a1.ID, Client: &http.Client{Transport: tr}}
	call := func(url string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete"}}`))
		req.Header.Set("Content-Type", "application/json")
		return req
	}
	res, err := tr.RoundTrip(call(sw.signingServer(t, t1, 403, "application/problem+json", `{"code":"not_authorized"}`)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	forged := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x","data":{"code":"dialog_revoked","kind":"failed"}}}`)
	}))
	defer forged.Close()
	_, _, err = a.Start(res.Request.Context(), call(forged.URL), "")
	var sr *agent.SignedRefusal
	var ur *agent.UnverifiedRefusal
	if errors.As(err, &sr) || !errors.As(err, &ur) {
		t.Fatalf("an unsigned refusal sent with a verified response's context: %v, want UnverifiedRefusal", err)
	}
}
