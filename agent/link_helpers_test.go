package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// recorder keeps every request that reaches a server of domain B, as the server
// received it: method, target, every header field and the whole body.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	server string
	method string
	target string
	header http.Header
	body   []byte
}

func (rec *recorder) wrap(server string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{server: server, method: r.Method, target: r.URL.String(), header: r.Header.Clone(), body: body})
		rec.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// domainB records what reaches domain B's WIT issuer and TTS (testbed.WithMiddleware).
func (rec *recorder) domainB(domain, server string, next http.Handler) http.Handler {
	if domain != "b.example" {
		return next
	}
	return rec.wrap(map[string]string{testbed.ServerWITIssuer: "wit-issuer B", testbed.ServerTTS: "TTS B"}[server], next)
}

func (rec *recorder) all() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]recorded(nil), rec.reqs...)
}

// figure5 is A (a.example), B (b.example) and C (c.example, an AS domain B does not
// trust for grants) of package testbed, each with its own WIT issuer (development
// authentication) and its own TTS binary (AS A and/or AS B at one token endpoint), real
// keys published at real JWKS endpoints, one settable clock. B's TTS trusts the WIT
// issuers of B, A (AS B's clients) and C (so that C's workloads authenticate and the
// grant itself is what is refused).
type figure5 struct {
	t       *testing.T
	ctx     context.Context
	clock   *testkit.Clock
	a, b, c *testbed.Domain
	rec     *recorder
	// a2Srv is A2's server (domain A): A1 starts D1 there. b1Srv is B1's (domain B).
	a2Srv, b1Srv *httptest.Server
	atA2         chan *dialog.Verified
	atB1         chan b1Result
	a1, a2, a3   testbed.Workload
	b1, c1       testbed.Workload
}

type b1Result struct {
	v   *dialog.Verified
	acc *agent.Accepted
	err error
}

func (f *figure5) wits(ds ...*testbed.Domain) *wit.Validator { return testbed.WITs(f.ctx, ds...) }

func newFigure5(t *testing.T) *figure5 {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// The agents' transports sign with the real clock; the verifiers use this one,
	// started at the real time and moved only by the tests.
	clock := testkit.NewClock(time.Now().Truncate(time.Second))
	f := &figure5{t: t, ctx: ctx, clock: clock, rec: &recorder{}, atA2: make(chan *dialog.Verified, 4), atB1: make(chan b1Result, 4)}
	// AS A issues grants for AS B and AS C; AS C for AS B (AS B does not trust it).
	// AS B redeems AS A's grants; AS A's keys are found through its RFC 8414 metadata.
	w, err := testbed.Start(ctx, testbed.WithClock(clock.Now), testbed.WithScopes("trip.read", "trip.book"),
		testbed.WithDomainC(), testbed.WithMiddleware(f.rec.domainB))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	f.a, f.b, f.c = w.A, w.B, w.C
	a, b, c := f.a, f.b, f.c
	f.a1 = a.WorkloadAlg("/agent/a1", keys.EdDSA)
	f.a2 = a.Workload("/agent/a2")
	f.a3 = a.Workload("/agent/a3")
	f.b1 = b.WorkloadAlg("/agent/b1", keys.EdDSA)
	f.c1 = c.Workload("/agent/c1")

	// A2: a stateful participant of domain A that signs its responses.
	f.a2Srv = httptest.NewUnstartedServer(nil)
	a2aud := "http://" + f.a2Srv.Listener.Addr().String() + "/task"
	f.a2Srv.Config.Handler = f.receiver(a2aud, f.a2, f.wits(a), txntoken.NewVerifier(a.TTSKeys(ctx), "a.example", txntoken.WithIssuer(a.TTSURL), txntoken.WithClock(clock.Now))).
		Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.atA2 <- dialog.FromRequest(r)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}))
	// B1: a stateful participant of domain B; it trusts domain A's WIT issuer, so that
	// A2 can start D2 with it, and takes no Txn-Token from anyone (none is configured).
	f.b1Srv = httptest.NewUnstartedServer(nil)
	b1aud := "http://" + f.b1Srv.Listener.Addr().String() + "/task"
	acceptor := &agent.LinkAcceptor{
		TTS:          &txntoken.Client{TokenEndpoint: b.TokenEndpoint(), WITSource: f.b1.Source, Proof: proof.HTTPSig, Now: clock.Now},
		AccessTokens: &chaining.AccessTokenVerifier{Keys: b.TTSKeys(ctx), Issuer: b.TTSURL, Audience: "b.example", Now: clock.Now},
		TrustDomain:  "b.example",
	}
	f.b1Srv.Config.Handler = f.rec.wrap("B1", f.receiver(b1aud, f.b1, f.wits(a, b), nil).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		acc, err := acceptor.Accept(r.Context(), r)
		f.atB1 <- b1Result{v: dialog.FromRequest(r), acc: acc, err: err}
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(map[string]string{"code": string(errcode.CodeOf(err))})
			return
		}
		io.WriteString(w, `{"ok":true}`)
	})))
	f.a2Srv.Start()
	f.b1Srv.Start()
	t.Cleanup(f.a2Srv.Close)
	t.Cleanup(f.b1Srv.Close)
	return f
}

