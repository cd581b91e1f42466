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
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/wit"
)

// signerWorld is a.example and b.example with one validator trusting both: every WIT
// below verifies, so only the signer check can refuse a response.
type signerWorld struct {
	a, b *testkit.Domain
	wits *wit.Validator
}

func newSignerWorld(t *testing.T) *signerWorld {
	clock := testkit.NewClock(time.Now())
	a := testkit.NewDomain(t, "a.example", keys.EdDSA, clock)
	b := testkit.NewDomain(t, "b.example", keys.EdDSA, clock)
	trust := keys.NewTrust()
	for _, d := range []*testkit.Domain{a, b} {
		set, err := keys.NewStaticSet(d.Key.Public())
		if err != nil {
			t.Fatal(err)
		}
		trust.AddTrustDomain(d.Name, set)
	}
	return &signerWorld{a: a, b: b, wits: wit.NewValidator(trust, wit.WithClock(clock.Now))}
}

func credOf(w *testkit.Workload) wit.Source {
	return &wit.Credential{WIT: w.WIT, Key: w.Key, Expiry: time.Now().Add(time.Hour)}
}

// responder is a server that verifies the request and signs its response with
// signer's WIT: the party the request was for when signer is it, else a workload on
// the path answering in its place with a WIT of its own.
func (sw *signerWorld) responder(t *testing.T, signer *testkit.Workload) *httptest.Server {
	srv := httptest.NewUnstartedServer(nil)
	aud := "http://" + srv.Listener.Addr().String() + "/"
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(sw.wits, httpsig.WithAudiences(aud))),
		dialog.WithResponseSigner(func(context.Context) (*httpsig.Signer, error) {
			return httpsig.NewSigner(signer.Key, signer.WIT), nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "the body a forger wants believed")
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func (sw *signerWorld) call(t *testing.T, client *testkit.Workload, signers *agent.Signers, url string) (*http.Response, error) {
	t.Helper()
	tr := &agent.Transport{Source: credOf(client), Responses: httpsig.NewVerifier(sw.wits), RequireSignedResponse: true, ResponseSigners: signers}
	a := &agent.Agent{Self: client.ID, Client: &http.Client{Transport: tr}}
	req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(`{}`))
	res, _, err := a.Start(context.Background(), req, "")
	if err == nil {
		res.Body.Close()
	}
	return res, err
}

// Issue 22 point 2: a workload of another trust domain on the path answers a dialog
// start with a response signed with its own valid WIT. By default the Transport
// believes only its own trust domain (sections 5, 11).
func TestIssue22Point2_SignerOfAnotherTrustDomainRefused(t *testing.T) {
	sw := newSignerWorld(t)
	a1 := sw.a.Workload(t, "/agent/a1", keys.EdDSA)
	t1 := sw.a.Workload(t, "/tool/t1", keys.EdDSA)
	b9 := sw.b.Workload(t, "/agent/b9", keys.EdDSA)
	if _, err := sw.call(t, a1, nil, sw.responder(t, t1).URL); err != nil {
		t.Fatalf("signed by a workload of a.example: %v", err)
	}
	_, err := sw.call(t, a1, nil, sw.responder(t, b9).URL)
	if errcode.CodeOf(err) != errcode.ResponseSignerMismatch || !strings.Contains(err.Error(), "wimse://b.example/agent/b9") {
		t.Fatalf("signed by b.example: %v, want response_signer_mismatch", err)
	}
}

// Issue 22 point 2: a workload of the same trust domain that the caller did not name.
func TestIssue22Point2_SignerNotNamedRefused(t *testing.T) {
	sw := newSignerWorld(t)
	a1 := sw.a.Workload(t, "/agent/a1", keys.EdDSA)
	t1 := sw.a.Workload(t, "/tool/t1", keys.EdDSA)
	t2 := sw.a.Workload(t, "/tool/t2", keys.EdDSA)
	only, err := agent.ParseSigners("wimse://a.example/tool/t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sw.call(t, a1, only, sw.responder(t, t1).URL); err != nil {
		t.Fatalf("signed by t1: %v", err)
	}
	if _, err := sw.call(t, a1, only, sw.responder(t, t2).URL); errcode.CodeOf(err) != errcode.ResponseSignerMismatch {
		t.Fatalf("signed by t2: %v, want response_signer_mismatch", err)
	}
}

