package proxy_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
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
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// exchange is one request a recorded server received, as it received it, and its
// answer.
type exchange struct {
	server  string
	method  string
	target  string
	header  http.Header
	body    []byte
	status  int
	resBody []byte
}

// recorder keeps every exchange of the servers it wraps.
type recorder struct {
	mu  sync.Mutex
	all []exchange
}

func (rec *recorder) wrap(server string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		e := exchange{server: server, method: r.Method, target: r.URL.String(), header: r.Header.Clone(), body: body}
		rr := httptest.NewRecorder()
		next.ServeHTTP(rr, r)
		e.status, e.resBody = rr.Code, rr.Body.Bytes()
		rec.mu.Lock()
		rec.all = append(rec.all, e)
		rec.mu.Unlock()
		for k, v := range rr.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rr.Code)
		_, _ = w.Write(e.resBody)
	})
}

func (rec *recorder) of(servers ...string) []exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []exchange
	for _, e := range rec.all {
		for _, s := range servers {
			if e.server == s {
				out = append(out, e)
			}
		}
	}
	return out
}

// chainDomain is one trust domain of Figure 5 on loopback: its WIT issuer and its TTS
// binary (the TTS with AS A and/or AS B of identity chaining at its token endpoint),
// built as cmd/wit-issuer and cmd/tts build them.
type chainDomain struct {
	name           string
	witHS, ttsHS   *httptest.Server
	witURL, ttsURL string
	ring           *keys.Ring
	replay         store.Replay
	// guard, when set, runs in front of the TTS's handler (after the recorder).
	guard func(http.Handler) http.Handler
}

func (d *chainDomain) endpoint() string { return d.ttsURL + tts.PathToken }

func newChainDomain(t *testing.T, name string, rec *recorder) *chainDomain {
	d := &chainDomain{name: name, replay: store.NewMemory(), witHS: httptest.NewUnstartedServer(nil), ttsHS: httptest.NewUnstartedServer(nil)}
	d.witURL, d.ttsURL = "http://"+d.witHS.Listener.Addr().String(), "http://"+d.ttsHS.Listener.Addr().String()
	k, err := keys.Generate(keys.ES256)
	mustOK(t, err)
	d.ring = keys.NewRing(k, nil)
	wk, err := keys.Generate(keys.ES256)
	mustOK(t, err)
	rot, err := keys.NewStaticRotator(wk, keys.RotationConfig{Retain: 2 * time.Hour})
	mustOK(t, err)
	dev, err := witissuer.NewDev(nil, []string{"wimse://" + name + "/"}, witissuer.DevOptions{})
	mustOK(t, err)
	ws, err := witissuer.New(witissuer.Config{Issuer: d.witURL, Keys: rot, Replay: store.NewMemory(),
		Policy: witissuer.Policy{TrustDomains: []string{name}}, Routes: []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{dev}}}})
	mustOK(t, err)
	d.witHS.Config.Handler = rec.wrap("WIT issuer "+name, ws.Handler())
	d.witHS.Start()
	t.Cleanup(d.witHS.Close)
	return d
}

func (d *chainDomain) workload(t *testing.T, path string) (identifier.ID, wit.Source) {
	id := identifier.MustParse("wimse://" + d.name + path)
	c := &witissuer.Client{Endpoint: d.witURL + witissuer.PathWIT, Audience: d.witURL, Subject: id.String()}
	return id, c.Source(wit.WithKeyAlgorithm(keys.ES256))
}

func witsOf(ctx context.Context, ds ...*chainDomain) *wit.Validator {
	tr := keys.NewTrust()
	for _, d := range ds {
		tr.AddTrustDomain(d.name, keys.NewLazyRemoteSet(ctx, d.witURL+witissuer.PathJWKS, 100*time.Millisecond, time.Now))
	}
	return wit.NewValidator(tr, wit.WithCache(256, time.Minute))
}