func (f *figure5) receiver(aud string, self testbed.Workload, wits *wit.Validator, txn dialog.TxnTokenVerifier) *dialog.Receiver {
	replay := store.NewMemory(store.WithClock(f.clock.Now))
	opts := []dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(aud), httpsig.WithReplay(replay))),
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords(store.WithClock(f.clock.Now)))),
		testbed.SignsResponses(self),
	}
	if txn != nil {
		opts = append(opts, dialog.WithTxnTokens(txn))
	}
	rc, err := dialog.NewReceiver(opts...)
	if err != nil {
		f.t.Fatal(err)
	}
	return rc
}

// transport is w's signing transport: HTTP signature, signed responses required and
// verified with the WIT issuers of ds.
func (f *figure5) transport(w testbed.Workload, tokens agent.TxnTokenSource, ds ...*testbed.Domain) *agent.Transport {
	return &agent.Transport{Source: w.Source, Tokens: tokens, RequireSignedResponse: true,
		Responses: httpsig.NewVerifier(f.wits(ds...))}
}

// startD1 is step 0: A1 initiates D1 with A2 and sends a request in it with a domain-A
// Txn-Token recording D1; it returns what A2 verified.
func (f *figure5) startD1(scope string) *dialog.Verified {
	f.t.Helper()
	a1 := &agent.Agent{Self: f.a1.ID, Client: &http.Client{Transport: f.transport(f.a1, f.a.TxnTokens(f.a1, "alice@a.example", scope), f.a)}}
	d1 := "D1-" + agent.NewDialogID()
	res, _, err := a1.Start(f.ctx, f.post(f.a2Srv.URL+"/task"), d1)
	if err != nil {
		f.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		f.t.Fatalf("A1 -> A2: %d", res.StatusCode)
	}
	v := <-f.atA2
	if v.Context.DLG() != d1 || v.Txn.Dialog() != d1 || !v.Sender.Equal(f.a1.ID) || v.Outcome != dialog.Established {
		f.t.Fatalf("at A2: %+v", v)
	}
	return v
}

func (f *figure5) post(url string) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"task":"book a hotel in domain B"}`))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// linker is A2's: its transport verifies B1's signed responses with domain B's WIT
// issuer.
func (f *figure5) linker(w testbed.Workload) *agent.Linker {
	return &agent.Linker{Self: w.ID, Transport: f.transport(w, nil, f.a, f.b),
		Tokens: &chaining.Client{WITSource: w.Source, Now: f.clock.Now}, Now: f.clock.Now}
}

func (f *figure5) chainingClient(w testbed.Workload) *chaining.Client {
	return &chaining.Client{WITSource: w.Source, Now: f.clock.Now}
}

// wantOAuth checks a refusal's OAuth error and stable code.
func wantOAuth(t *testing.T, err error, oauth string, code errcode.Code) {
	t.Helper()
	if errcode.CodeOf(err) != code || !strings.Contains(err.Error(), "token endpoint: "+oauth+":") {
		t.Fatalf("got %v, want %s with code %s", err, oauth, code)
	}
}
