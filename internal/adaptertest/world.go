package adaptertest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// MustOK fails tb with err, if any.
func MustOK(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// World is one trust domain, a.example, run in-process: a WIT issuer key (testkit), a
// TTS on loopback that issues Txn-Tokens for self-signed subject tokens, the
// delegating agent (Planner) and its delegate (Hotel).
type World struct {
	Dom            *testkit.Domain
	TTSURL         string
	TTSKeys        keys.KeySet
	Planner, Hotel *testkit.Workload
	PlannerSource  wit.Source
	Tokens         agent.TxnTokenSource // the planner's Txn-Tokens
	PlannerKey     *keys.PrivateKey     // signs the planner's offers
	HotelKey       *keys.PrivateKey     // signs the hotel's statuses
	Trust          *handoff.StaticTrust
	Delegator      *handoff.Delegator
	Records        *store.MemoryRecords
	// HandoffReceiver is the hotel's: it requires a grant in every offer.
	HandoffReceiver *handoff.Receiver
}

// NewWorld starts the world; the hotel is wimse://a.example<hotelPath>. The TTS stops
// when tb's test ends.
func NewWorld(tb testing.TB, hotelPath string) *World {
	tb.Helper()
	w := &World{Dom: testkit.NewDomain(tb, "a.example", keys.ES256, testkit.NewClock(time.Now()))}
	w.Planner = w.Dom.Workload(tb, "/agent/planner", keys.ES256)
	w.Hotel = w.Dom.Workload(tb, hotelPath, keys.ES256)
	w.PlannerSource = &wit.Credential{WIT: w.Planner.WIT, Key: w.Planner.Key, Expiry: time.Now().Add(time.Hour)}

	ttsSrv := httptest.NewUnstartedServer(nil)
	w.TTSURL = "http://" + ttsSrv.Listener.Addr().String()
	ttsKey, err := keys.Generate(keys.ES256)
	MustOK(tb, err)
	replay := store.NewMemory()
	ts, err := tts.New(tts.Config{
		Issuer: w.TTSURL, TrustDomains: []string{"a.example"}, Keys: keys.NewRing(ttsKey, nil),
		Authenticators:  oauth.WIMSEAuthenticators(wit.NewValidator(w.Dom.Trust), replay, w.TTSURL+tts.PathToken),
		SubjectHandlers: []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{w.TTSURL}, tts.SelfSignedOptions{})},
		Replay:          replay,
		Policy:          tts.Policy{Rules: []tts.Rule{{Workload: "wimse://a.example/", SubjectScopes: []string{"trip.book"}}}},
	})
	MustOK(tb, err)
	ttsSrv.Config.Handler = ts.Handler()
	ttsSrv.Start()
	tb.Cleanup(ttsSrv.Close)
	w.TTSKeys, err = keys.NewStaticSet(ttsKey.Public())
	MustOK(tb, err)
	client := &txntoken.Client{TokenEndpoint: w.TTSURL + tts.PathToken, WITSource: w.PlannerSource, Proof: proof.WPT}
	w.Tokens = agent.NewTTSSource(client, "a.example", "trip.book", func(ctx context.Context) (string, string, error) {
		tok, err := txntoken.NewSelfSignedToken(w.Planner.Key, w.Planner.ID, "alice@a.example", w.TTSURL, "trip.book", time.Minute, time.Now())
		return tok, tts.TokenTypeSelfSigned, err
	}, nil)

	h, err := testbed.NewHandoffs(w.Planner.ID, w.Hotel.ID)
	MustOK(tb, err)
	w.PlannerKey, w.HotelKey, w.Trust, w.Delegator = h.DelegatorKey, h.DelegateKey, h.Trust, h.Delegator
	w.Records = store.NewMemoryRecords()
	// The keys are this test's own: no offer predates the records (section 8.4).
	w.HandoffReceiver = handoff.NewReceiver(w.Hotel.ID.String(), w.Trust, w.Records, handoff.WithStatusKey(w.HotelKey),
		handoff.WithGrantRequired(), handoff.WithRecordsLostAt(time.Time{}))
	return w
}

// Receiver is the hotel's dialog receiver at url: HTTP signatures, Txn-Tokens of
// a.example, handoffs in the requests of host.
func (w *World) Receiver(tb testing.TB, url string, host dialog.Host) *dialog.Receiver {
	tb.Helper()
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wit.NewValidator(w.Dom.Trust), httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithTxnTokens(txntoken.NewVerifier(w.TTSKeys, "a.example")),
		dialog.WithHandoffsIn(w.HandoffReceiver, host),
	)
	MustOK(tb, err)
	return rc
}

// NewDialog is a new dialog that initiator starts.
func NewDialog(tb testing.TB, initiator identifier.ID) *dialog.Context {
	tb.Helper()
	dc, err := dialog.New(agent.NewDialogID(), initiator)
	MustOK(tb, err)
	return dc
}