// startTTS runs the domain's TTS binary: AS A for grantPeers, AS B for bearerPeers
// (whose access tokens its TTS then takes as subject tokens, Figure 5 step 4).
func (d *chainDomain) startTTS(t *testing.T, ctx context.Context, rec *recorder, trusted []*chainDomain, grantPeers []chaining.GrantPeer, bearerPeers []chaining.BearerPeer) {
	auths := oauth.WIMSEAuthenticators(witsOf(ctx, trusted...), d.replay, d.endpoint())
	handlers := []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{d.ttsURL}, tts.SelfSignedOptions{})}
	if bearerPeers != nil {
		own, err := tts.NewJWTHandler(tts.TokenTypeAccessToken, []tts.JWTIssuer{{Issuer: d.ttsURL, Keys: chaining.RingKeySet(d.ring),
			Typ: chaining.AccessTokenTyp, Audiences: []string{d.name}}}, tts.HandlerOptions{})
		mustOK(t, err)
		handlers = append(handlers, own)
	}
	cfg := tts.Config{Issuer: d.ttsURL, TrustDomains: []string{d.name}, Keys: d.ring, Authenticators: auths,
		SubjectHandlers: handlers, Replay: d.replay, Policy: tts.Policy{Rules: []tts.Rule{{Workload: "wimse://" + d.name + "/"}}}}
	var (
		asA *chaining.GrantIssuer
		asB *chaining.JWTBearer
		err error
	)
	if grantPeers != nil {
		asA, err = chaining.NewGrantIssuer(chaining.GrantIssuerConfig{Issuer: d.ttsURL, Keys: d.ring, Authenticators: auths,
			TxnTokens: tts.TxnTokenVerifierFor(cfg), Peers: grantPeers})
		mustOK(t, err)
	}
	if bearerPeers != nil {
		// A minute: the egress renews the link's access token within the test.
		asB, err = chaining.NewJWTBearer(chaining.JWTBearerConfig{Issuer: d.ttsURL, Keys: d.ring, Authenticators: auths, Replay: d.replay,
			Peers: bearerPeers, Audiences: []string{d.name}, Lifetime: time.Minute})
		mustOK(t, err)
	}
	cfg.Grants = chaining.Handlers(asA, asB)
	srv, err := tts.New(cfg)
	mustOK(t, err)
	h := srv.Handler()
	if d.guard != nil {
		h = d.guard(h)
	}
	d.ttsHS.Config.Handler = rec.wrap("TTS "+d.name, h)
	d.ttsHS.Start()
	t.Cleanup(d.ttsHS.Close)
}

// boundary is Figure 5 with the proxies: agent A2 (a.example) -> its egress, on a route
// crossing the trust boundary -> B1's ingress (b.example, boundary-facing) -> B1's
// application. Every server of domain B is recorded: its WIT issuer, TTS B (AS B's
// token endpoint is the same), the ingress and the application.
type boundary struct {
	ctx      context.Context
	clock    *testkit.Clock
	rec      *recorder
	a, b     *chainDomain
	a2, b1   identifier.ID
	app      *app
	egress   *httptest.Server
	ingress  *httptest.Server
	d1       *dialog.Context
	a1       identifier.ID
	recipB1  string
	tamperB1 func(*http.Request) // runs on each request the egress sends to domain B
	a2src    wit.Source
	// refuseTTSB, when set, removes the HTTP signature from B1's requests to TTS B,
	// which refuses them.
	refuseTTSB atomic.Bool
	// signAs, when set, is the wit.Source B1's ingress signs its responses with in
	// place of B1's: a workload on the path answering with a WIT of its own.
	signAs atomic.Pointer[wit.Source]
}

// B's servers, as recorded.
const (
	srvTTSB     = "TTS b.example"
	srvWITB     = "WIT issuer b.example"
	srvIngressB = "ingress B1"
	srvAppB     = "app B1"
	srvTTSA     = "TTS a.example"
)

type tamperHop struct{ bw *boundary }

