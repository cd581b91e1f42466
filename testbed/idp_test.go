package testbed_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
)

// Issue 28, the ID-JAG path of the two domains: WithIdP's identity provider issues an
// ID token to the planner, AS A turns it into an ID-JAG for AS B, AS B into an access
// token, and TTS B into a Txn-Token recording the linked dialog, for the IdP's user.
// An ID token issued to another workload is refused at AS A (subject_client_mismatch),
// a World without WithIdP issues no ID-JAG at all, a link takes one subject
// token, never both, and never carries the ID token to domain B.
func TestWithIdPLinksThroughAnIDJAG(t *testing.T) {
	ctx := t.Context()
	world, err := testbed.Start(ctx, testbed.WithIdP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(world.Close)
	a, b := world.A, world.B
	planner, other, hotel := a.Workload("/agent/planner"), a.Workload("/agent/other"), b.Workload("/service/hotel")
	wits := testbed.WITs(ctx, a, b)
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/book"
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())),
		testbed.SignsResponses(hotel),
	)
	if err != nil {
		t.Fatal(err)
	}
	acceptor := b.LinkAcceptor(ctx, hotel)
	srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, txn, err := acceptor.Accept(r.Context(), dialog.FromRequest(r), r.Header)
		if err != nil {
			http.Error(w, string(errcode.CodeOf(err)), http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, txn.Sub+" "+txn.Dialog())
	}))
	srv.Start()
	defer srv.Close()

	link := func(w testbed.Workload, idToken string) (*testbed.LinkedClient, *http.Response, error) {
		lc := world.Link(w, "", wits, func(l *agent.Linked, t *agent.Transport) (http.RoundTripper, error) { return t, nil })
		lc.Config.IDToken = idToken
		res, err := (&http.Client{Transport: lc}).Post(url, "text/plain", nil)
		return lc, res, err
	}
	idToken, err := world.IdP.IDToken(planner, "alice")
	if err != nil {
		t.Fatal(err)
	}
	lc, res, err := link(planner, idToken)
	if err != nil {
		t.Fatalf("link through an ID-JAG: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if want := "a.example:alice " + lc.Linked().Dialog.DLG(); res.StatusCode != 200 || string(body) != want {
		t.Fatalf("got %d %q, want 200 %q", res.StatusCode, body, want)
	}

	// The ID token stays in domain A: a first request that would carry it to B is
	// refused before it leaves.
	guarded := world.Link(planner, "", wits, func(l *agent.Linked, t *agent.Transport) (http.RoundTripper, error) { return t, nil })
	guarded.Config.IDToken, _ = world.IdP.IDToken(planner, "alice")
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	req.Header.Set("X-Note", "token="+guarded.Config.IDToken)
	if _, err := (&http.Client{Transport: guarded}).Do(req); errcode.CodeOf(err) != errcode.CrossesTrustBoundary {
		t.Fatalf("a request to B carrying the ID token: %v, want crosses_trust_boundary", err)
	}

	if _, _, err := link(other, idToken); errcode.CodeOf(err) != errcode.SubjectClientMismatch {
		t.Fatalf("another workload's ID token: %v, want subject_client_mismatch", err)
	}
	// Exactly one subject: a Txn-Token and an ID token together are refused.
	txnA, err := a.TxnToken(ctx, planner, "alice@a.example", testbed.Scope, agent.NewDialogID())
	if err != nil {
		t.Fatal(err)
	}
	lc = world.Link(planner, txnA, wits, nil)
	lc.Config.IDToken = idToken
	if _, err := (&http.Client{Transport: lc}).Post(url, "text/plain", nil); errcode.CodeOf(err) != errcode.InvalidRequest {
		t.Fatalf("both a Txn-Token and an ID token: %v, want invalid_request", err)
	}
	plain := start(t)
	lc = plain.Link(plain.A.Workload("/agent/planner"), "", wits, nil)
	lc.Config.IDToken = idToken
	if _, err := (&http.Client{Transport: lc}).Post(url, "text/plain", nil); errcode.CodeOf(err) != errcode.UnsupportedTokenType {
		t.Fatalf("ID-JAG from a World without WithIdP: %v, want unsupported_token_type", err)
	}
}
