package dialogmcp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	dialogmcp "github.com/dialogtrust/dialogtrust/adapters/mcp"
	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

func mustOK(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// static is a wit.Source holding one credential.
type static struct{ c *wit.Credential }

func (s static) Credential(context.Context) (*wit.Credential, error) { return s.c, nil }

// world is one trust domain, a.example, run in-process: a WIT issuer key (testkit), a
// TTS on loopback that issues Txn-Tokens for self-signed subject tokens, the
// delegating agent (planner) and the tool's workload (hotel).
type world struct {
	dom             *testkit.Domain
	ttsURL          string
	ttsKeys         keys.KeySet
	planner, hotel  *testkit.Workload
	plannerSrc      wit.Source
	tokens          agent.TxnTokenSource
	plannerKey      *keys.PrivateKey // signs the planner's offers
	hotelKey        *keys.PrivateKey // signs the hotel's statuses
	trust           *handoff.StaticTrust
	delegator       *handoff.Delegator
	records         *store.MemoryRecords
	handoffReceiver *handoff.Receiver
}

func newWorld(tb testing.TB) *world {
	tb.Helper()
	w := &world{dom: testkit.NewDomain(tb, "a.example", keys.ES256, testkit.NewClock(time.Now()))}
	w.planner = w.dom.Workload(tb, "/agent/planner", keys.ES256)
	w.hotel = w.dom.Workload(tb, "/tool/hotel", keys.ES256)
	w.plannerSrc = static{&wit.Credential{WIT: w.planner.WIT, Key: w.planner.Key, Expiry: time.Now().Add(time.Hour)}}

	ttsSrv := httptest.NewUnstartedServer(nil)
	w.ttsURL = "http://" + ttsSrv.Listener.Addr().String()
	ttsKey, err := keys.Generate(keys.ES256)
	mustOK(tb, err)
	replay := store.NewMemory()
	ts, err := tts.New(tts.Config{
		Issuer: w.ttsURL, TrustDomains: []string{"a.example"}, Keys: keys.NewRing(ttsKey, nil),
		Authenticators:  oauth.WIMSEAuthenticators(wit.NewValidator(w.dom.Trust), replay, w.ttsURL+tts.PathToken),
		SubjectHandlers: []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{w.ttsURL}, tts.SelfSignedOptions{})},
		Replay:          replay,
		Policy:          tts.Policy{Rules: []tts.Rule{{Workload: "wimse://a.example/", SubjectScopes: []string{"trip.book"}}}},
	})
	mustOK(tb, err)
	ttsSrv.Config.Handler = ts.Handler()
	ttsSrv.Start()
	tb.Cleanup(ttsSrv.Close)
	w.ttsKeys, err = keys.NewStaticSet(ttsKey.Public())
	mustOK(tb, err)
	client := &txntoken.Client{TokenEndpoint: w.ttsURL + tts.PathToken, WITSource: w.plannerSrc, Proof: proof.WPT}
	w.tokens = agent.NewTTSSource(client, "a.example", "trip.book", func(ctx context.Context) (string, string, error) {
		tok, err := txntoken.NewSelfSignedToken(w.planner.Key, w.planner.ID, "alice@a.example", w.ttsURL, "trip.book", time.Minute, time.Now())
		return tok, tts.TokenTypeSelfSigned, err
	}, nil)

	w.plannerKey, _ = keys.Generate(keys.ES256)
	w.hotelKey, _ = keys.Generate(keys.ES256)
	w.trust = handoff.NewStaticTrust()
	mustOK(tb, w.trust.Bind(w.planner.ID.String(), w.plannerKey.Public()))
	mustOK(tb, w.trust.Bind(w.hotel.ID.String(), w.hotelKey.Public()))
	w.delegator, err = handoff.NewDelegator(handoff.DelegatorConfig{Self: w.planner.ID.String(), Key: w.plannerKey, Trust: w.trust})
	mustOK(tb, err)
	w.records = store.NewMemoryRecords()
	// The keys are this test's own: no offer predates the records (section 8.4).
	w.handoffReceiver = handoff.NewReceiver(w.hotel.ID.String(), w.trust, w.records, handoff.WithStatusKey(w.hotelKey),
		handoff.WithGrantRequired(), handoff.WithRecordsLostAt(time.Time{}))
	return w
}

// receiver is the hotel's dialog receiver: HTTP signatures, Txn-Tokens of a.example,
// handoffs in MCP requests.
func (w *world) receiver(tb testing.TB, url string) *dialog.Receiver {
	tb.Helper()
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wit.NewValidator(w.dom.Trust), httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithTxnTokens(txntoken.NewVerifier(w.ttsKeys, "a.example")),
		dialog.WithHandoffsIn(w.handoffReceiver, dialog.MCP),
	)
	mustOK(tb, err)
	return rc
}

// seen is what the server saw.
type seen struct {
	mu       sync.Mutex
	requests []http.Header // every HTTP request, as it arrived
	calls    []*dialog.Verified
	runs     int
}

func (s *seen) header(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Header.Clone())
}

func (s *seen) call(v *dialog.Verified) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, v)
	s.runs++
}

func (s *seen) snapshot() ([]http.Header, []*dialog.Verified) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.requests...), append([]*dialog.Verified(nil), s.calls...)
}

func (s *seen) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs
}

// recorder keeps the problem code of every refused response the client got.
type recorder struct {
	base  http.RoundTripper
	mu    sync.Mutex
	codes []string
	edit  func(*http.Request) // changes the signed request before it leaves (tampering)
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.edit != nil {
		r.edit(req)
	}
	base := r.base
	if base == nil {
		base = http.DefaultTransport
	}
	res, err := base.RoundTrip(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	code := ""
	if e := problem.Read(res.StatusCode, b); e != nil {
		code = string(errcode.CodeOf(e))
	}
	r.mu.Lock()
	r.codes = append(r.codes, code)
	r.mu.Unlock()
	return res, nil
}

func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.codes) == 0 {
		return ""
	}
	return r.codes[len(r.codes)-1]
}

// session connects the planner to the hotel's MCP server in dialog dc.
func (w *world) session(tb testing.TB, url string, dc *dialog.Context, rec *recorder) (*mcp.ClientSession, error) {
	return w.sessionAs(tb, w.plannerSrc, w.tokens, url, dc, rec)
}

// sessionAs connects the workload src to the hotel's MCP server in dialog dc.
func (w *world) sessionAs(tb testing.TB, src wit.Source, tokens agent.TxnTokenSource, url string, dc *dialog.Context, rec *recorder) (*mcp.ClientSession, error) {
	tb.Helper()
	t := &agent.Transport{Base: rec, Source: src, Tokens: tokens, Responses: httpsig.NewVerifier(wit.NewValidator(w.dom.Trust))}
	hc, err := dialogmcp.NewHTTPClient(dialogmcp.ClientConfig{Transport: t, Dialog: dc, Delegator: w.delegator})
	mustOK(tb, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err == nil {
		tb.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func newDialog(tb testing.TB, initiator identifier.ID) *dialog.Context {
	dc, err := dialog.New(agent.NewDialogID(), initiator)
	mustOK(tb, err)
	return dc
}

// jsonOf is the JSON of v, for messages.
