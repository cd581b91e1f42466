package tts

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

const (
	tdA    = "a.example"
	tdB    = "b.example"
	idpIss = "https://idp.a.example"
)

// env is a TTS on a loopback HTTP server with real keys, a WIT issuer's trust, an IdP
// whose access tokens it accepts, and a settable clock.
type env struct {
	t      testing.TB
	clock  *testkit.Clock
	dom    *testkit.Domain
	ttsKey *keys.PrivateKey
	ring   *keys.Ring
	idpKey *keys.PrivateKey
	srv    *Server
	hs     *httptest.Server
	url    string
	replay *store.Memory
	reg    *prometheus.Registry
	logs   *bytes.Buffer
	wits   *wit.Validator
}

// envOption is func(*Config) or func(*env, *Config).
type envOption any

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	clock := testkit.NewClock(testkit.Epoch)
	e := &env{t: t, clock: clock, dom: testkit.NewDomain(t, tdA, keys.ES256, clock), logs: &bytes.Buffer{}, reg: prometheus.NewRegistry()}
	var err error
	if e.ttsKey, err = keys.Generate(keys.ES256); err != nil {
		t.Fatal(err)
	}
	e.ring = keys.NewRing(e.ttsKey, clock.Now)
	if e.idpKey, err = keys.Generate(keys.ES256); err != nil {
		t.Fatal(err)
	}
	e.hs = httptest.NewUnstartedServer(nil)
	e.url = "http://" + e.hs.Listener.Addr().String()
	e.replay = store.NewMemory(store.WithClock(clock.Now))
	e.wits = e.dom.Validator(wit.WithCache(1024, time.Minute))
	idpSet, _ := keys.NewStaticSet(e.idpKey.Public())
	hopts := HandlerOptions{Now: clock.Now}
	at, err := NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: idpIss, Keys: idpSet}}, hopts)
	if err != nil {
		t.Fatal(err)
	}
	idt, err := NewJWTHandler(TokenTypeIDToken, []JWTIssuer{{Issuer: idpIss, Keys: idpSet, Scope: []string{"profile.read"}}}, hopts)
	if err != nil {
		t.Fatal(err)
	}
	pkj, err := oauth.NewPrivateKeyJWT([]string{e.url, e.url + PathToken}, nil, e.replay, clock.Now, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Issuer:         e.url,
		TrustDomains:   []string{tdA, tdB},
		Keys:           e.ring,
		Authenticators: append(oauth.WIMSEAuthenticators(e.wits, e.replay, e.url+PathToken), pkj),
		SubjectHandlers: []SubjectTokenHandler{at, idt,
			NewSelfSignedHandler([]string{e.url}, SelfSignedOptions{HandlerOptions: hopts}),
			NewUnsignedJSONHandler("")},
		Replay: e.replay,
		Policy: Policy{Rules: []Rule{
			{Workload: "wimse://a.example/", Details: []string{"purpose", "order_id"}},
			{Workload: "wimse://a.example/edge-gateway", Context: []string{"req_ip", "authn"},
				SubjectTokenTypes: []string{TokenTypeUnsignedJSON, TokenTypeAccessToken, TokenTypeSelfSigned, TokenTypeTxnToken}},
			{Workload: "wimse://a.example/agent/scoped", Scopes: []string{"trip.read"}},
			{Workload: "wimse://a.example/agent/selfscope", SubjectScopes: []string{"trip.read", "trip.book"}},
			{Workload: "wimse://a.example/agent/multi", Audiences: []string{tdA, tdB}},
			{Workload: "wimse://b.example/"},
		}},
		Registry: e.reg,
		Logger:   slog.New(slog.NewJSONHandler(e.logs, nil)),
		Now:      clock.Now,
	}
	for _, o := range opts {
		switch f := o.(type) {
		case func(*Config):
			f(&cfg)
		case func(*env, *Config):
			f(e, &cfg)
		default:
			t.Fatalf("bad env option %T", o)
		}
	}
	if e.srv, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	e.hs.Config.Handler = e.srv.Handler()
	e.hs.Start()
	t.Cleanup(e.hs.Close)
	return e
}

