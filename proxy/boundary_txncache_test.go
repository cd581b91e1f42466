package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// unsignedWhen carries B1's requests to TTS B, without their HTTP signature while
// *on is set: TTS B refuses those.
type unsignedWhen struct{ on *atomic.Bool }

func (u unsignedWhen) RoundTrip(r *http.Request) (*http.Response, error) {
	if u.on.Load() {
		r = r.Clone(r.Context())
		r.Header.Del("Signature")
		r.Header.Del("Signature-Input")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// exchangesAtTTSB counts step 4's Txn-Token requests at TTS B (token exchanges; AS B's
// redemptions are JWT bearer grants).
func (bw *boundary) exchangesAtTTSB(t *testing.T) []exchange {
	return tokenRequests(t, bw.rec, srvTTSB, oauth.GrantTypeTokenExchange)
}

// accessToken is the access token the egress obtained for D1's linked dialog, by a
// first request through it.
func (bw *boundary) accessToken(t *testing.T) string {
	t.Helper()
	var at string
	bw.tamperB1 = func(r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			at = strings.TrimPrefix(a, "Bearer ")
		}
	}
	if res, body := bw.call(t, "/b1", `{}`); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	bw.tamperB1 = nil
	if at == "" {
		t.Fatal("the egress sent no access token")
	}
	return at
}

// a2Direct is A2 calling B1's ingress itself (without its egress), with an access
// token it holds: it can start several linked dialogs with one access token.
func (bw *boundary) a2Direct() *agent.Agent {
	return &agent.Agent{Self: bw.a2, Client: &http.Client{Transport: &agent.Transport{Source: bw.a2src,
		Responses: httpsig.NewVerifier(witsOf(bw.ctx, bw.a, bw.b)), Audience: func(*http.Request) string { return bw.recipB1 },
		ResponseSigners: peerSigners}}}
}

// peerSigners: B1 answers a linked dialog from b.example.
var peerSigners, _ = agent.TrustDomainSigners("b.example")

// linkedRequest sends A2's request to B1's ingress with access token at: in dc, or
// starting a new linked dialog when dc is nil. It returns the status, the error code
// of a refusal and the dialog.
func (bw *boundary) linkedRequest(t *testing.T, at string, dc *dialog.Context) (int, errcode.Code, *dialog.Context) {
	t.Helper()
	req, _ := http.NewRequest("POST", bw.ingress.URL+"/hotel", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+at)
	a2 := bw.a2Direct()
	var res *http.Response
	var err error
	if dc == nil {
		res, dc, err = a2.Start(bw.ctx, req, "")
	} else {
		res, err = a2.Continue(bw.ctx, req, dc, nil)
	}
	mustOK(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode, codeOf(res.StatusCode, b), dc
}

// Section 11 step 4: B1's ingress keeps the Txn-Token it obtained for an access token
// and linked dialog. A second request in the same D2 makes no exchange at TTS B; a new
// access token (the egress renews it) or another D2 with the same access token makes
// one; so does the kept Txn-Token's renewal time (half the access token's minute), by
// the ingress's clock.
func TestDialogBindingSec11_BoundaryIngressKeepsTxnToken(t *testing.T) {
	bw := newBoundary(t)
	at := bw.accessToken(t)
	if n := len(bw.exchangesAtTTSB(t)); n != 1 {
		t.Fatalf("first request: %d exchanges at TTS B, want 1", n)
	}
	if res, body := bw.call(t, "/b1", `{"q":2}`); res.StatusCode != 200 || res.Header.Get(proxy.LinkedEstablishedField) != "false" {
		t.Fatalf("second request: %d %s", res.StatusCode, body)
	}
	if n := len(bw.exchangesAtTTSB(t)); n != 1 {
		t.Fatalf("second request in D2: %d exchanges at TTS B, want 1", n)
	}
	if r := bw.app.last(); r.Header.Get(proxy.VerifiedTxnTokenClaimsField) == "" {
		t.Fatal("second request: the application got no Txn-Token claims")
	}

	// The same access token in another linked dialog: a Txn-Token recording that one.
	status, code, d2b := bw.linkedRequest(t, at, nil)
	if status != 200 {
		t.Fatalf("another D2: %d %s", status, code)
	}
	ex := bw.exchangesAtTTSB(t)
	if len(ex) != 2 || !strings.Contains(formOf(t, ex[1]).Get("request_details"), d2b.DLG()) {
		t.Fatalf("another D2: %d exchanges at TTS B, want 2, the last for %s", len(ex), d2b.DLG())
	}
	if status, code, _ := bw.linkedRequest(t, at, d2b); status != 200 || len(bw.exchangesAtTTSB(t)) != 2 {
		t.Fatalf("continuing the other D2: %d %s, %d exchanges at TTS B, want 2", status, code, len(bw.exchangesAtTTSB(t)))
	}

	// Within the renewal time the kept one serves; past it, another is obtained.
	bw.clock.Advance(20 * time.Second)
	if status, code, _ := bw.linkedRequest(t, at, d2b); status != 200 || len(bw.exchangesAtTTSB(t)) != 2 {
		t.Fatalf("after 20 s: %d %s, %d exchanges at TTS B, want 2", status, code, len(bw.exchangesAtTTSB(t)))
	}
	bw.clock.Advance(11 * time.Second)
	if status, code, _ := bw.linkedRequest(t, at, d2b); status != 200 || len(bw.exchangesAtTTSB(t)) != 3 {
		t.Fatalf("after 31 s: %d %s, %d exchanges at TTS B, want 3", status, code, len(bw.exchangesAtTTSB(t)))
	}
	if status, code, _ := bw.linkedRequest(t, at, d2b); status != 200 || len(bw.exchangesAtTTSB(t)) != 3 {
		t.Fatalf("after renewal: %d %s, %d exchanges at TTS B, want 3", status, code, len(bw.exchangesAtTTSB(t)))
	}

	// Through the egress, 31 s on, the egress renewed its access token: a new one, a
	// new exchange, in the same D2.
	res, body := bw.call(t, "/b1", `{"q":3}`)
	ex = bw.exchangesAtTTSB(t)
	if res.StatusCode != 200 || len(ex) != 4 || formOf(t, ex[3]).Get("subject_token") == at {
		t.Fatalf("new access token: %d %s, %d exchanges at TTS B, want 4 with the new token", res.StatusCode, body, len(ex))
	}
}

// Concurrent requests needing the same Txn-Token (same access token and D2, the kept
// one past its renewal time) make one exchange at TTS B.
func TestDialogBindingSec11_BoundaryIngressConcurrentOneExchange(t *testing.T) {
	bw := newBoundary(t)
	at := bw.accessToken(t)
	status, code, d2 := bw.linkedRequest(t, at, nil)
	if status != 200 || len(bw.exchangesAtTTSB(t)) != 2 {
		t.Fatalf("%d %s, %d exchanges at TTS B", status, code, len(bw.exchangesAtTTSB(t)))
	}
	bw.clock.Advance(31 * time.Second)
	const n = 8
	codes := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", bw.ingress.URL+"/hotel", strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+at)
			res, err := bw.a2Direct().Continue(bw.ctx, req, d2, nil)
			if err != nil {
				codes <- err.Error()
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				codes <- string(b)
				return
			}
			codes <- ""
		})
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != "" {
			t.Fatal(c)
		}
	}
	if got := len(bw.exchangesAtTTSB(t)); got != 3 {
		t.Fatalf("%d concurrent requests: %d exchanges at TTS B, want 1 more than 2", n, got)
	}
}

