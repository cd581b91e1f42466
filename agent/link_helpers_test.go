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
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// domain is one trust domain of Figure 5 on loopback: its own WIT issuer (witissuer,
// development authentication) and its own TTS binary (tts.Server with AS A and/or AS B
// at one token endpoint), real keys published at real JWKS endpoints, one settable clock.
type domain struct {
	name   string
	clock  *testkit.Clock
	witHS  *httptest.Server
	witURL string
	ttsHS  *httptest.Server
	ttsURL string
	ring   *keys.Ring
	tts    *tts.Server
	replay store.Replay
}

func (d *domain) endpoint() string { return d.ttsURL + tts.PathToken }

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

func (rec *recorder) all() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]recorded(nil), rec.reqs...)
}

// figure5 is A (a.example), B (b.example) and C (c.example, an AS domain B does not
// trust for grants). B's TTS trusts the WIT issuers of B, A (AS B's clients) and C (so
// that C's workloads authenticate and the grant itself is what is refused).
type figure5 struct {
	t       *testing.T
	ctx     context.Context
	clock   *testkit.Clock
	a, b, c *domain
	rec     *recorder
	// a2Srv is A2's server (domain A): A1 starts D1 there. b1Srv is B1's (domain B).
	a2Srv, b1Srv *httptest.Server
	atA2         chan *dialog.Verified
	atB1         chan b1Result
	a1, a2, a3   *workloadCreds
	b1, c1       *workloadCreds
}

type b1Result struct {
	v   *dialog.Verified
	acc *agent.Accepted
	err error
}

// workloadCreds is a workload whose WITs come from its domain's WIT issuer over HTTP.
type workloadCreds struct {
	id  identifier.ID
	src wit.Source
}

func newDomain(t *testing.T, name string, clock *testkit.Clock) *domain {
	d := &domain{name: name, clock: clock, replay: store.NewMemory(store.WithClock(clock.Now))}
	d.witHS = httptest.NewUnstartedServer(nil)
	d.witURL = "http://" + d.witHS.Listener.Addr().String()
	d.ttsHS = httptest.NewUnstartedServer(nil)
	d.ttsURL = "http://" + d.ttsHS.Listener.Addr().String()
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	d.ring = keys.NewRing(k, clock.Now)
	return d
}

