package chaining_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// side is one trust domain's TTS binary on a loopback HTTP server: the TTS, and AS A
// and/or AS B at the TTS's token endpoint (oauth.Endpoint), with real keys and the domain's WIT issuer trust.
type side struct {
	td     string
	dom    *testkit.Domain
	ring   *keys.Ring
	srv    *tts.Server
	hs     *httptest.Server
	url    string
	replay store.Replay
	ga     *chaining.GrantIssuer
	jb     *chaining.JWTBearer
	logs   *testkit.SyncBuffer
	reg    *prometheus.Registry
}

func (s *side) endpoint() string { return s.url + tts.PathToken }

// env is domain A (AS A) and domain B (AS B, whose TTS accepts AS B's access tokens),
// with a settable clock. Domain B trusts domain A's WIT issuer for client
// authentication and AS A's keys for grants.
type env struct {
	t     testing.TB
	clock *testkit.Clock
	a, b  *side
}

type envOpts struct {
	// alg of the WIT issuers' keys (default ES256); noWITCache validates every WIT.
	alg        string
	noWITCache bool
	quiet      bool
	grantPeer  func(*chaining.GrantPeer)
	bearerPeer func(*chaining.BearerPeer)
	bearer     func(*chaining.JWTBearerConfig)
	issuer     func(*chaining.GrantIssuerConfig)
	// wrap, when set, wraps both sides' handlers.
	wrap func(http.Handler) http.Handler
}

func newSide(t testing.TB, td, alg string, clock *testkit.Clock) *side {
	if alg == "" {
		alg = keys.ES256
	}
	s := &side{td: td, dom: testkit.NewDomain(t, td, alg, clock), logs: &testkit.SyncBuffer{}, reg: prometheus.NewRegistry()}
	k, err := keys.Generate(alg)
	if err != nil {
		t.Fatal(err)
	}
	s.ring = keys.NewRing(k, clock.Now)
	s.hs = httptest.NewUnstartedServer(nil)
	s.url = "http://" + s.hs.Listener.Addr().String()
	s.replay = store.NewMemory(store.WithClock(clock.Now))
	return s
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	clock := testkit.NewClock(testkit.Epoch)
	e := &env{t: t, clock: clock, a: newSide(t, "a.example", o.alg, clock), b: newSide(t, "b.example", o.alg, clock)}
	var vopts []wit.ValidatorOption
	if !o.noWITCache {
		vopts = append(vopts, wit.WithCache(64, time.Minute))
	}
	logTo := func(s *side) *slog.Logger {
		if o.quiet {
			return slog.New(slog.NewJSONHandler(io.Discard, nil))
		}
		return slog.New(slog.NewJSONHandler(s.logs, nil))
	}
	// WIT trust: each TTS binary trusts its own domain; B also trusts A's WIT issuer.
	trustA := keys.NewTrust()
	setA, _ := keys.NewStaticSet(e.a.dom.Key.Public())
	setB, _ := keys.NewStaticSet(e.b.dom.Key.Public())
	trustA.AddTrustDomain("a.example", setA)
	trustB := keys.NewTrust().AddTrustDomain("b.example", setB).AddTrustDomain("a.example", setA)

	// Domain A: TTS with self_signed subjects, and AS A with peer B.
	a := e.a
	witsA := wit.NewValidator(trustA, append([]wit.ValidatorOption{wit.WithClock(clock.Now)}, vopts...)...)
	authA := oauth.WIMSEAuthenticators(witsA, a.replay, a.endpoint())
	hopts := tts.HandlerOptions{Now: clock.Now}
	var err error
	cfgA := tts.Config{Issuer: a.url, TrustDomains: []string{"a.example"}, Keys: a.ring, Authenticators: authA,
		SubjectHandlers: []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{a.url}, tts.SelfSignedOptions{HandlerOptions: hopts})},
		Replay:          a.replay, Policy: tts.Policy{Rules: []tts.Rule{{Workload: "wimse://a.example/"}}}, Now: clock.Now, Registry: a.reg}
	gp := chaining.GrantPeer{Issuer: e.b.url, TokenEndpoint: e.b.endpoint(), Audiences: []string{"as.b.example"}, Scopes: []string{"trip.read", "trip.book"}}
	if o.grantPeer != nil {
		o.grantPeer(&gp)
	}
	gc := chaining.GrantIssuerConfig{Issuer: a.url, Keys: a.ring, Authenticators: authA,
		TxnTokens: tts.TxnTokenVerifierFor(cfgA), Peers: []chaining.GrantPeer{gp}, Now: clock.Now,
		Logger: logTo(a)}
	if o.issuer != nil {
		o.issuer(&gc)
	}
	a.ga, err = chaining.NewGrantIssuer(gc)
	if err != nil {
		t.Fatal(err)
	}
	cfgA.Grants = []oauth.Handler{a.ga}
	if a.srv, err = tts.New(cfgA); err != nil {
		t.Fatal(err)
	}
	a.hs.Config.Handler = a.srv.Handler()

	// Domain B: AS B redeeming A's grants; its TTS accepts AS B's access tokens.
	b := e.b
	witsB := wit.NewValidator(trustB, append([]wit.ValidatorOption{wit.WithClock(clock.Now)}, vopts...)...)
	authB := oauth.WIMSEAuthenticators(witsB, b.replay, b.endpoint())
	ownAT, err := tts.NewJWTHandler(tts.TokenTypeAccessToken, []tts.JWTIssuer{{Issuer: b.url, Keys: chaining.RingKeySet(b.ring),
		Typ: chaining.AccessTokenTyp, Audiences: []string{"b.example"}}}, hopts)
	if err != nil {
		t.Fatal(err)
	}
	bp := chaining.BearerPeer{Issuer: a.url, Keys: chaining.RingKeySet(a.ring), Scopes: []string{"trip.read", "trip.book"},
		Subject: chaining.SubjectMap{Mode: chaining.SubjectPrefix, Prefix: "a.example:"}}
	if o.bearerPeer != nil {
		o.bearerPeer(&bp)
	}
	bc := chaining.JWTBearerConfig{Issuer: b.url, Keys: b.ring, Authenticators: authB, Replay: b.replay,
		Peers: []chaining.BearerPeer{bp}, Audiences: []string{"b.example"}, Now: clock.Now,
		Logger: logTo(b)}
	if o.bearer != nil {
		o.bearer(&bc)
	}
	b.jb, err = chaining.NewJWTBearer(bc)
	if err != nil {
		t.Fatal(err)
	}
	b.srv, err = tts.New(tts.Config{Issuer: b.url, TrustDomains: []string{"b.example"}, Keys: b.ring, Authenticators: authB,
		SubjectHandlers: []tts.SubjectTokenHandler{ownAT}, Replay: b.replay,
		Policy: tts.Policy{Rules: []tts.Rule{{Workload: "wimse://b.example/"}}}, Now: clock.Now,
		Grants: []oauth.Handler{b.jb}, Registry: b.reg})
	if err != nil {
		t.Fatal(err)
	}
	b.hs.Config.Handler = b.srv.Handler()
	if o.wrap != nil {
		a.hs.Config.Handler, b.hs.Config.Handler = o.wrap(a.hs.Config.Handler), o.wrap(b.hs.Config.Handler)
	}
	a.hs.Start()
	b.hs.Start()
	t.Cleanup(func() { a.hs.Close(); b.hs.Close() })
	return e
}

