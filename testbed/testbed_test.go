package testbed_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

func start(t *testing.T) *testbed.World {
	t.Helper()
	w, err := testbed.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// The Txn-Token TxnToken gets is the domain's TTS's, for the subject and scope asked,
// recording the dialog (tctx.dlg), verified with the keys the TTS publishes.
func TestTxnTokenRecordsTheDialog(t *testing.T) {
	w := start(t)
	planner := w.A.Workload("/agent/planner")
	dlg := agent.NewDialogID()
	tok, err := w.A.TxnToken(t.Context(), planner, "alice@a.example", testbed.Scope, dlg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := txntoken.NewVerifier(w.A.TTSKeys(t.Context()), w.A.Name).Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.Iss != w.A.TTSURL || c.Sub != "alice@a.example" || c.Scope != testbed.Scope || c.Dialog() != dlg {
		t.Fatalf("claims %+v, dialog %q; want iss %s, sub alice@a.example, scope %s, dialog %s", c, c.Dialog(), w.A.TTSURL, testbed.Scope, dlg)
	}
	// b.example's keys are not a.example's: its verifier refuses the token.
	if _, err := txntoken.NewVerifier(w.B.TTSKeys(t.Context()), w.A.Name).Verify(t.Context(), tok); err == nil {
		t.Fatal("TTS B's keys verified TTS A's Txn-Token")
	}
}

// The LinkAcceptor refuses a request in a dialog that carries no access token: the
// request the receiver verified is the planner's, but nothing links it (the signature
// covers no Authorization field).
func TestLinkAcceptorRefusesAnUnlinkedRequest(t *testing.T) {
	w := start(t)
	ctx := t.Context()
	planner, hotel := w.A.Workload("/agent/planner"), w.B.Workload("/service/hotel")
	wits := testbed.WITs(ctx, w.A, w.B)
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/book"
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())),
	)
	if err != nil {
		t.Fatal(err)
	}
	acceptor := w.B.LinkAcceptor(ctx, hotel)
	codes := make(chan errcode.Code, 1)
	srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _, err := acceptor.Accept(r.Context(), dialog.FromRequest(r), r.Header)
		codes <- errcode.CodeOf(err)
	}))
	srv.Start()
	defer srv.Close()
	dc, err := dialog.New(agent.NewDialogID(), planner.ID)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(agent.WithDialog(ctx, dc), http.MethodPost, url, nil)
	client := &http.Client{Transport: &agent.Transport{Source: planner.Source, Proof: proof.HTTPSig, Responses: httpsig.NewVerifier(wits)}}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := <-codes; got != errcode.MissingRequiredComponent {
		t.Fatalf("an unlinked request: %q, want %s", got, errcode.MissingRequiredComponent)
	}
}

// Close stops every server of the world.
func TestCloseStopsTheServers(t *testing.T) {
	w, err := testbed.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	urls := []string{w.A.WITURL, w.A.TTSURL, w.B.WITURL, w.B.TTSURL}
	for _, u := range urls {
		res, err := http.Get(u + "/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	w.Close()
	for _, u := range urls {
		if res, err := http.Get(u + "/.well-known/jwks.json"); err == nil {
			res.Body.Close()
			t.Errorf("%s still answers after Close", u)
		}
	}
}

// NewHandoffs binds each agent to its own key, and the delegator signs with its own.
func TestHandoffsBindEachAgentToItsKey(t *testing.T) {
	planner, hotel := identifier.MustParse("wimse://a.example/agent/planner"), identifier.MustParse("wimse://b.example/agent/hotel")
	h, err := testbed.NewHandoffs(planner, hotel)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id  identifier.ID
		key *keys.PrivateKey
	}{{planner, h.DelegatorKey}, {hotel, h.DelegateKey}} {
		ks, err := h.Trust.KeysFor(t.Context(), tc.id.String())
		if err != nil {
			t.Fatal(err)
		}
		k, err := ks.LookupKey(t.Context(), tc.key.KID())
		if err != nil || k.Thumbprint() != tc.key.Public().Thumbprint() {
			t.Fatalf("%s: key %v, %v", tc.id, k, err)
		}
	}
	if h.DelegatorKey.Public().Thumbprint() == h.DelegateKey.Public().Thumbprint() {
		t.Fatal("one key for both agents")
	}
	if _, err := h.Delegator.Offer(t.Context(), handoff.OfferRequest{Offer: handoff.Offer{Aud: hotel.String(), Dialog: agent.NewDialogID()}}); err != nil {
		t.Fatal(err)
	}
}

// WriteError writes the stable code of an *errcode.Error, else the example's name.
func TestWriteError(t *testing.T) {
	var b strings.Builder
	testbed.WriteError(&b, "twodomains", errcode.New(errcode.HandoffPolicy, "refused"))
	testbed.WriteError(&b, "twodomains", errors.New("no listener"))
	want := "error: handoff_policy\ndetail: handoff_policy: refused\ntwodomains: no listener\n"
	if b.String() != want {
		t.Fatalf("wrote %q, want %q", b.String(), want)
	}
}

// Completed refuses a reply without a status: with the work's own error when it failed,
// else handoff_policy.
func TestCompletedNeedsAStatus(t *testing.T) {
	planner, hotel := identifier.MustParse("wimse://a.example/agent/planner"), identifier.MustParse("wimse://b.example/agent/hotel")
	h, err := testbed.NewHandoffs(planner, hotel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testbed.Completed(t.Context(), h.Delegator, nil, func() error { return nil }); errcode.CodeOf(err) != errcode.HandoffPolicy {
		t.Fatalf("no status: %v, want handoff_policy", err)
	}
	workErr := errcode.New(errcode.GrantBindingMismatch, "another client")
	if _, err := testbed.Completed(t.Context(), h.Delegator, nil, func() error { return workErr }); !errors.Is(err, workErr) {
		t.Fatalf("no status after the work failed: %v, want the work's error", err)
	}
}

// A domain started alone issues Txn-Tokens for its workloads' self-signed subject
// tokens, verified with the keys it publishes, and trusts its own WITs only.
func TestStartDomainAlone(t *testing.T) {
	d, err := testbed.StartDomain(t.Context(), "c.example")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	w := d.Workload("/agent/a1")
	dlg := agent.NewDialogID()
	tok, err := d.TxnToken(t.Context(), w, "alice@c.example", testbed.Scope, dlg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := txntoken.NewVerifier(d.TTSKeys(t.Context()), d.Name).Verify(t.Context(), tok)
	if err != nil || c.Dialog() != dlg {
		t.Fatalf("Txn-Token: %v, %v", c, err)
	}
	cred, err := w.Source.Credential(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tr := keys.NewTrust().AddTrustDomain(d.Name, d.WITKeys(t.Context()))
	if _, err := wit.NewValidator(tr).Validate(t.Context(), cred.WIT); err != nil {
		t.Fatalf("the domain's own WIT: %v", err)
	}
}