// witIssuer is the domain's in-process WIT issuer (witissuer.New), development
// authentication for the domain's workloads.
func (d *domain) witIssuer(t *testing.T) http.Handler {
	k, _ := keys.Generate(keys.ES256)
	rot, err := keys.NewStaticRotator(k, keys.RotationConfig{Retain: 2 * time.Hour, Now: d.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := witissuer.NewDev(nil, []string{"wimse://" + d.name + "/"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := witissuer.New(witissuer.Config{Issuer: d.witURL, Keys: rot, Replay: store.NewMemory(store.WithClock(d.clock.Now)),
		Policy: witissuer.Policy{TrustDomains: []string{d.name}}, Routes: []witissuer.Route{{Path: "/v1/wit", Methods: []witissuer.Authenticator{dev}}},
		Now: d.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler()
}

// workload gets its WITs from the domain's WIT issuer, a fresh key for each.
func (d *domain) workload(t *testing.T, path string, alg string) *workloadCreds {
	id := identifier.MustParse("wimse://" + d.name + path)
	c := &witissuer.Client{Endpoint: d.witURL + "/v1/wit", Audience: d.witURL, Subject: id.String(), Now: d.clock.Now}
	return &workloadCreds{id: id, src: c.Source(wit.WithClock(d.clock.Now), wit.WithKeyAlgorithm(alg))}
}

// trustOf trusts the WIT issuers of ds through their JWKS URLs (fetched lazily).
func trustOf(ctx context.Context, clock *testkit.Clock, ds ...*domain) *keys.Trust {
	tr := keys.NewTrust()
	for _, d := range ds {
		tr.AddTrustDomain(d.name, keys.NewLazyRemoteSet(ctx, d.witURL+"/.well-known/jwks.json", time.Nanosecond, clock.Now))
	}
	return tr
}

func (f *figure5) wits(ds ...*domain) *wit.Validator {
	return wit.NewValidator(trustOf(f.ctx, f.clock, ds...), wit.WithClock(f.clock.Now), wit.WithCache(256, time.Minute))
}

// ttsBinary builds a domain's TTS and chaining handlers, as cmd/tts does.
func (f *figure5) ttsBinary(d *domain, trusted []*domain, grantPeers []chaining.GrantPeer, bearerPeers []chaining.BearerPeer) http.Handler {
	t := f.t
	auths := oauth.WIMSEAuthenticators(f.wits(trusted...), d.replay, d.endpoint())
	hopts := tts.HandlerOptions{Now: f.clock.Now}
	handlers := []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{d.ttsURL}, tts.SelfSignedOptions{HandlerOptions: hopts})}
	if bearerPeers != nil {
		own, err := tts.NewJWTHandler(tts.TokenTypeAccessToken, []tts.JWTIssuer{{Issuer: d.ttsURL, Keys: chaining.RingKeySet(d.ring),
			Typ: chaining.AccessTokenTyp, Audiences: []string{d.name}}}, hopts)
		if err != nil {
			t.Fatal(err)
		}
		handlers = append(handlers, own)
	}
	cfg := tts.Config{Issuer: d.ttsURL, TrustDomains: []string{d.name}, Keys: d.ring, Authenticators: auths,
		SubjectHandlers: handlers, Replay: d.replay, Now: f.clock.Now,
		Policy: tts.Policy{Rules: []tts.Rule{{Workload: "wimse://" + d.name + "/"}}}}
	var (
		asA *chaining.GrantIssuer
		asB *chaining.JWTBearer
		err error
	)
	if grantPeers != nil {
		if asA, err = chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: d.ttsURL, Keys: d.ring, Authenticators: auths,
			TxnTokens: tts.TxnTokenVerifierFor(cfg), Peers: grantPeers, Now: f.clock.Now}); err != nil {
			t.Fatal(err)
		}
	}
	if bearerPeers != nil {
		if asB, err = chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: d.ttsURL, Keys: d.ring, Authenticators: auths, Replay: d.replay,
			Peers: bearerPeers, Audiences: []string{d.name}, Now: f.clock.Now}); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Grants = chaining.Handlers(asA, asB)
	if d.tts, err = tts.New(cfg); err != nil {
		t.Fatal(err)
	}
	return d.tts.Handler()
}

func newFigure5(t *testing.T) *figure5 {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// The agents' transports sign with the real clock; the verifiers use this one,
	// started at the real time and moved only by the tests.
	clock := testkit.NewClock(time.Now().Truncate(time.Second))
	f := &figure5{t: t, ctx: ctx, clock: clock, rec: &recorder{}, atA2: make(chan *dialog.Verified, 4), atB1: make(chan b1Result, 4)}
	f.a, f.b, f.c = newDomain(t, "a.example", clock), newDomain(t, "b.example", clock), newDomain(t, "c.example", clock)
	a, b, c := f.a, f.b, f.c
	scopes := []string{"trip.read", "trip.book"}

	a.witHS.Config.Handler = a.witIssuer(t)
	b.witHS.Config.Handler = f.rec.wrap("wit-issuer B", b.witIssuer(t))
	c.witHS.Config.Handler = c.witIssuer(t)
	// AS A issues grants for AS B and AS C; AS C for AS B (AS B does not trust it).
	a.ttsHS.Config.Handler = f.ttsBinary(a, []*domain{a}, []chaining.GrantPeer{
		{Issuer: b.ttsURL, TokenEndpoint: b.endpoint(), Scopes: scopes},
		{Issuer: c.ttsURL, TokenEndpoint: c.endpoint(), Scopes: scopes},
	}, nil)
	c.ttsHS.Config.Handler = f.ttsBinary(c, []*domain{c}, []chaining.GrantPeer{{Issuer: b.ttsURL, Scopes: scopes}}, nil)
	// AS B redeems AS A's grants; AS A's keys are found through its RFC 8414 metadata.
	b.ttsHS.Config.Handler = f.rec.wrap("TTS B", f.ttsBinary(b, []*domain{b, a, c}, nil, []chaining.BearerPeer{{
		Issuer: a.ttsURL, Keys: chaining.NewDiscoveredKeys(ctx, a.ttsURL, nil, time.Nanosecond, clock.Now), Scopes: scopes,
		Subject: chaining.SubjectMap{Mode: chaining.SubjectPrefix, Prefix: "a.example:"},
	}}))
	for _, d := range []*domain{a, b, c} {
		d.witHS.Start()
		d.ttsHS.Start()
		t.Cleanup(d.witHS.Close)
		t.Cleanup(d.ttsHS.Close)
	}
	f.a1 = a.workload(t, "/agent/a1", keys.EdDSA)
	f.a2 = a.workload(t, "/agent/a2", keys.ES256)
	f.a3 = a.workload(t, "/agent/a3", keys.ES256)
	f.b1 = b.workload(t, "/agent/b1", keys.EdDSA)
	f.c1 = c.workload(t, "/agent/c1", keys.ES256)

	// A2: a stateful participant of domain A that signs its responses.
	f.a2Srv = httptest.NewUnstartedServer(nil)
	a2aud := "http://" + f.a2Srv.Listener.Addr().String() + "/task"
	ttsAKeys, err := keys.NewRemoteSet(ctx, a.ttsURL+tts.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	f.a2Srv.Config.Handler = f.receiver(a2aud, f.a2, f.wits(a), txntoken.NewVerifier(ttsAKeys, "a.example", txntoken.WithIssuer(a.ttsURL), txntoken.WithClock(clock.Now))).
		Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.atA2 <- dialog.FromRequest(r)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}))
	// B1: a stateful participant of domain B; it trusts domain A's WIT issuer, so that
	// A2 can start D2 with it, and takes no Txn-Token from anyone (none is configured).
	f.b1Srv = httptest.NewUnstartedServer(nil)
	b1aud := "http://" + f.b1Srv.Listener.Addr().String() + "/task"
	ttsBKeys := keys.NewLazyRemoteSet(ctx, b.ttsURL+tts.PathJWKS, time.Nanosecond, clock.Now)
	acceptor := &agent.LinkAcceptor{
		TTS:          &txntoken.Client{TokenEndpoint: b.endpoint(), WITSource: f.b1.src, Proof: proof.HTTPSig, Now: clock.Now},
		AccessTokens: &chaining.AccessTokenVerifier{Keys: ttsBKeys, Issuer: b.ttsURL, Audience: "b.example", Now: clock.Now},
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

func (f *figure5) receiver(aud string, self *workloadCreds, wits *wit.Validator, txn dialog.TxnTokenVerifier) *dialog.Receiver {
	replay := store.NewMemory(store.WithClock(f.clock.Now))
	opts := []dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(aud), httpsig.WithReplay(replay))),
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords(store.WithClock(f.clock.Now)))),
		dialog.WithResponseSigner(func(ctx context.Context) (*httpsig.Signer, error) {
			cred, err := self.src.Credential(ctx)
			if err != nil {
				return nil, err
			}
			return httpsig.NewSigner(cred.Key, cred.WIT), nil
		}),
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
func (f *figure5) transport(w *workloadCreds, tokens agent.TxnTokenSource, ds ...*domain) *agent.Transport {
	return &agent.Transport{Source: w.src, Tokens: tokens, RequireSignedResponse: true,
		Responses: httpsig.NewVerifier(f.wits(ds...))}
}

