package e2e

import (
	"bytes"
	"context"
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
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/wit"
)

// figure3 is dialog-binding Figures 2 and 3 in domain a.example: A1 initiates D1 with
// A2 (stateful, signs its responses), and A2 calls a stateless tool in D1.
type figure3 struct {
	a          *domain
	a1, a2, t1 *participant
	a1Tokens   *agent.TTSSource
}

func newFigure3(t *testing.T) *figure3 {
	a := startDomain(t, "a.example")
	f := &figure3{a: a}
	id1, src1 := a.workload(t, "/agent/a1")
	id2, src2 := a.workload(t, "/agent/a2")
	idT, srcT := a.workload(t, "/tool/t1")
	f.a1 = &participant{id: id1, src: src1}
	f.a2 = a.serve(t, id2, src2, "/task", true)
	f.t1 = a.serve(t, idT, srcT, "/invoke", false)
	f.a1Tokens = agent.NewTTSSource(a.ttsClient(src1), "a.example", "trip.book", a.selfSigned(id1, src1), nil)
	return f
}

func post(t *testing.T, url string) *http.Request {
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"task":"book a trip"}`))
	mustOK(t, err)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// establish runs step 0 (A1 starts D1 with A2, the first request carrying the first
// input) and returns what A2 verified and the dialog context.
func (f *figure3) establish(t *testing.T) (*dialog.Verified, *dialog.Context) {
	a1 := f.a.caller(f.a1.id, f.a1.src, f.a1Tokens, proof.HTTPSig, true)
	res, dc, err := a1.Start(context.Background(), post(t, f.a2.url), "")
	mustOK(t, err)
	res.Body.Close()
	atA2 := <-f.a2.seen
	if atA2.Outcome != dialog.Established || !atA2.Sender.Equal(f.a1.id) || !atA2.InitiatorVerified {
		t.Fatalf("at A2: %+v", atA2)
	}
	if atA2.Txn == nil || atA2.Txn.Dialog() != dc.DLG() || atA2.Txn.ReqWL != f.a1.id.String() {
		t.Fatalf("A1's Txn-Token from the TTS does not record D1: %+v", atA2.Txn)
	}
	return atA2, dc
}

// a2ContinuesToT1 has A2 (forwarding the Txn-Token it was given, requireSigned as
// for caller) continue dialog dc to T1 with A1's record atA2 as provenance, and returns
// A2's caller and that provenance.
func (f *figure3) a2ContinuesToT1(t *testing.T, atA2 *dialog.Verified, dc *dialog.Context, requireSigned bool) (*agent.Agent, *dialog.Provenance) {
	t.Helper()
	prov, err := atA2.Forward()
	mustOK(t, err)
	a2 := f.a.caller(f.a2.id, f.a2.src, agent.Forwarded(atA2.TxnToken), proof.HTTPSig, requireSigned)
	res, err := a2.Continue(context.Background(), post(t, f.t1.url), dc, prov)
	mustOK(t, err)
	res.Body.Close()
	return a2, prov
}

// Figure 3: the tool answers who sent the request (A2, by its proof), what it may do
// (the Txn-Token from the TTS), and which dialog (D1), checks that they agree, and
// verifies that A1 initiated D1 from A1's proof carried as provenance.
func TestDialogBindingFigure3(t *testing.T) {
	f := newFigure3(t)
	atA2, dc := f.establish(t)
	_, prov := f.a2ContinuesToT1(t, atA2, dc, true)
	v := <-f.t1.seen
	switch {
	case !v.Sender.Equal(f.a2.id):
		t.Fatalf("sender %s", v.Sender)
	case v.Context.DLG() != dc.DLG() || v.Txn.Dialog() != dc.DLG():
		t.Fatal("the dialog answers disagree")
	case !v.InitiatorVerified || len(v.Chain.Hops) != 1 || !v.Chain.Hops[0].Equal(f.a1.id):
		t.Fatalf("the initiator is not proved: %+v", v.Chain)
	case v.Outcome != 0:
		t.Fatal("the stateless tool created a dialog")
	}
	// The same hop with a WPT (dth, tth, and the provenance bound through oth).
	a2wpt := f.a.caller(f.a2.id, f.a2.src, agent.Forwarded(atA2.TxnToken), proof.WPT, false)
	res, err := a2wpt.Continue(context.Background(), post(t, f.t1.url), dc, prov)
	mustOK(t, err)
	res.Body.Close()
	if v := <-f.t1.seen; v.Proof != proof.WPT || v.Context.DLG() != dc.DLG() || !v.InitiatorVerified {
		t.Fatalf("WPT hop: %+v", v)
	}
}

// Figure 3 refusals, each with its code: a Txn-Token for another dialog, a modified
// Dialog-Context, an uncovered Dialog-Context, and a forged initiator.
func TestDialogBindingFigure3_Refusals(t *testing.T) {
	f := newFigure3(t)
	atA2, dc := f.establish(t)
	ctx := context.Background()

	// A Txn-Token the TTS issued for another dialog.
	other, err := f.a1Tokens.TxnToken(ctx, "D-other")
	mustOK(t, err)
	a2 := f.a.caller(f.a2.id, f.a2.src, agent.Forwarded(other), proof.HTTPSig, false)
	res, err := a2.Continue(ctx, post(t, f.t1.url), dc, nil)
	testkit.WantProblem(t, res, err, errcode.DialogMismatch)

	// A hop rewrites Dialog-Context after A2 signed.
	tampered := f.a.caller(f.a2.id, f.a2.src, agent.Forwarded(atA2.TxnToken), proof.HTTPSig, false)
	tampered.Client.Transport.(*agent.Transport).Base = rewrite(func(r *http.Request) {
		r.Header.Set(dialog.HeaderName, strings.Replace(dc.Value(), dc.DLG(), dc.DLG()+"x", 1))
	})
	res, err = tampered.Continue(ctx, post(t, f.t1.url), dc, nil)
	testkit.WantProblem(t, res, err, errcode.InvalidSignature)

	// Dialog-Context added after signing: not covered by the signature.
	uncovered := f.a.caller(f.a2.id, f.a2.src, nil, proof.HTTPSig, false)
	uncovered.Client.Transport.(*agent.Transport).Base = rewrite(func(r *http.Request) { dc.Set(r.Header) })
	res, err = uncovered.Client.Do(post(t, f.t1.url))
	testkit.WantProblem(t, res, err, errcode.DialogContextNotCovered)

	// The tool names D1 with A1 as initiator and sends it to A2 as if it were A1's:
	// D1 exists at A2, so the forged request must prove A1 as origin; at a fresh
	// dialog identifier the sender is not the named initiator.
	forged, _ := dialog.New("D-forged", f.a1.id)
	forger := f.a.caller(f.t1.id, f.t1.src, nil, proof.HTTPSig, false)
	res, err = forger.Continue(ctx, post(t, f.a2.url), forged, nil)
	testkit.WantProblem(t, res, err, errcode.InitiatorMismatch)
}

type rewrite func(*http.Request)

func (rw rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	rw(r)
	return http.DefaultTransport.RoundTrip(r)
}

// Section 13, Origin: a receiver several hops away verifies which participant
// initiated the dialog; a chain whose origin is not the initiator is refused.
func TestDialogBindingSec13_Origin(t *testing.T) {
	f := newFigure3(t)
	atA2, dc := f.establish(t)
	a2, _ := f.a2ContinuesToT1(t, atA2, dc, false)
	if v := <-f.t1.seen; !v.InitiatorVerified || !v.Chain.Hops[0].Equal(dc.Initiator()) {
		t.Fatal("origin not verified")
	}
	// Build a chain whose origin is A2 for A1's dialog D1: A2 signs a request in D1 to
	// itself, and the record of that hop is sent to the tool as the origin.
	a2toA2 := f.a.caller(f.a2.id, f.a2.src, agent.Forwarded(atA2.TxnToken), proof.HTTPSig, false)
	res, err := a2toA2.Continue(context.Background(), post(t, f.a2.url), dc, nil)
	mustOK(t, err)
	res.Body.Close()
	self := <-f.a2.seen
	forgedProv, err := self.Forward()
	mustOK(t, err)
	res, err = a2.Continue(context.Background(), post(t, f.t1.url), dc, forgedProv)
	testkit.WantProblem(t, res, err, errcode.InitiatorMismatch)
}

// Section 13, Integrity: a hop cannot change the dialog context without breaking a
// WIMSE proof, the current hop's or an earlier one's.
func TestDialogBindingSec13_Integrity(t *testing.T) {
	f := newFigure3(t)
	atA2, dc := f.establish(t)
	prov, err := atA2.Forward()
	mustOK(t, err)
	// A2 (a participant, signing honestly) forwards with a changed context: its own
	// signature verifies, but A1's record was made for the original context.
	changed, err := dialog.New(dc.DLG()+"-changed", dc.Initiator())
	mustOK(t, err)
	a2 := f.a.caller(f.a2.id, f.a2.src, nil, proof.HTTPSig, false)
	res, err := a2.Continue(context.Background(), post(t, f.t1.url), changed, prov)
	testkit.WantProblem(t, res, err, errcode.ProvenanceDialogMismatch)
}

// Section 13, Sender binding: the receiver learns which workload presented the
// Txn-Token, and a party without a WIT cannot make a proof for it.
func TestDialogBindingSec13_SenderBinding(t *testing.T) {
	f := newFigure3(t)
	atA2, dc := f.establish(t)
	// No WIT, no proof: the stolen token alone is refused.
	req := post(t, f.t1.url)
	dc.Set(req.Header)
	req.Header.Set("Txn-Token", atA2.TxnToken)
	res, err := http.DefaultClient.Do(req)
	testkit.WantProblem(t, res, err, errcode.MissingCredential)
	// Another workload presenting the token is identified as itself.
	tool := f.a.caller(f.t1.id, f.t1.src, agent.Forwarded(atA2.TxnToken), proof.HTTPSig, false)
	res, err = tool.Continue(context.Background(), post(t, f.t1.url), dc, nil)
	mustOK(t, err)
	res.Body.Close()
	if v := <-f.t1.seen; !v.Sender.Equal(f.t1.id) || v.Txn.ReqWL == v.Sender.String() {
		t.Fatalf("the presenter is not the one learned: %+v", v)
	}
}

// Section 13, Dialog-bound authorization: a Txn-Token issued for one dialog is
// rejected in another, and outside any dialog.
func TestDialogBindingSec13_DialogBoundAuthorization(t *testing.T) {
	f := newFigure3(t)
	atA2, _ := f.establish(t)
	d2, _ := dialog.New("D2", f.a2.id)
	a2 := f.a.caller(f.a2.id, f.a2.src, agent.Forwarded(atA2.TxnToken), proof.HTTPSig, false)
	res, err := a2.Continue(context.Background(), post(t, f.t1.url), d2, nil)
	testkit.WantProblem(t, res, err, errcode.DialogMismatch)
	// No Dialog-Context at all, same token.
	req := post(t, f.t1.url)
	req = req.WithContext(agent.WithTxnTokenSource(context.Background(), agent.Forwarded(atA2.TxnToken)))
	req.Header.Set("Txn-Token", atA2.TxnToken)
	res, err = a2.Client.Do(req)
	testkit.WantProblem(t, res, err, errcode.DialogMismatch)
}

// Section 13, Response binding: a signed response cannot be moved to another request,
// and it carries the dialog context of its request.
func TestDialogBindingSec13_ResponseBinding(t *testing.T) {
	f := newFigure3(t)
	atA2, dc := f.establish(t)
	ctx := context.Background()
	// Capture a signed response of the tool to one request...
	var captured *http.Response
	var capturedBody []byte
	first := f.a.caller(f.a2.id, f.a2.src, agent.Forwarded(atA2.TxnToken), proof.HTTPSig, true)
	first.Client.Transport.(*agent.Transport).Base = capture(func(r *http.Response) {
		capturedBody, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(capturedBody))
		captured = r
	})
	res, err := first.Continue(ctx, post(t, f.t1.url), dc, nil)
	mustOK(t, err)
	res.Body.Close()
	<-f.t1.seen
	// ...and serve it as the answer to the next request: its wimse-req-nonce is wrong.
	second := f.a.caller(f.a2.id, f.a2.src, agent.Forwarded(atA2.TxnToken), proof.HTTPSig, true)
	second.Client.Transport.(*agent.Transport).Base = replay{captured, capturedBody}
	_, err = second.Continue(ctx, post(t, f.t1.url), dc, nil)
	if errcode.CodeOf(err) != errcode.RequestNonceMismatch {
		t.Fatalf("moved response: %v", err)
	}
	// A response signed by its server but echoing another Dialog-Context is refused by
	// the requester (section 7).
	_, srcT := f.t1.id, f.t1.src
	rogue := httptest.NewUnstartedServer(nil)
	rogueURL := "http://" + rogue.Listener.Addr().String() + "/invoke"
	verifier := httpsig.NewVerifier(wit.NewValidator(f.a.trust), httpsig.WithAudiences(rogueURL))
	rogue.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := verifier.VerifyRequest(r.Context(), r)
		if err != nil {
			problem.Write(w, err)
			return
		}
		c, _ := srcT.Credential(r.Context())
		other, _ := dialog.New(dc.DLG(), f.t1.id) // same dlg, another initiator
		other.Set(w.Header())
		w.Header().Set("Content-Type", "application/json")
		body := []byte(`{"ok":true}`)
		if err := httpsig.NewSigner(c.Key, c.WIT).SignResponse(200, w.Header(), body, r, v.Nonce); err != nil {
			problem.Write(w, err)
			return
		}
		w.WriteHeader(200)
		w.Write(body)
	})
	rogue.Start()
	defer rogue.Close()
	_, err = first.Continue(ctx, post(t, rogueURL), dc, nil)
	if errcode.CodeOf(err) != errcode.DialogContextMismatch {
		t.Fatalf("response with another Dialog-Context: %v", err)
	}
}

type capture func(*http.Response)

func (c capture) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		c(res)
	}
	return res, err
}

type replay struct {
	res  *http.Response
	body []byte
}

func (rp replay) RoundTrip(r *http.Request) (*http.Response, error) {
	res := *rp.res
	res.Body = io.NopCloser(bytes.NewReader(rp.body))
	res.Request = r
	return &res, nil
}

// The agent's Txn-Token source asks the TTS once per dialog and keeps the token until
// shortly before it expires.
func TestTTSSourceCachesPerDialog(t *testing.T) {
	f := newFigure3(t)
	now := time.Now()
	clock := func() time.Time { return now }
	src := agent.NewTTSSource(f.a.ttsClient(f.a1.src), "a.example", "trip.book", f.a.selfSigned(f.a1.id, f.a1.src), clock)
	ctx := context.Background()
	t1, err := src.TxnToken(ctx, "D1")
	mustOK(t, err)
	t2, err := src.TxnToken(ctx, "D1")
	mustOK(t, err)
	t3, err := src.TxnToken(ctx, "D2")
	mustOK(t, err)
	if t1 != t2 || t1 == t3 {
		t.Fatal("one token per dialog, reused while fresh")
	}
	now = now.Add(10 * time.Minute) // past the 5-minute Txn-Token lifetime
	t4, err := src.TxnToken(ctx, "D1")
	mustOK(t, err)
	if t4 == t1 {
		t.Fatal("an expiring token was served from the cache")
	}
}