func (h tamperHop) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.bw.tamperB1 != nil {
		h.bw.tamperB1(r)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// boundaryOptions vary newBoundary's set-up.
type boundaryOptions struct {
	// peerClient is the boundary routes' client at AS B; AS B then requires its
	// client_secret_basic authentication on the redemption, as Ory Hydra does.
	peerClient *proxy.PeerClient
}

func newBoundary(t *testing.T, opts ...boundaryOptions) *boundary {
	var o boundaryOptions
	for _, opt := range opts {
		o = opt
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bw := &boundary{ctx: ctx, clock: testkit.NewClock(time.Now()), rec: &recorder{}}
	a, b := newChainDomain(t, "a.example", bw.rec), newChainDomain(t, "b.example", bw.rec)
	bw.a, bw.b = a, b
	// AS A issues grants for AS B, for both scopes; AS B redeems A's grants for
	// trip.read only, so that a grant for trip.book is refused there.
	if o.peerClient != nil {
		b.guard = requireClient(*o.peerClient)
	}
	a.startTTS(t, ctx, bw.rec, []*chainDomain{a}, []chaining.GrantPeer{{Issuer: b.ttsURL, TokenEndpoint: b.endpoint(), Scopes: []string{"trip.read", "trip.book"}}}, nil)
	b.startTTS(t, ctx, bw.rec, []*chainDomain{b, a}, nil, []chaining.BearerPeer{{Issuer: a.ttsURL,
		Keys:    chaining.NewDiscoveredKeys(ctx, a.ttsURL, nil, 100*time.Millisecond, time.Now),
		Scopes:  []string{"trip.read"},
		Subject: chaining.SubjectMap{Mode: chaining.SubjectPrefix, Prefix: "a.example:"}}})

	var a2src, b1src wit.Source
	bw.a2, a2src = a.workload(t, "/agent/a2")
	bw.a2src = a2src
	bw.b1, b1src = b.workload(t, "/agent/b1")
	bw.a1 = identifier.MustParse("wimse://a.example/agent/a1")

	// B1's application and its boundary-facing ingress: it trusts the WIT issuers of
	// both domains (A2 is a domain-A workload) and takes no Txn-Token from anyone.
	bw.app = &app{}
	appSrv := httptest.NewServer(bw.rec.wrap(srvAppB, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bw.app.mu.Lock()
		bw.app.seen = append(bw.app.seen, r)
		bw.app.body = append(bw.app.body, string(body))
		bw.app.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		// An application that leaks: the egress must not hand these to the agent.
		w.Header().Set(txntoken.HeaderName, "b-domain-token")
		w.Header().Set(proxy.LinkedDialogField, "made-up")
		_, _ = io.WriteString(w, `{"booked":true}`)
	})))
	t.Cleanup(appSrv.Close)
	bw.recipB1 = "https://b1.b.example/"
	ttsBKeys := keys.NewLazyRemoteSet(ctx, b.ttsURL+tts.PathJWKS, 100*time.Millisecond, time.Now)
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(witsOf(ctx, a, b), httpsig.WithAudiences(bw.recipB1), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())),
		dialog.WithResponseSigner(func(ctx context.Context) (*httpsig.Signer, error) {
			if src := bw.signAs.Load(); src != nil {
				return signerOf(*src)(ctx)
			}
			return signerOf(b1src)(ctx)
		}),
	)
	mustOK(t, err)
	in, err := proxy.NewIngress(proxy.IngressConfig{Receiver: rc, Upstream: appSrv.URL, Boundary: &proxy.BoundaryIngress{
		Acceptor: &agent.LinkAcceptor{
			TTS: &txntoken.Client{TokenEndpoint: b.endpoint(), WITSource: b1src, Proof: proof.HTTPSig,
				HTTPClient: &http.Client{Transport: unsignedWhen{&bw.refuseTTSB}}},
			AccessTokens: &chaining.AccessTokenVerifier{Keys: ttsBKeys, Issuer: b.ttsURL, Audience: "b.example"},
			TrustDomain:  "b.example",
		},
		TxnTokens: txntoken.NewVerifier(ttsBKeys, "b.example", txntoken.WithIssuer(b.ttsURL)),
		Now:       bw.clock.Now,
	}})
	mustOK(t, err)
	bw.ingress = httptest.NewServer(bw.rec.wrap(srvIngressB, in))
	t.Cleanup(bw.ingress.Close)

	// A2's egress: its Txn-Tokens come from TTS A (self-signed subject alice).
	boundaryRoute := func(prefix, scope string) proxy.Route {
		br := &proxy.BoundaryRoute{GrantEndpoint: a.endpoint(), PeerIssuer: b.ttsURL, PeerTokenEndpoint: b.endpoint(), PeerTrustDomain: "b.example", Scope: scope, PeerClient: o.peerClient}
		return proxy.Route{Prefix: prefix, Upstream: bw.ingress.URL + "/hotel", TxnAudience: "a.example", TxnScope: "trip.read trip.book",
			Recipient: bw.recipB1, RequireSignedResponse: true, Boundary: br}
	}
	eg, err := proxy.NewEgress(proxy.EgressConfig{
		Self: bw.a2, WIT: a2src,
		TTS: &txntoken.Client{TokenEndpoint: a.endpoint(), WITSource: a2src, Proof: proof.WPT},
		Subject: func(ctx context.Context) (string, string, error) {
			c, err := a2src.Credential(ctx)
			if err != nil {
				return "", "", err
			}
			tok, err := txntoken.NewSelfSignedToken(c.Key, bw.a2, "alice@a.example", a.ttsURL, "trip.read trip.book", time.Minute, time.Now())
			return tok, tts.TokenTypeSelfSigned, err
		},
		Responses: httpsig.NewVerifier(witsOf(ctx, a, b)),
		Base:      tamperHop{bw},
		Now:       bw.clock.Now,
		Routes:    []proxy.Route{boundaryRoute("/b1", "trip.read"), boundaryRoute("/b1-book", "trip.book")},
	})
	mustOK(t, err)
	bw.egress = httptest.NewServer(eg)
	t.Cleanup(bw.egress.Close)

	// Step 0: A2 is in dialog D1 of domain A, which A1 initiated; the agent names it
	// with the Dialog-Context it received.
	bw.d1, err = dialog.New("D1-"+agent.NewDialogID(), bw.a1)
	mustOK(t, err)
	return bw
}

