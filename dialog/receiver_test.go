package dialog_test

import (
	"context"
	"encoding/json"
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
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
	"github.com/go-chi/chi/v5"
)

// figure3 is the topology of dialog-binding Figure 2/3 on loopback: A1 and A2 are
// agents, A2 is a stateful participant that signs its responses, the tool is stateless.
type figure3 struct {
	clock      *testkit.Clock
	d          *testkit.Domain
	ttsKey     *keys.PrivateKey
	a1, a2, t1 *testkit.Workload
	a2Srv      *httptest.Server
	toolSrv    *httptest.Server
	seen       chan *dialog.Verified
}

func (f *figure3) source(w *testkit.Workload) wit.Source {
	return &wit.Credential{WIT: w.WIT, Key: w.Key, Expiry: time.Now().Add(time.Hour)}
}

// txnToken mints a real Txn-Token signed by the domain's TTS key.
func (f *figure3) txnToken(t *testing.T, dlg, aud string) string {
	now := f.clock.Now().Unix()
	c := map[string]any{"iss": "https://tts.a.example", "iat": now, "exp": now + 300, "aud": aud,
		"txn": "97053963-771d-49cc-a4e3-20aad399c312", "sub": "user@a.example", "scope": "trip.book",
		"req_wl": f.a1.ID.String(), "tctx": map[string]any{"dlg": dlg}}
	tok, err := jose.SignClaims(txntoken.Type, f.ttsKey, true, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (f *figure3) receiver(t *testing.T, aud string, self *testkit.Workload, stateful bool, more ...dialog.ReceiverOption) *dialog.Receiver {
	replay := store.NewMemory(store.WithClock(f.clock.Now))
	wits := f.d.Validator(wit.WithCache(64, time.Minute))
	ttsKeys, _ := keys.NewStaticSet(f.ttsKey.Public())
	opts := []dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(aud), httpsig.WithReplay(replay), httpsig.WithClock(f.clock.Now))),
		dialog.WithWPT(wpt.NewVerifier(wits, wpt.WithAudiences(aud), wpt.WithReplay(replay), wpt.WithClock(f.clock.Now))),
		dialog.WithTxnTokens(txntoken.NewVerifier(ttsKeys, "a.example", txntoken.WithClock(f.clock.Now))),
		dialog.WithProvenance(dialog.NewProvenanceVerifier(wits, 0)),
		dialog.WithResponseSigner(func(context.Context) (*httpsig.Signer, error) {
			return httpsig.NewSigner(self.Key, self.WIT, httpsig.WithClock(f.clock.Now)), nil
		}),
	}
	if stateful {
		opts = append(opts, dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords(store.WithClock(f.clock.Now)))))
	}
	rc, err := dialog.NewReceiver(append(opts, more...)...)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func newFigure3(t *testing.T) *figure3 {
	clock := testkit.NewClock(time.Now().Truncate(time.Second))
	f := &figure3{clock: clock, d: testkit.NewDomain(t, "a.example", keys.ES256, clock), seen: make(chan *dialog.Verified, 16)}
	f.ttsKey, _ = keys.Generate(keys.ES256)
	f.a1 = f.d.Workload(t, "/agent/a1", keys.EdDSA)
	f.a2 = f.d.Workload(t, "/agent/a2", keys.ES256)
	f.t1 = f.d.Workload(t, "/tool/t1", keys.EdDSA)
	handler := func(w http.ResponseWriter, r *http.Request) {
		f.seen <- dialog.FromRequest(r)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}
	f.a2Srv = httptest.NewUnstartedServer(nil)
	f.a2Srv.Start()
	f.a2Srv.Config.Handler = f.receiver(t, f.a2Srv.URL+"/task", f.a2, true).Middleware(http.HandlerFunc(handler))
	f.toolSrv = httptest.NewUnstartedServer(nil)
	f.toolSrv.Start()
	f.toolSrv.Config.Handler = f.receiver(t, f.toolSrv.URL+"/invoke", f.t1, false).Middleware(http.HandlerFunc(handler))
	t.Cleanup(func() { f.a2Srv.Close(); f.toolSrv.Close() })
	return f
}

func (f *figure3) agent(w *testkit.Workload, tokens agent.TxnTokenSource, method proof.Method) *agent.Agent {
	return f.agentOpts(w, tokens, method, method == proof.HTTPSig)
}

// agentOpts: refusals are unsigned problem documents, so tests that read them do not
// demand signed responses (a client that does gets missing_credential instead).
func (f *figure3) agentOpts(w *testkit.Workload, tokens agent.TxnTokenSource, method proof.Method, requireSigned bool) *agent.Agent {
	wits := f.d.Validator()
	tr := &agent.Transport{Source: f.source(w), Tokens: tokens, Proof: method, RequireSignedResponse: requireSigned,
		Responses: httpsig.NewVerifier(wits, httpsig.WithClock(f.clock.Now))}
	return &agent.Agent{Self: w.ID, Client: &http.Client{Transport: tr}}
}