// txnToken gets a real Txn-Token of domain A for w from TTS A, recording dlg.
func (e *env) txnToken(w *testkit.Workload, scope, dlg string) string {
	e.t.Helper()
	ss, err := txntoken.NewSelfSignedToken(w.Key, w.ID, "alice@a.example", e.a.url, "trip.read trip.book", 5*time.Minute, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	c := &txntoken.Client{TokenEndpoint: e.a.endpoint(), WIT: w.WIT, Key: w.Key, Now: e.clock.Now, Proof: proof.WPT}
	res, err := c.Request(context.Background(), txntoken.Request{Audience: "a.example", Scope: scope, SubjectToken: ss,
		SubjectTokenType: tts.TokenTypeSelfSigned, Dialog: dlg})
	if err != nil {
		e.t.Fatalf("Txn-Token: %v", err)
	}
	return res.AccessToken
}

func (e *env) client(w *testkit.Workload) *chaining.Client {
	return &chaining.Client{WIT: w.WIT, Key: w.Key, Now: e.clock.Now}
}

func (e *env) grant(w *testkit.Workload, txn, scope string) (*chaining.GrantResponse, error) {
	return e.client(w).Grant(context.Background(), chaining.GrantParams{TokenEndpoint: e.a.endpoint(), TxnToken: txn, Audience: e.b.url, Scope: scope})
}

func (e *env) mustGrant(w *testkit.Workload, txn, scope string) string {
	e.t.Helper()
	g, err := e.grant(w, txn, scope)
	if err != nil {
		e.t.Fatalf("grant: %v", err)
	}
	return g.AccessToken
}

func (e *env) redeem(w *testkit.Workload, grant, scope string) (*chaining.AccessTokenResponse, error) {
	return e.client(w).Redeem(context.Background(), e.b.endpoint(), grant, scope)
}

// signGrant mints a grant with key and claims (for the checks of oauth.md 4.2).
func signGrant(t testing.TB, typ string, key *keys.PrivateKey, claims any) string {
	t.Helper()
	tok, err := jose.SignClaims(typ, key, true, claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// payload decodes a JWT's payload into a generic map.
func payload(t testing.TB, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func header(t testing.TB, tok string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// wantRefusal checks err is the OAuth error oauth with code.
func wantRefusal(t testing.TB, err error, oauth string, code errcode.Code) {
	t.Helper()
	if errcode.CodeOf(err) != code {
		t.Fatalf("got %v, want %s (%s)", err, code, oauth)
	}
	if oauth != "" && !strings.Contains(err.Error(), "token endpoint: "+oauth+":") {
		t.Fatalf("got %v, want OAuth error %s", err, oauth)
	}
}

// rawPost sends form to the side's token endpoint with an HTTP signature by w.
func rawPost(t testing.TB, e *env, s *side, w *testkit.Workload, form url.Values) (int, http.Header, map[string]any) {
	t.Helper()
	var sign func(*http.Request)
	if w != nil {
		sign = func(req *http.Request) { signRequest(t, e, req, w, s.endpoint()) }
	}
	return postAs(t, s, form, sign)
}

// postAs sends form to the side's token endpoint with the credential cred sets (none
// when nil) and returns status, headers and the JSON body.
func postAs(t testing.TB, s *side, form url.Values, cred func(*http.Request)) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.endpoint(), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cred != nil {
		cred(req)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return res.StatusCode, res.Header, m
}