// call is the agent's plain request to its egress in D1.
func (bw *boundary) call(t *testing.T, path, body string) (*http.Response, []byte) {
	t.Helper()
	return post(t, bw.egress.URL+path, body, http.Header{dialog.HeaderName: {bw.d1.Value()}})
}

func formOf(t *testing.T, e exchange) url.Values {
	t.Helper()
	v, err := url.ParseQuery(string(e.body))
	mustOK(t, err)
	return v
}

func jsonOf(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	mustOK(t, json.Unmarshal(b, &m))
	return m
}

// claimsOf decodes a JWT's payload (no verification: the test reads what was sent).
func claimsOf(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %.20q", tok)
	}
	p, err := base64.RawURLEncoding.DecodeString(parts[1])
	mustOK(t, err)
	return jsonOf(t, p)
}

// tokenRequests are the token endpoint exchanges of server with grant_type gt.
func tokenRequests(t *testing.T, rec *recorder, server, gt string) []exchange {
	var out []exchange
	for _, e := range rec.of(server) {
		if e.method == "POST" && strings.HasSuffix(e.target, tts.PathToken) && formOf(t, e).Get("grant_type") == gt {
			out = append(out, e)
		}
	}
	return out
}

// figure5Steps asserts steps 1 to 4 of Figure 5 for the link made by the first request
// and returns D2, the access token and domain A's Txn-Token recording D1.
func (bw *boundary) figure5Steps(t *testing.T) (d2 *dialog.Context, accessToken, txnA string) {
	t.Helper()
	// Step 1: A2 (its egress) sent its domain-A Txn-Token, which records D1, to AS A for
	// a JWT authorization grant for AS B, and AS A issued it.
	grants := 0
	var grant string
	for _, e := range tokenRequests(t, bw.rec, srvTTSA, oauth.GrantTypeTokenExchange) {
		f := formOf(t, e)
		if f.Get("requested_token_type") != oauth.TokenTypeJWT {
			continue
		}
		grants++
		txnA = f.Get("subject_token")
		if f.Get("subject_token_type") != oauth.TokenTypeTxnToken || f.Get("audience") != bw.b.ttsURL || e.status != 200 {
			t.Fatalf("step 1: grant request %v -> %d %s", f, e.status, e.resBody)
		}
		if c := claimsOf(t, txnA); c["tctx"].(map[string]any)["dlg"] != bw.d1.DLG() || c["aud"] != "a.example" {
			t.Fatalf("step 1: the subject Txn-Token does not record D1: %v", c)
		}
		res := jsonOf(t, e.resBody)
		grant, _ = res["access_token"].(string)
		if res["issued_token_type"] != oauth.TokenTypeJWT || claimsOf(t, grant)["aud"] != bw.b.ttsURL {
			t.Fatalf("step 1: AS A answered %s", e.resBody)
		}
	}
	if grants != 1 {
		t.Fatalf("step 1: %d grant requests at AS A, want 1", grants)
	}
	// Step 2: the grant went to AS B (RFC 7523), which issued an access token of
	// domain B bound to A2.
	redeems := tokenRequests(t, bw.rec, srvTTSB, oauth.GrantTypeJWTBearer)
	if len(redeems) != 1 || formOf(t, redeems[0]).Get("assertion") != grant || redeems[0].status != 200 {
		t.Fatalf("step 2: %d jwt-bearer requests at AS B, or not the grant", len(redeems))
	}
	accessToken, _ = jsonOf(t, redeems[0].resBody)["access_token"].(string)
	if c := claimsOf(t, accessToken); c["client_id"] != bw.a2.String() || c["aud"] != "b.example" || c["iss"] != bw.b.ttsURL {
		t.Fatalf("step 2: access token %v", c)
	}
	// Step 3: the ingress got a signed request with the access token and a
	// Dialog-Context proposing D2 with A2 as initiator; it verified A2 and created D2.
	ins := bw.rec.of(srvIngressB)
	if len(ins) == 0 {
		t.Fatal("step 3: nothing reached B1's ingress")
	}
	first := ins[0]
	d2, err := dialog.FromHeader(first.header)
	mustOK(t, err)
	switch {
	case d2 == nil || !d2.Initiator().Equal(bw.a2) || d2.DLG() == bw.d1.DLG():
		t.Fatalf("step 3: the ingress got Dialog-Context %v", d2)
	case first.header.Get("Authorization") != "Bearer "+accessToken:
		t.Fatalf("step 3: Authorization %q", first.header.Get("Authorization"))
	case !strings.Contains(first.header.Get("Signature-Input"), `"authorization"`) || !strings.Contains(first.header.Get("Signature-Input"), `"dialog-context"`):
		t.Fatalf("step 3: the signature does not cover the access token and Dialog-Context: %s", first.header.Get("Signature-Input"))
	}
	r := bw.app.seen[0]
	want := map[string]string{proxy.VerifiedSenderField: bw.a2.String(), proxy.VerifiedDialogField: d2.DLG(),
		proxy.VerifiedInitiatorField: bw.a2.String(), proxy.VerifiedInitiatorProvedField: "true", proxy.VerifiedEstablishedField: "true",
		proxy.VerifiedProofField: "httpsig"}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("step 3: the application got %s %q, want %q", k, got, v)
		}
	}
	if r.Header.Get("Authorization") != "" || r.Header.Get(txntoken.HeaderName) != "" {
		t.Fatalf("step 3: the application sees a credential: %v", r.Header)
	}
	// Step 4: B1's ingress exchanged the access token at TTS B for a domain-B
	// Txn-Token recording D2; the application got its validated claims.
	var step4 bool
	for _, e := range tokenRequests(t, bw.rec, srvTTSB, oauth.GrantTypeTokenExchange) {
		f := formOf(t, e)
		if f.Get("subject_token") == accessToken && f.Get("subject_token_type") == oauth.TokenTypeAccessToken && e.status == 200 {
			var rd map[string]any
			mustOK(t, json.Unmarshal([]byte(f.Get("request_details")), &rd))
			tok, _ := jsonOf(t, e.resBody)["access_token"].(string)
			step4 = rd["dlg"] == d2.DLG() && claimsOf(t, tok)["tctx"].(map[string]any)["dlg"] == d2.DLG()
		}
	}
	if !step4 {
		t.Fatal("step 4: no Txn-Token request at TTS B with the access token and D2")
	}
	var claims txntoken.Claims
	mustOK(t, json.Unmarshal([]byte(r.Header.Get(proxy.VerifiedTxnTokenClaimsField)), &claims))
	if claims.Dialog() != d2.DLG() || claims.Iss != bw.b.ttsURL || claims.Sub != "a.example:alice@a.example" || claims.ReqWL != bw.b1.String() || claims.Scope != "trip.read" {
		t.Fatalf("step 4: the application got claims %+v", claims)
	}
	return d2, accessToken, txnA
}