// txnSource is A1's Txn-Token source at TTS A: a self_signed subject alice@a.example.
func (f *figure5) txnSource(w *workloadCreds, scope string) *agent.TTSSource {
	c := &txntoken.Client{TokenEndpoint: f.a.endpoint(), WITSource: w.src, Proof: proof.HTTPSig, Now: f.clock.Now}
	subject := func(ctx context.Context) (string, string, error) {
		cred, err := w.src.Credential(ctx)
		if err != nil {
			return "", "", err
		}
		tok, err := txntoken.NewSelfSignedToken(cred.Key, w.id, "alice@a.example", f.a.ttsURL, "trip.read trip.book", 5*time.Minute, f.clock.Now())
		return tok, tts.TokenTypeSelfSigned, err
	}
	return agent.NewTTSSource(c, "a.example", scope, subject, f.clock.Now)
}

// startD1 is step 0: A1 initiates D1 with A2 and sends a request in it with a domain-A
// Txn-Token recording D1; it returns what A2 verified.
func (f *figure5) startD1(scope string) *dialog.Verified {
	f.t.Helper()
	a1 := &agent.Agent{Self: f.a1.id, Client: &http.Client{Transport: f.transport(f.a1, f.txnSource(f.a1, scope), f.a)}}
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
	if v.Context.DLG() != d1 || v.Txn.Dialog() != d1 || !v.Sender.Equal(f.a1.id) || v.Outcome != dialog.Established {
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
func (f *figure5) linker(w *workloadCreds) *agent.Linker {
	return &agent.Linker{Self: w.id, Transport: f.transport(w, nil, f.a, f.b),
		Tokens: &chaining.Client{WITSource: w.src, Now: f.clock.Now}, Now: f.clock.Now}
}

func (f *figure5) chainingClient(w *workloadCreds) *chaining.Client {
	return &chaining.Client{WITSource: w.src, Now: f.clock.Now}
}

// wantOAuth checks a refusal's OAuth error and stable code.
func wantOAuth(t *testing.T, err error, oauth string, code errcode.Code) {
	t.Helper()
	if errcode.CodeOf(err) != code || !strings.Contains(err.Error(), "token endpoint: "+oauth+":") {
		t.Fatalf("got %v, want %s with code %s", err, oauth, code)
	}
}