// Issue 22 point 2: a prefix allows the workloads under it, by whole segments.
func TestIssue22Point2_SignerPrefix(t *testing.T) {
	sw := newSignerWorld(t)
	a1 := sw.a.Workload(t, "/agent/a1", keys.EdDSA)
	tools, err := agent.ParseSigners("wimse://a.example/tool/")
	if err != nil {
		t.Fatal(err)
	}
	for path, ok := range map[string]bool{"/tool/t1": true, "/tool/x/y": true, "/toolbox": false, "/agent/a2": false} {
		_, err := sw.call(t, a1, tools, sw.responder(t, sw.a.Workload(t, path, keys.EdDSA)).URL)
		if ok != (err == nil) || !ok && errcode.CodeOf(err) != errcode.ResponseSignerMismatch {
			t.Errorf("%s: %v", path, err)
		}
	}
	for _, bad := range [][]string{{"wimse://a.example/tool/", "wimse://b.example/t"}, {"wimse://a.example//"}, {"https://a.example/"}, {}} {
		if _, err := agent.ParseSigners(bad...); errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Errorf("ParseSigners(%q): %v", bad, err)
		}
	}
}

// Issue 22 point 5: an unsigned refusal to a request that asked for a signed response
// is the upstream's refusal with its code, marked unverified, never a response; an
// unsigned success, or an answer without a problem document, stays missing_credential.
func TestIssue22Point5_UnsignedRefusalKeepsItsCode(t *testing.T) {
	sw := newSignerWorld(t)
	a1 := sw.a.Workload(t, "/agent/a1", keys.EdDSA)
	answer := func(status int, ct, body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	rec := httptest.NewRecorder()
	problem.Write(rec, errcode.New(errcode.AudienceMismatch, "wimse-aud %q is not an accepted audience", "http://x/"))
	_, err := sw.call(t, a1, nil, answer(401, "application/problem+json", rec.Body.String()).URL)
	var ur *agent.UnverifiedRefusal
	if errcode.CodeOf(err) != errcode.AudienceMismatch || !errors.As(err, &ur) || ur.Status != 401 || !strings.Contains(err.Error(), "not verified") {
		t.Fatalf("unsigned refusal: %v, want audience_mismatch marked unverified", err)
	}
	for _, c := range []struct {
		status   int
		ct, body string
	}{{200, "application/json", `{"ok":true}`}, {502, "text/html", "<html>bad gateway</html>"}, {200, "application/problem+json", rec.Body.String()}} {
		_, err := sw.call(t, a1, nil, answer(c.status, c.ct, c.body).URL)
		if errcode.CodeOf(err) != errcode.MissingCredential || errors.As(err, &ur) {
			t.Errorf("HTTP %d %s: %v, want missing_credential", c.status, c.ct, err)
		}
	}
}

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

// newStrictCaller is a signer world with a1 of a.example calling through a Transport
// that requires signed responses, and t1, the tool whose signatures it believes.
func newStrictCaller(t *testing.T) (sw *signerWorld, a1, t1 *testkit.Workload, a *agent.Agent) {
	sw = newSignerWorld(t)
	a1 = sw.a.Workload(t, "/agent/a1", keys.EdDSA)
	t1 = sw.a.Workload(t, "/tool/t1", keys.EdDSA)
	tr := &agent.Transport{Source: credOf(a1), Responses: httpsig.NewVerifier(sw.wits), RequireSignedResponse: true}
	return sw, a1, t1, &agent.Agent{Self: a1.ID, Client: &http.Client{Transport: tr}}
}

// toolCall is a JSON-RPC tools/call of "delete" to url.
func toolCall(url string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete"}}`))
	req.Header.Set("Content-Type", "application/json")
	return req
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
	sw, a1, t1, a := newStrictCaller(t)
	rpcRefusal := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"not authorized","data":{"code":"not_authorized","kind":"failed","detail":"no rule allows it"}}}`

	_, _, err := a.Start(context.Background(), toolCall(sw.signingServer(t, t1, 200, "application/json", rpcRefusal)), "")
	var sr *agent.SignedRefusal
	var ur *agent.UnverifiedRefusal
	if errcode.CodeOf(err) != errcode.NotAuthorized || !errors.As(err, &sr) || sr.Signer != t1.ID || sr.Status != 200 || errors.As(err, &ur) ||
		strings.Contains(err.Error(), "not verified") {
		t.Fatalf("a signed JSON-RPC refusal of the first request: %v, want not_authorized signed by %s", err, t1.ID)
	}

	rec := httptest.NewRecorder()
	problem.Write(rec, errcode.New(errcode.DialogRevoked, "the dialog is revoked"))
	res, _, err := a.Start(context.Background(), toolCall(sw.signingServer(t, t1, 403, "application/problem+json", rec.Body.String())), "")
	if err != nil || res.StatusCode != 403 {
		t.Fatalf("a signed refusal on 403: %v %v", res, err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if errcode.CodeOf(problem.Read(res.StatusCode, b)) != errcode.DialogRevoked {
		t.Fatalf("a signed refusal on 403: %s", b)
	}

	dc, _ := dialog.New("D1", a1.ID)
	res, err = a.Continue(context.Background(), toolCall(sw.signingServer(t, t1, 200, "application/json", rpcRefusal)), dc, nil)
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
		_, _, err := a.Start(context.Background(), toolCall(sw.signingServer(t, t1, 200, c.ct, c.body)), "")
		if errcode.CodeOf(err) != errcode.DialogContextMismatch {
			t.Errorf("a signed %s answer %s that echoes no Dialog-Context: %v, want dialog_context_mismatch", c.ct, c.body, err)
		}
	}
}

// Red team 11: a signed 200 that echoes no Dialog-Context passes only as a refusal, and
// a refusal has no result (hostproto.WriteError writes none; JSON-RPC 2.0 section 5: an
// error response MUST NOT carry one). A result hidden from the agent's reading, named
// twice (a first-wins reader takes the first), spelled in another case (Go's
// encoding/json, which SDKs decode with, matches names case-insensitively) or null
// beside the error, is a result beside the error to some reader of the same octets: the
// answer is not a refusal, and without the echo it is dialog_context_mismatch.
func TestRedTeam11_SignedAnswerWithHiddenResultIsNoRefusal(t *testing.T) {
	sw, _, t1, a := newStrictCaller(t)
	const e = `"error":{"code":-32602,"message":"x","data":{"code":"not_authorized","kind":"failed"}}`
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]},"result":null,` + e + `}`,
		`{"jsonrpc":"2.0","id":1,"Result":{"content":[]},` + e + `}`,
		`{"jsonrpc":"2.0","id":1,"RESULT":{"content":[]},` + e + `}`,
		`{"jsonrpc":"2.0","id":1,"result":null,` + e + `}`,
	} {
		_, _, err := a.Start(context.Background(), toolCall(sw.signingServer(t, t1, 200, "application/json", body)), "")
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
	res, err := tr.RoundTrip(toolCall(sw.signingServer(t, t1, 403, "application/problem+json", `{"code":"not_authorized"}`)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	forged := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x","data":{"code":"dialog_revoked","kind":"failed"}}}`)
	}))
	defer forged.Close()
	_, _, err = a.Start(res.Request.Context(), toolCall(forged.URL), "")
	var sr *agent.SignedRefusal
	var ur *agent.UnverifiedRefusal
	if errors.As(err, &sr) || !errors.As(err, &ur) {
		t.Fatalf("an unsigned refusal sent with a verified response's context: %v, want UnverifiedRefusal", err)
	}
}