// Section 11, Figure 5 steps 1 to 4 through the proxies: the agent names its dialog
// D1 of domain A; the egress chains into domain B and starts the linked dialog D2; the
// agent's answer is in D1, and a later request in D1 continues D2.
func TestDialogBindingSec11_Figure5ThroughBoundaryRoute(t *testing.T) {
	bw := newBoundary(t)
	res, body := bw.call(t, "/b1/book", `{"city":"Lisbon"}`)
	if res.StatusCode != 200 || string(body) != `{"booked":true}` {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	d2, at, _ := bw.figure5Steps(t)
	// The agent's answer: its own dialog, told which linked dialog carried it, and
	// nothing of domain B's credentials.
	switch {
	case res.Header.Get(dialog.HeaderName) != bw.d1.Value():
		t.Fatalf("the answer names Dialog-Context %q, want D1's", res.Header.Get(dialog.HeaderName))
	case res.Header.Get(proxy.LinkedDialogField) != d2.DLG() || res.Header.Get(proxy.LinkedEstablishedField) != "true":
		t.Fatalf("linked fields %q %q", res.Header.Get(proxy.LinkedDialogField), res.Header.Get(proxy.LinkedEstablishedField))
	case res.Header.Get(txntoken.HeaderName) != "" || res.Header.Get("Signature") != "" || res.Header.Get(wit.HeaderName) != "":
		t.Fatalf("the answer carries domain B's credentials: %v", res.Header)
	}
	if bw.app.last().URL.Path != "/hotel/book" || bw.app.body[0] != `{"city":"Lisbon"}` {
		t.Fatalf("the application got %s %s", bw.app.last().URL.Path, bw.app.body[0])
	}

	// A second request in D1 continues D2 with the same access token: no new grant.
	res, body = bw.call(t, "/b1", `{"q":2}`)
	if res.StatusCode != 200 || res.Header.Get(proxy.LinkedDialogField) != d2.DLG() || res.Header.Get(proxy.LinkedEstablishedField) != "false" || res.Header.Get(dialog.HeaderName) != bw.d1.Value() {
		t.Fatalf("continue: %d %s %v", res.StatusCode, body, res.Header)
	}
	r := bw.app.last()
	if r.Header.Get(proxy.VerifiedDialogField) != d2.DLG() || r.Header.Get(proxy.VerifiedEstablishedField) != "false" || r.Header.Get(proxy.VerifiedSenderField) != bw.a2.String() {
		t.Fatalf("continue: the application got %v", r.Header)
	}
	ins := bw.rec.of(srvIngressB)
	if got := ins[len(ins)-1].header.Get("Authorization"); got != "Bearer "+at {
		t.Fatalf("continue: Authorization %q", got)
	}
	if n := len(tokenRequests(t, bw.rec, srvTTSB, oauth.GrantTypeJWTBearer)); n != 1 {
		t.Fatalf("continue: %d redemptions at AS B, want 1", n)
	}

	// Shortly before the access token expires (AS B gives a minute), the egress
	// obtains another (steps 1 and 2 again) and goes on in the same D2.
	bw.clock.Advance(31 * time.Second)
	res, body = bw.call(t, "/b1", `{"q":3}`)
	if res.StatusCode != 200 || res.Header.Get(proxy.LinkedDialogField) != d2.DLG() {
		t.Fatalf("renewed: %d %s %v", res.StatusCode, body, res.Header)
	}
	redeems := tokenRequests(t, bw.rec, srvTTSB, oauth.GrantTypeJWTBearer)
	ins = bw.rec.of(srvIngressB)
	if len(redeems) != 2 || ins[len(ins)-1].header.Get("Authorization") == "Bearer "+at {
		t.Fatalf("renewed: %d redemptions, the old access token sent again: %v", len(redeems), ins[len(ins)-1].header.Get("Authorization") == "Bearer "+at)
	}
	if r := bw.app.last(); r.Header.Get(proxy.VerifiedDialogField) != d2.DLG() || r.Header.Get(proxy.VerifiedEstablishedField) != "false" {
		t.Fatalf("renewed: the application got %v", r.Header)
	}
}

// Section 13, domain separation, through the proxies: nothing that any server of
// domain B received (TTS B and AS B's token endpoint, B's WIT issuer, B1's ingress, B1's
// application) carries D1, domain A's Txn-Token (its value, its signature, its SHA-256
// in base64url, base64 and hex, its txn) or a Txn-Token field; the search covers the
// target, every header field and the body, form-decoded, and inside every JWT they
// carry (the grant, the access token, the WITs, the proofs).
func TestDialogBindingSec13_DomainSeparationThroughBoundaryRoute(t *testing.T) {
	bw := newBoundary(t)
	for i, body := range []string{`{"q":1}`, `{"q":2}`} {
		if res, b := bw.call(t, "/b1", body); res.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, res.StatusCode, b)
		}
	}
	d2, _, txnA := bw.figure5Steps(t)
	sum := sha256.Sum256([]byte(txnA))
	needles := map[string]string{
		"D1":                       bw.d1.DLG(),
		"D1's Dialog-Context":      bw.d1.Value(),
		"the domain-A Txn-Token":   txnA,
		"its signature":            txnA[strings.LastIndexByte(txnA, '.')+1:],
		"its SHA-256 (base64url)":  base64.RawURLEncoding.EncodeToString(sum[:]),
		"its SHA-256 (base64)":     base64.StdEncoding.EncodeToString(sum[:]),
		"its SHA-256 (hex)":        hex.EncodeToString(sum[:]),
		"its SHA-256 (txntoken)":   tokenhash.Of(txnA),
		"its txn (transaction id)": claimsOf(t, txnA)["txn"].(string),
	}
	jwt := regexp.MustCompile(`[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)
	reqs := bw.rec.of(srvTTSB, srvWITB, srvIngressB, srvAppB)
	seen := map[string]int{}
	for _, r := range reqs {
		seen[r.server]++
		texts := []string{r.target, string(r.body)}
		if u, err := url.QueryUnescape(string(r.body)); err == nil {
			texts = append(texts, u)
		}
		for name, vals := range r.header {
			if strings.EqualFold(name, txntoken.HeaderName) || strings.EqualFold(name, dialog.ProvenanceHeader) {
				t.Fatalf("%s %s %s carries %s", r.server, r.method, r.target, name)
			}
			for _, v := range vals {
				texts = append(texts, name+": "+v)
			}
		}
		for _, s := range append([]string(nil), texts...) {
			for _, tok := range jwt.FindAllString(s, -1) {
				for _, part := range strings.Split(tok, ".")[:2] {
					if b, err := base64.RawURLEncoding.DecodeString(part); err == nil {
						texts = append(texts, string(b))
					}
				}
			}
		}
		for what, n := range needles {
			for _, s := range texts {
				if strings.Contains(s, n) {
					t.Fatalf("%s %s %s carries %s", r.server, r.method, r.target, what)
				}
			}
		}
	}
	// The search saw every server of B that Figure 5 involves, and what crossed is
	// D2 at B1's ingress, both requests of it.
	for _, s := range []string{srvTTSB, srvIngressB, srvAppB} {
		if seen[s] == 0 {
			t.Fatalf("nothing recorded at %s: %v", s, seen)
		}
	}
	for _, e := range bw.rec.of(srvIngressB) {
		if got := e.header.Values(dialog.HeaderName); len(got) != 1 || got[0] != d2.Value() {
			t.Fatalf("B1's ingress received Dialog-Context %q, want D2's", got)
		}
	}
}

// Section 11: a grant AS B refuses (its scope is not one AS B allows for AS A's
// grants) comes back to the agent with AS B's code, and nothing reaches B1.
func TestDialogBindingSec11_GrantRefusedByASB(t *testing.T) {
	bw := newBoundary(t)
	res, body := bw.call(t, "/b1-book", `{"q":1}`)
	code := codeOf(res.StatusCode, body)
	redeems := tokenRequests(t, bw.rec, srvTTSB, oauth.GrantTypeJWTBearer)
	if len(redeems) != 1 || redeems[0].status == 200 {
		t.Fatalf("AS B was not asked, or redeemed: %d", len(redeems))
	}
	want := errcode.Code(jsonOf(t, redeems[0].resBody)["code"].(string))
	if code != want || code == errcode.Unmapped || res.StatusCode == 200 {
		t.Fatalf("the agent got %d %s (code %s), AS B refused with %s", res.StatusCode, body, code, want)
	}
	if n := len(bw.rec.of(srvIngressB)) + bw.app.hits(); n != 0 {
		t.Fatalf("%d requests reached B1", n)
	}
	// The refusal left no link: a request on the other route still links.
	if res, body := bw.call(t, "/b1", `{}`); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}

// Section 11: a boundary route continues a dialog of this domain; without one (or
// asking for a new dialog) there is no Txn-Token to chain from, and nothing is sent.
func TestDialogBindingSec11_BoundaryRouteNeedsDialog(t *testing.T) {
	bw := newBoundary(t)
	for name, h := range map[string]http.Header{"no dialog": {}, "start": start()} {
		res, b := send(t, bw.egress.URL+"/b1", `{}`, h)
		if codeOf(res.StatusCode, b) != errcode.InvalidRequest {
			t.Fatalf("%s: %d %s", name, res.StatusCode, b)
		}
	}
	// The agent's own copy of D1's identifier in another field does not cross either.
	req, _ := http.NewRequest("POST", bw.egress.URL+"/b1", strings.NewReader(`{}`))
	req.Header.Set(dialog.HeaderName, bw.d1.Value())
	req.Header.Set("X-Conversation", bw.d1.DLG())
	res, err := http.DefaultClient.Do(req)
	mustOK(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if codeOf(res.StatusCode, b) != errcode.CrossesTrustBoundary {
		t.Fatalf("D1 in another field: %d %s", res.StatusCode, b)
	}
	if n := len(bw.rec.of(srvTTSA, srvTTSB, srvIngressB)); n != 0 {
		t.Fatalf("%d requests went out", n)
	}
}

// Section 11 step 3 at B1's boundary-facing ingress: a request carrying a Txn-Token
// (crosses_trust_boundary), or no access token (missing_credential), is refused before
// the receiver runs; an access token taken from A2 and presented by another workload
// is refused (grant_binding_mismatch). The application is reached by none.
func TestDialogBindingSec11_BoundaryIngressRefusals(t *testing.T) {
	bw := newBoundary(t)
	at := bw.accessToken(t)
	hits := bw.app.hits()
	// A workload of domain A other than A2, signing its own request in a dialog of its
	// own, with A2's access token.
	a3id, a3src := bw.a.workload(t, "/agent/a3")
	a3 := &agent.Agent{Self: a3id, Client: &http.Client{Transport: &agent.Transport{Source: a3src,
		Responses: httpsig.NewVerifier(witsOf(bw.ctx, bw.a, bw.b)), Audience: func(*http.Request) string { return bw.recipB1 }, ResponseSigners: peerSigners}}}
	send := func(h http.Header) (int, errcode.Code) {
		t.Helper()
		req, _ := http.NewRequest("POST", bw.ingress.URL+"/hotel", strings.NewReader(`{}`))
		for k, v := range h {
			req.Header[k] = v
		}
		res, _, err := a3.Start(bw.ctx, req, "")
		mustOK(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, codeOf(res.StatusCode, b)
	}
	if _, code := send(http.Header{"Authorization": {"Bearer " + at}}); code != errcode.GrantBindingMismatch {
		t.Fatalf("stolen access token: %s", code)
	}
	if _, code := send(nil); code != errcode.MissingCredential {
		t.Fatalf("no access token: %s", code)
	}
	if _, code := send(http.Header{"Authorization": {"Bearer " + at}, txntoken.HeaderName: {"x.y.z"}}); code != errcode.CrossesTrustBoundary {
		t.Fatalf("a Txn-Token: %s", code)
	}
	if bw.app.hits() != hits {
		t.Fatal("a refused request reached the application")
	}
}

func TestContainsToken(t *testing.T) {
	for _, c := range []struct {
		v, dlg string
		want   bool
	}{
		{"D1-abc", "D1-abc", true},
		{"conversation=D1-abc; x", "D1-abc", true},
		{`{"d":"D1-abc"}`, "D1-abc", true},
		{"xD1-abc", "D1-abc", false},
		{"D1-abcd", "D1-abc", false},
		{"sig1=(...);created=17", "1", false},
		{"a 1,", "1", true},
		{"11 1", "1", true},
		{"", "1", false},
	} {
		if got := proxy.ContainsToken(c.v, c.dlg); got != c.want {
			t.Errorf("ContainsToken(%q, %q) = %v", c.v, c.dlg, got)
		}
	}
}

type sentCount struct{ n int }

func (s *sentCount) RoundTrip(*http.Request) (*http.Response, error) {
	s.n++
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
}

// Section 13: the guard of a linked dialog's requests (after signing) sends only a
// request in D2 that carries nothing of domain A.
func TestDialogBindingSec13_LinkGuard(t *testing.T) {
	a2 := identifier.MustParse("wimse://a.example/agent/a2")
	d1, _ := dialog.New("D1-guard", a2)
	d2, _ := dialog.New("D2-guard", a2)
	base := &sentCount{}
	g := proxy.LinkGuard(base, d1.DLG(), d2.DLG(), "txn.of.a")
	for name, c := range map[string]struct {
		h    http.Header
		sent bool
	}{
		"D2":                {http.Header{dialog.HeaderName: {d2.Value()}}, true},
		"D1":                {http.Header{dialog.HeaderName: {d1.Value()}}, false},
		"no dialog":         {http.Header{}, false},
		"a Txn-Token field": {http.Header{dialog.HeaderName: {d2.Value()}, txntoken.HeaderName: {"other"}}, false},
		"provenance":        {http.Header{dialog.HeaderName: {d2.Value()}, dialog.ProvenanceHeader: {"x"}}, false},
		"D1 in a field":     {http.Header{dialog.HeaderName: {d2.Value()}, "X-Note": {"after D1-guard, then"}}, false},
		"A's Txn-Token":     {http.Header{dialog.HeaderName: {d2.Value()}, "X-Note": {"Bearer txn.of.a"}}, false},
	} {
		before := base.n
		req, _ := http.NewRequest("POST", "http://b1.b.example/", nil)
		req.Header = c.h
		_, err := g.RoundTrip(req)
		if sent := base.n > before; sent != c.sent || !sent && errcode.CodeOf(err) != errcode.CrossesTrustBoundary {
			t.Errorf("%s: sent %v, err %v", name, sent, err)
		}
	}
}

// Concurrent first requests in one dialog of domain A start one linked dialog: one
// grant, one redemption, one D2 for all of them.
func TestDialogBindingSec11_ConcurrentFirstRequestsOneLink(t *testing.T) {
	bw := newBoundary(t)
	const n = 4
	linked := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", bw.egress.URL+"/b1", strings.NewReader(`{}`))
			req.Header.Set(dialog.HeaderName, bw.d1.Value())
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				linked <- "error: " + err.Error()
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			linked <- res.Header.Get(proxy.LinkedDialogField)
		})
	}
	wg.Wait()
	close(linked)
	var d2 string
	for got := range linked {
		if got == "" || d2 != "" && got != d2 {
			t.Fatalf("linked dialogs %q and %q", d2, got)
		}
		d2 = got
	}
	if g, r := len(tokenRequests(t, bw.rec, srvTTSA, oauth.GrantTypeTokenExchange)), len(tokenRequests(t, bw.rec, srvTTSB, oauth.GrantTypeJWTBearer)); r != 1 || bw.app.hits() != n {
		t.Fatalf("%d exchanges at TTS A, %d redemptions at AS B, %d requests at the application", g, r, bw.app.hits())
	}
}
