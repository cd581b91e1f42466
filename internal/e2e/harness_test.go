package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// domain is one trust domain's services, each a real HTTP server on loopback.
type domain struct {
	td        string
	witURL    string
	ttsURL    string
	witKeys   keys.KeySet // the WIT issuer's JWKS, fetched over HTTP
	ttsKeys   keys.KeySet // the TTS's JWKS, fetched over HTTP
	trust     *keys.Trust
	ttsClient func(src wit.Source) *txntoken.Client
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// startDomain runs a WIT issuer (workloads authenticated in development mode: this
// harness tests dialogs, the issuer's own methods are tested in witissuer) and a TTS
// that accepts self_signed subject tokens from the domain's agents (testbed).
func startDomain(t *testing.T, td string) *domain {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tb, err := testbed.StartDomain(ctx, td)
	mustOK(t, err)
	t.Cleanup(tb.Close)
	d := &domain{td: td, witURL: tb.WITURL, ttsURL: tb.TTSURL, witKeys: tb.WITKeys(ctx), ttsKeys: tb.TTSKeys(ctx)}
	d.trust = keys.NewTrust().AddTrustDomain(td, d.witKeys)
	d.ttsClient = func(src wit.Source) *txntoken.Client {
		return &txntoken.Client{TokenEndpoint: tb.TokenEndpoint(), WITSource: src, Proof: proof.WPT}
	}
	return d
}

// workload obtains a refreshing WIT source from the domain's issuer.
func (d *domain) workload(t *testing.T, path string) (identifier.ID, wit.Source) {
	id, err := identifier.Parse("wimse://" + d.td + path)
	mustOK(t, err)
	c := &witissuer.Client{Endpoint: d.witURL + "/v1/wit", Audience: d.witURL, Subject: id.String()}
	src := c.Source()
	if _, err := src.Credential(context.Background()); err != nil {
		t.Fatalf("WIT for %s: %v", id, err)
	}
	return id, src
}

// selfSigned is the subject of an agent's first Txn-Token: a token it signs itself.
func (d *domain) selfSigned(id identifier.ID, src wit.Source) agent.SubjectFunc {
	return func(ctx context.Context) (string, string, error) {
		c, err := src.Credential(ctx)
		if err != nil {
			return "", "", err
		}
		tok, err := txntoken.NewSelfSignedToken(c.Key, id, "alice@"+d.td, d.ttsURL, "trip.book", time.Minute, time.Now())
		return tok, tts.TokenTypeSelfSigned, err
	}
}

// participant is an agent or tool served behind the dialog receiver.
type participant struct {
	id   identifier.ID
	src  wit.Source
	url  string
	seen chan *dialog.Verified
}

func (d *domain) serve(t *testing.T, id identifier.ID, src wit.Source, path string, stateful bool) *participant {
	p := &participant{id: id, src: src, seen: make(chan *dialog.Verified, 16)}
	srv := httptest.NewUnstartedServer(nil)
	p.url = "http://" + srv.Listener.Addr().String() + path
	wits := wit.NewValidator(d.trust, wit.WithCache(1024, time.Minute))
	replay := store.NewMemory()
	opts := []dialog.ReceiverOption{
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(p.url), httpsig.WithReplay(replay))),
		dialog.WithWPT(wpt.NewVerifier(wits, wpt.WithAudiences(p.url), wpt.WithReplay(replay))),
		dialog.WithTxnTokens(txntoken.NewVerifier(d.ttsKeys, d.td)),
		dialog.WithProvenance(dialog.NewProvenanceVerifier(wits, 0)),
		dialog.WithResponseSigner(func(ctx context.Context) (*httpsig.Signer, error) {
			c, err := src.Credential(ctx)
			if err != nil {
				return nil, err
			}
			return httpsig.NewSigner(c.Key, c.WIT), nil
		}),
	}
	if stateful {
		opts = append(opts, dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())))
	}
	rc, err := dialog.NewReceiver(opts...)
	mustOK(t, err)
	srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.seen <- dialog.FromRequest(r)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// caller is an agent's outgoing side.
func (d *domain) caller(id identifier.ID, src wit.Source, tokens agent.TxnTokenSource, method proof.Method, requireSigned bool) *agent.Agent {
	wits := wit.NewValidator(d.trust)
	return &agent.Agent{Self: id, Client: &http.Client{Transport: &agent.Transport{
		Source: src, Tokens: tokens, Proof: method, RequireSignedResponse: requireSigned,
		Responses: httpsig.NewVerifier(wits),
	}}}
}