// A Txn-Token request TTS B refuses comes back to the caller with TTS B's code, and is
// not kept: the next request asks again (and a kept Txn-Token past its renewal time is
// not used instead).
func TestDialogBindingSec11_BoundaryIngressRefusalNotKept(t *testing.T) {
	bw := newBoundary(t)
	at := bw.accessToken(t)
	_, _, d2 := bw.linkedRequest(t, at, nil)
	bw.clock.Advance(31 * time.Second)
	hits := bw.app.hits()
	bw.refuseTTSB.Store(true)
	for i := range 2 {
		status, code, _ := bw.linkedRequest(t, at, d2)
		ex := bw.exchangesAtTTSB(t)
		if len(ex) != 3+i {
			t.Fatalf("refusal %d: %d exchanges at TTS B, want %d", i, len(ex), 3+i)
		}
		last := ex[len(ex)-1]
		want, _ := jsonOf(t, last.resBody)["code"].(string)
		if last.status == 200 || status == 200 || code != errcode.Code(want) || code == errcode.Unmapped {
			t.Fatalf("refusal %d: TTS B answered %d %s, the caller got %d %s", i, last.status, want, status, code)
		}
	}
	bw.refuseTTSB.Store(false)
	for i := range 2 {
		if status, code, _ := bw.linkedRequest(t, at, d2); status != 200 || len(bw.exchangesAtTTSB(t)) != 5 {
			t.Fatalf("after the refusals %d: %d %s, %d exchanges at TTS B, want 5", i, status, code, len(bw.exchangesAtTTSB(t)))
		}
	}
	if bw.app.hits() != hits+2 {
		t.Fatal("a refused request reached the application")
	}
}

// Issue 22 point 5 on a route crossing a trust boundary: a refusal of the peer's
// ingress reaches the agent with the peer's code, marked as the upstream's
// (RefusedByField), as on any other route.
func TestIssue22Point5_BoundaryRouteRefusalMarkedUpstream(t *testing.T) {
	bw := newBoundary(t)
	if res, body := bw.call(t, "/b1", `{}`); res.StatusCode != 200 || res.Header.Get(proxy.RefusedByField) != "" {
		t.Fatalf("%d %s %v", res.StatusCode, body, res.Header)
	}
	// B1's ingress asks TTS B again past its kept Txn-Token's renewal time, and TTS B
	// refuses it.
	bw.clock.Advance(31 * time.Second)
	bw.refuseTTSB.Store(true)
	res, body := bw.call(t, "/b1", `{}`)
	ex := bw.exchangesAtTTSB(t)
	want, _ := jsonOf(t, ex[len(ex)-1].resBody)["code"].(string)
	if code := codeOf(res.StatusCode, body); res.StatusCode < 400 || code != errcode.Code(want) || code == errcode.Unmapped {
		t.Fatalf("the agent got %d %s (code %s), TTS B refused with %s", res.StatusCode, body, code, want)
	}
	if got := res.Header.Get(proxy.RefusedByField); got != "upstream" {
		t.Fatalf("%s = %q, want upstream: %d %s", proxy.RefusedByField, got, res.StatusCode, body)
	}
}