func (f *figure3) agentLax(w *testkit.Workload, tokens agent.TxnTokenSource, method proof.Method) *agent.Agent {
	return f.agentOpts(w, tokens, method, false)
}

func post(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"task":"book"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// Figure 3: A1 starts D1 with A2; A2 calls the tool in D1 with a Txn-Token recording
// D1 and the provenance of A1's hop; the tool verifies who sent it (A2), what it may do
// (the Txn-Token), which dialog (D1), that the three agree, and that A1 initiated D1.
func TestDialogBindingFigure3_ToolVerifiesAllThree(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	tok := f.txnToken(t, "D1", "a.example")
	a1 := f.agent(f.a1, agent.Forwarded(tok), proof.HTTPSig)
	res, dc, err := a1.Start(ctx, post(t, f.a2Srv.URL+"/task"), "D1")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	atA2 := <-f.seen
	if atA2.Outcome != dialog.Established || !atA2.Sender.Equal(f.a1.ID) || atA2.Txn.Dialog() != "D1" || !atA2.InitiatorVerified {
		t.Fatalf("at A2: %+v", atA2)
	}
	// A2 forwards in D1 to the tool, with A1's record and the Txn-Token it received.
	prov, err := atA2.Forward()
	if err != nil {
		t.Fatal(err)
	}
	a2 := f.agent(f.a2, agent.Forwarded(atA2.TxnToken), proof.HTTPSig)
	res, err = a2.Continue(ctx, post(t, f.toolSrv.URL+"/invoke"), dc, prov)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	atTool := <-f.seen
	switch {
	case !atTool.Sender.Equal(f.a2.ID):
		t.Fatalf("sender %s", atTool.Sender)
	case atTool.Context.DLG() != "D1" || atTool.Txn.Dialog() != "D1":
		t.Fatal("dialog answers disagree")
	case !atTool.InitiatorVerified || len(atTool.Chain.Hops) != 1 || !atTool.Chain.Hops[0].Equal(f.a1.ID):
		t.Fatalf("initiator not proved: %+v", atTool.Chain)
	case atTool.Outcome != 0:
		t.Fatal("a stateless tool created a dialog")
	}
	// The same with a WPT from A2 (no provenance: the tool verifies A2 and D1 only).
	a2wpt := f.agent(f.a2, agent.Forwarded(atA2.TxnToken), proof.WPT)
	res, err = a2wpt.Continue(ctx, post(t, f.toolSrv.URL+"/invoke"), dc, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("WPT: %v %v", err, res)
	}
	res.Body.Close()
	if v := <-f.seen; v.Proof != proof.WPT || v.InitiatorVerified {
		t.Fatalf("WPT: %+v", v)
	}
}

// Figure 3 refusals: a Txn-Token for another dialog, a modified Dialog-Context, an
// uncovered Dialog-Context, and a forged initiator.
func TestDialogBindingFigure3_Refusals(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	d1, _ := dialog.New("D1", f.a1.ID)

	// A client that demanded a signed response takes the unsigned refusal as a
	// refusal with the receiver's code, marked unverified, never as a response.
	strict := f.agent(f.a2, agent.Forwarded(f.txnToken(t, "D2", "a.example")), proof.HTTPSig)
	var ur *agent.UnverifiedRefusal
	if res, err := strict.Continue(ctx, post(t, f.toolSrv.URL+"/invoke"), d1, nil); res != nil || errcode.CodeOf(err) != errcode.DialogMismatch || !errors.As(err, &ur) {
		t.Fatalf("unsigned refusal accepted by a client that demanded a signature: %v", err)
	}

	// Section 13, dialog-bound authorization: a token recorded for D2 used in D1.
	other := f.agentLax(f.a2, agent.Forwarded(f.txnToken(t, "D2", "a.example")), proof.HTTPSig)
	res, err := other.Continue(ctx, post(t, f.toolSrv.URL+"/invoke"), d1, nil)
	testkit.WantProblem(t, res, err, errcode.DialogMismatch)

	// A token for another trust domain.
	foreign := f.agentLax(f.a2, agent.Forwarded(f.txnToken(t, "D1", "b.example")), proof.HTTPSig)
	res, err = foreign.Continue(ctx, post(t, f.toolSrv.URL+"/invoke"), d1, nil)
	testkit.WantProblem(t, res, err, errcode.AudienceMismatch)

	// Section 7: an intermediary modifies Dialog-Context after A2 signed.
	a2 := f.agentLax(f.a2, agent.Forwarded(f.txnToken(t, "D1", "a.example")), proof.HTTPSig)
	a2.Client.Transport.(*agent.Transport).Base = rewrite(func(r *http.Request) {
		r.Header.Set(dialog.HeaderName, `dlg="D1", initiator="wimse://a.example/agent/a2"`)
	})
	res, err = a2.Continue(ctx, post(t, f.toolSrv.URL+"/invoke"), d1, nil)
	testkit.WantProblem(t, res, err, errcode.InvalidSignature)

	// Section 7: Dialog-Context added after signing: not covered.
	plain := f.agentLax(f.a2, nil, proof.HTTPSig)
	plain.Client.Transport.(*agent.Transport).Base = rewrite(func(r *http.Request) { d1.Set(r.Header) })
	res, err = plain.Client.Do(post(t, f.toolSrv.URL+"/invoke"))
	testkit.WantProblem(t, res, err, errcode.DialogContextNotCovered)

	// Section 5: A2 proposes a dialog naming A1 as initiator (forged initiator) at A2's
	// own peer... here at A2: the sender is not the named initiator of an unknown dialog.
	forger := f.agentLax(f.t1, nil, proof.HTTPSig)
	res, err = forger.Continue(ctx, post(t, f.a2Srv.URL+"/task"), d1, nil)
	testkit.WantProblem(t, res, err, errcode.InitiatorMismatch)

	// With WPT, Dialog-Context added after the proof was made: dth missing.
	wptAgent := f.agent(f.a2, nil, proof.WPT)
	wptAgent.Client.Transport.(*agent.Transport).Base = rewrite(func(r *http.Request) { d1.Set(r.Header) })
	res, err = wptAgent.Client.Do(post(t, f.toolSrv.URL+"/invoke"))
	testkit.WantProblem(t, res, err, errcode.DialogContextBindingMismatch)
}

// Section 5: the dialog identifier must not be in use by another initiator.
func TestDialogBindingSec5_DialogInUse(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	res, _, err := f.agent(f.a1, nil, proof.HTTPSig).Start(ctx, post(t, f.a2Srv.URL+"/task"), "D7")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	<-f.seen
	res, _, err = f.agentLax(f.t1, nil, proof.HTTPSig).Start(ctx, post(t, f.a2Srv.URL+"/task"), "D7")
	testkit.WantProblem(t, res, err, errcode.DialogInUse)
}

type rewrite func(*http.Request)

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	rw(r)
	return http.DefaultTransport.RoundTrip(r)
}

