package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit/audittest"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// A handoff in an MCP tools/call reaches the ingress from a delegating agent of its
// own (a Go agent.Transport). The ingress checks it with the
// core's extractor: an accepted offer reaches the application, which is told so; an
// offer for another dialog is rejected, and its signed status comes back in the MCP
// reply without the application running.
func TestIngressHandoffInMCP(t *testing.T) {
	a1Key, _ := keys.Generate(keys.ES256)
	t1Key, _ := keys.Generate(keys.ES256)
	trust := handoff.NewStaticTrust()
	var hr *handoff.Receiver
	trail := &audittest.Sink{}
	auditLog, err := audit.New(trail, audit.FixedKey(t1Key), audit.WithWriter("t1"))
	mustOK(t, err)
	p := newPair(t, pairOptions{receiver: func(t1 identifier.ID) []dialog.ReceiverOption {
		mustOK(t, trust.Bind(t1.String(), t1Key.Public()))
		hr = handoff.NewReceiver(t1.String(), trust, store.NewMemoryRecords(),
			handoff.WithStatusKey(t1Key), handoff.WithGrantRequired(), handoff.WithRecordsLostAt(time.Time{}))
		return []dialog.ReceiverOption{dialog.WithHandoffs(hr, nil), dialog.WithAuditor(auditLog, t1), dialog.WithAuditHandler(audit.HandlerIngress)}
	}, ingress: func(c *proxy.IngressConfig) { c.Handoffs = hr },
		app: func(w http.ResponseWriter, _ *http.Request, _ []byte) { mcpResult(w, "") }})
	mustOK(t, trust.Bind(p.a1.String(), a1Key.Public()))
	del, err := handoff.NewDelegator(handoff.DelegatorConfig{Self: p.a1.String(), Key: a1Key, Trust: trust})
	mustOK(t, err)
	ctx := context.Background()
	tokens := agent.NewTTSSource(&txntoken.Client{TokenEndpoint: p.d.ttsURL + tts.PathToken, WITSource: p.a1src, Proof: proof.WPT},
		td, "trip.book", selfSigned(p.d, p.a1, p.a1src), nil)
	a1 := &agent.Agent{Self: p.a1, Client: &http.Client{Transport: &agent.Transport{Source: p.a1src, Tokens: tokens,
		Responses: httpsig.NewVerifier(wit.NewValidator(p.d.trust)), Audience: func(*http.Request) string { return p.recipient }}}}
	d1, _ := dialog.New("D1", p.a1)
	tok, err := tokens.TxnToken(ctx, "D1")
	mustOK(t, err)

	var hops []string
	send := func(dlgOfOffer *dialog.Context) (int, []byte) {
		offer, err := agent.OfferWithCredential(ctx, del, tok, dlgOfOffer, handoff.OfferRequest{Offer: handoff.Offer{Aud: p.t1.String()}})
		mustOK(t, err)
		vo, err := handoff.VerifyOffer(ctx, trust, offer.Offer, 0)
		mustOK(t, err)
		hops = append(hops, vo.Hop)
		params, err := handoff.PutMCPRequest([]byte(`{"name":"book_hotel","arguments":{}}`), offer)
		mustOK(t, err)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": json.RawMessage(params)})
		req, _ := http.NewRequest("POST", p.ingress.URL+"/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := a1.Continue(ctx, req, d1, nil)
		mustOK(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}

	d2, _ := dialog.New("D2", p.a1)
	status, reply := send(d2)
	if p.app.hits() != 0 {
		t.Fatal("the application ran for a rejected offer")
	}
	st, err := agent.HandoffStatus(reply)
	if status != 200 || err != nil || st == nil {
		t.Fatalf("%d %s: no status in the MCP reply (%v)", status, reply, err)
	}
	u, err := del.HandleStatus(ctx, *st)
	mustOK(t, err)
	if u.Status.State != handoff.StateRejected || u.Status.ReasonValue() != handoff.ReasonPolicy {
		t.Fatalf("status %s reason %s, want rejected policy", u.Status.State, u.Status.ReasonValue())
	}

	status, reply = send(d1)
	if status != 200 || p.app.hits() != 1 {
		t.Fatalf("accepted offer: %d %s, application hits %d", status, reply, p.app.hits())
	}
	if got := p.app.last().Header.Get(proxy.VerifiedHandoffField); got != "accepted" {
		t.Fatalf("the application was told %q", got)
	}
	// The application said nothing about the outcome: the hop stays accepted.
	st, err = agent.HandoffStatus(reply)
	if err != nil || st == nil {
		t.Fatalf("no status in %s (%v)", reply, err)
	}
	u, err = del.HandleStatus(ctx, *st)
	mustOK(t, err)
	if u.Status.State != handoff.StateAccepted {
		t.Fatalf("status %s, want accepted", u.Status.State)
	}
	// Issue 26: the ingress's trail names each offer's hop, the rejected one's with its
	// refusal, and the accepted one's.
	recs := trail.Records(t)
	if len(recs) != 2 || recs[0].Decision != audit.Refused || recs[0].Hop != hops[0] || recs[1].Decision != audit.Accepted ||
		recs[1].Hop != hops[1] || recs[1].Operation != "" || recs[1].SubjectSHA256 != tokenhash.Of(tok) {
		t.Fatalf("records %+v, hops %v", recs, hops)
	}
}