func (e *env) workload(path string) *testkit.Workload {
	e.t.Helper()
	return e.dom.Workload(e.t, path, keys.ES256)
}

// accessToken mints an IdP access token (typ at+jwt) for sub with scope, valid for ttl
// (0: an hour).
func (e *env) accessToken(sub, scope string, ttl time.Duration) string {
	e.t.Helper()
	if ttl == 0 {
		ttl = time.Hour
	}
	now := e.clock.Now()
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(ttl).Unix())
	c := map[string]any{"iss": idpIss, "sub": sub, "aud": "https://api.a.example", "iat": &iat, "exp": &exp, "client_id": "web"}
	if scope != "" {
		c["scope"] = scope
	}
	tok, err := jose.SignClaims("at+jwt", e.idpKey, true, c)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

func (e *env) selfSigned(w *testkit.Workload, sub, scope string) string {
	e.t.Helper()
	tok, err := txntoken.NewSelfSignedToken(w.Key, w.ID, sub, e.url, scope, 5*time.Minute, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

func (e *env) client(w *testkit.Workload, pm proof.Method) *txntoken.Client {
	return &txntoken.Client{TokenEndpoint: e.url + PathToken, WIT: w.WIT, Key: w.Key, Proof: pm, Now: e.clock.Now}
}

// request asks for a Txn-Token with a WPT.
func (e *env) request(w *testkit.Workload, r txntoken.Request) (*oauth.TokenResponse, error) {
	return e.client(w, proof.WPT).Request(context.Background(), r)
}

func (e *env) mustRequest(w *testkit.Workload, r txntoken.Request) (*oauth.TokenResponse, *txntoken.Claims) {
	e.t.Helper()
	resp, err := e.request(w, r)
	if err != nil {
		e.t.Fatalf("request: %v", err)
	}
	return resp, e.verify(resp.AccessToken, tdA)
}

func (e *env) verifier(td string) *txntoken.Verifier {
	return txntoken.NewVerifier(e.ring.KeySet(), td, txntoken.WithClock(e.clock.Now), txntoken.WithIssuer(e.url))
}

func (e *env) verify(tok, td string) *txntoken.Claims {
	e.t.Helper()
	c, err := e.verifier(td).Verify(context.Background(), tok)
	if err != nil {
		e.t.Fatalf("verify: %v", err)
	}
	return c
}

// rawPost sends a form with a WPT made by w and returns status, headers and body.
func (e *env) rawPost(w *testkit.Workload, form url.Values, mutate func(*http.Request)) (int, http.Header, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+PathToken, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w != nil {
		if err := wpt.SignRequest(req, w.Key, w.WIT, e.url+PathToken, wpt.RequestOptions{}, wpt.WithClock(e.clock.Now)); err != nil {
			e.t.Fatal(err)
		}
	}
	if mutate != nil {
		mutate(req)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func baseForm(audience, scope, subject, subjectType string) url.Values {
	return url.Values{
		"grant_type": {GrantTypeTokenExchange}, "requested_token_type": {TokenTypeTxnToken},
		"audience": {audience}, "scope": {scope}, "subject_token": {subject}, "subject_token_type": {subjectType},
	}
}

// wantOAuth checks an error document: OAuth error, status and code.
func wantOAuth(t testing.TB, status int, body []byte, wantStatus int, wantErr string, wantCode errcode.Code) {
	t.Helper()
	var d oauth.ErrorResponse
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("not an error document: %s", body)
	}
	if status != wantStatus || d.Error != wantErr || d.Code != string(wantCode) {
		t.Fatalf("got %d %s/%s (%s), want %d %s/%s", status, d.Error, d.Code, d.ErrorDescription, wantStatus, wantErr, wantCode)
	}
}

// wantCode checks a client error's code.
func wantCode(t testing.TB, err error, code errcode.Code) {
	t.Helper()
	if errcode.CodeOf(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func mustID(s string) identifier.ID { return identifier.MustParse(s) }

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func b64(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