type downReplay struct{}

func (downReplay) Claim(context.Context, string, time.Duration) error {
	return errcode.Unavailable(errcode.StoreUnavailable, io.ErrUnexpectedEOF, "replay store unreachable")
}

// Section 12: when a check cannot be completed (here the replay store is down) the
// request is rejected, and the error says it could not be completed: a distinct status
// (503) and kind, not the 4xx of a failed check.
func TestDialogBindingSec12_CouldNotCompleteIsDistinct(t *testing.T) {
	f := newFigure3(t)
	aud := f.toolSrv.URL + "/invoke"
	wits := f.d.Validator()
	rc, err := dialog.NewReceiver(dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(aud),
		httpsig.WithReplay(downReplay{}), httpsig.WithClock(f.clock.Now))))
	if err != nil {
		t.Fatal(err)
	}
	f.toolSrv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the handler ran although a check could not be completed")
	}))
	d1, _ := dialog.New("D1", f.a1.ID)
	res, err := f.agentLax(f.a2, nil, proof.HTTPSig).Continue(context.Background(), post(t, aud), d1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var p problem.Details
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusServiceUnavailable || p.Kind != "could_not_complete" || p.Code != "store_unavailable" {
		t.Fatalf("status %d, %+v", res.StatusCode, p)
	}
	// A failed check, for contrast: 4xx and kind failed.
	res, err = f.agentLax(f.a2, agent.Forwarded("not-a-token"), proof.HTTPSig).Continue(context.Background(), post(t, f.a2Srv.URL+"/task"), d1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ = io.ReadAll(res.Body)
	_ = json.Unmarshal(body, &p)
	if res.StatusCode >= 500 || p.Kind != "failed" {
		t.Fatalf("failed check: status %d, %+v", res.StatusCode, p)
	}
}

// The middleware composes with chi like any net/http middleware.
func TestReceiverWithChi(t *testing.T) {
	f := newFigure3(t)
	r := chi.NewRouter()
	rc := f.receiver(t, f.toolSrv.URL+"/tools/search", f.t1, false)
	r.Use(rc.Middleware)
	r.Post("/tools/{name}", func(w http.ResponseWriter, r *http.Request) {
		v := dialog.FromRequest(r)
		w.Write([]byte(chi.URLParam(r, "name") + " for " + v.Sender.String()))
	})
	f.toolSrv.Config.Handler = r
	d1, _ := dialog.New("D1", f.a1.ID)
	res, err := f.agentLax(f.a2, nil, proof.HTTPSig).Continue(context.Background(), post(t, f.toolSrv.URL+"/tools/search"), d1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "search for "+f.a2.ID.String() {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}
