package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// call sends the agent's plain request to the egress.
func (p *pair) call(t *testing.T, path, body string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	return post(t, p.egress.URL+path, body, h)
}

func codeOf(status int, body []byte) errcode.Code { return errcode.CodeOf(problem.Read(status, body)) }

func start() http.Header { return http.Header{proxy.StartDialogField: {"?1"}} }

// The agent asks for a new dialog and gets it back; the application behind the
// ingress sees the verified sender, dialog, initiator and Txn-Token claims in the
// proxy's fields, and none of the credentials.
func TestPairStartAndContinue(t *testing.T) {
	p := newPair(t, pairOptions{stateful: true})
	res, body := p.call(t, "/t1/tools?x=1", `{"q":1}`, start())
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	dc, err := dialog.FromHeader(res.Header)
	mustOK(t, err)
	if dc == nil || !dc.Initiator().Equal(p.a1) {
		t.Fatalf("the response names no dialog of a1: %v", res.Header)
	}
	r := p.app.last()
	want := map[string]string{
		proxy.VerifiedSenderField: p.a1.String(), proxy.VerifiedProofField: "httpsig", proxy.VerifiedDialogField: dc.DLG(),
		proxy.VerifiedInitiatorField: p.a1.String(), proxy.VerifiedInitiatorProvedField: "true", proxy.VerifiedEstablishedField: "true",
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	var claims txntoken.Claims
	mustOK(t, json.Unmarshal([]byte(r.Header.Get(proxy.VerifiedTxnTokenClaimsField)), &claims))
	if claims.Dialog() != dc.DLG() || claims.ReqWL != p.a1.String() || claims.Scope != "trip.book" {
		t.Fatalf("claims %+v", claims)
	}
	if r.URL.Path != "/mcp/tools" || r.URL.RawQuery != "x=1" || p.app.body[0] != `{"q":1}` {
		t.Fatalf("the application got %s ? %s: %s", r.URL.Path, r.URL.RawQuery, p.app.body[0])
	}
	for _, f := range []string{"Txn-Token", "Signature", "Signature-Input", "Workload-Identity-Token"} {
		if r.Header.Get(f) != "" {
			t.Errorf("the application sees the credential field %s", f)
		}
	}
	// The next request in the dialog: named by the Dialog-Context the agent got back.
	res, body = p.call(t, "/t1", `{"q":2}`, http.Header{dialog.HeaderName: {dc.Value()}})
	if res.StatusCode != 200 || res.Header.Get(dialog.HeaderName) != dc.Value() {
		t.Fatalf("%d %s %v", res.StatusCode, body, res.Header)
	}
	if r := p.app.last(); r.URL.Path != "/mcp" || r.Header.Get(proxy.VerifiedEstablishedField) != "false" || r.Header.Get(proxy.VerifiedDialogField) != dc.DLG() {
		t.Fatalf("continue: %s %v", r.URL.Path, r.Header)
	}
}

// A WPT route: the proof is a Workload Proof Token carrying tth and dth.
func TestPairWPT(t *testing.T) {
	p := newPair(t, pairOptions{method: proof.WPT})
	res, body := p.call(t, "/t1", `{}`, start())
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	if r := p.app.last(); r.Header.Get(proxy.VerifiedProofField) != "wpt" || r.Header.Get(proxy.VerifiedSenderField) != p.a1.String() || r.Header.Get("Authorization") != "" {
		t.Fatalf("%v", r.Header)
	}
}

// Tampering between the proxies: each change is refused by the ingress with its
// stable code, and nothing reaches the application.
func TestPairTamperingRefused(t *testing.T) {
	p := newPair(t, pairOptions{stateful: true})
	res, body := p.call(t, "/t1", `{"q":1}`, start())
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	dc, _ := dialog.FromHeader(res.Header)
	other, _ := dialog.New(dc.DLG()+"x", p.a1)
	res, body = p.call(t, "/t1", `{"q":1}`, start()) // a second dialog, for its Txn-Token
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	var secondToken string
	p.tamper = func(r *http.Request) { secondToken = r.Header.Get(txntoken.HeaderName) }
	dc2, _ := dialog.FromHeader(res.Header)
	p.call(t, "/t1", `{}`, http.Header{dialog.HeaderName: {dc2.Value()}})
	hits := p.app.hits()

	for name, c := range map[string]struct {
		tamper func(r *http.Request)
		code   errcode.Code
	}{
		"Dialog-Context changed": {func(r *http.Request) { r.Header.Set(dialog.HeaderName, other.Value()) }, errcode.InvalidSignature},
		"body changed": {func(r *http.Request) {
			b := []byte(`{"q":9}`)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		}, errcode.ContentDigestMismatch},
		"Txn-Token swapped": {func(r *http.Request) { r.Header.Set(txntoken.HeaderName, secondToken) }, errcode.InvalidSignature},
	} {
		t.Run(name, func(t *testing.T) {
			p.tamper = c.tamper
			res, body := p.call(t, "/t1", `{"q":1}`, http.Header{dialog.HeaderName: {dc.Value()}})
			if res.StatusCode < 400 {
				t.Fatalf("the tampered request succeeded: %d %s", res.StatusCode, body)
			}
			// Issue 22 point 5: the egress asked for a signed response, and the
			// ingress's unsigned refusal is passed on as the upstream's, with its status
			// and code, not masked by the missing signature nor taken as a response.
			if got := codeOf(res.StatusCode, body); got != c.code || res.StatusCode != http.StatusUnauthorized ||
				res.Header.Get(proxy.RefusedByField) != "upstream" || !bytes.Contains(body, []byte(`"refused_by":"upstream"`)) {
				t.Errorf("the agent got %d %s (%s), want the ingress's %s marked as the upstream's", res.StatusCode, got, body, c.code)
			}
			if got, doc := p.ingressCode(); got != c.code {
				t.Fatalf("ingress code %s (%s), want %s", got, doc, c.code)
			}
			if p.app.hits() != hits {
				t.Fatal("the tampered request reached the application")
			}
		})
	}
}

// A signed request captured between the proxies and sent again is refused as a
// replay (its signature nonce is claimed once), and does not reach the application.
func TestPairReplayRefused(t *testing.T) {
	p := newPair(t, pairOptions{})
	res, body := p.call(t, "/t1", `{"q":1}`, start())
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	hits := p.app.hits()
	p.mu.Lock()
	again := p.sent.Clone(context.Background())
	again.Body = io.NopCloser(bytes.NewReader(p.sentBody))
	p.mu.Unlock()
	again.RequestURI = ""
	res, err := http.DefaultTransport.RoundTrip(again)
	mustOK(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if got := codeOf(res.StatusCode, b); got != errcode.Replayed {
		t.Fatalf("replay: %d %s", res.StatusCode, b)
	}
	if p.app.hits() != hits {
		t.Fatal("the replayed request reached the application")
	}
}

// Identity fields a client sends are never what the application sees: the ingress
// removes them before verification, so an unproved request carrying them is refused
// and a proved one arrives with the verified values only; the egress does not send
// an agent's copies on.
func TestPairSpoofedIdentityFields(t *testing.T) {
	p := newPair(t, pairOptions{stateful: true})
	spoof := http.Header{
		proxy.VerifiedSenderField:          {"wimse://a.example/admin"},
		proxy.VerifiedInitiatorProvedField: {"true"},
		"dialogtrust-verified-dialog":      {"D-spoofed"},
		proxy.VerifiedTxnTokenClaimsField:  {`{"scope":"everything"}`},
	}
	// Straight to the ingress, without a proof.
	res, b := send(t, p.ingress.URL+"/mcp", `{}`, spoof)
	if got := codeOf(res.StatusCode, b); got != errcode.MissingCredential || p.app.hits() != 0 {
		t.Fatalf("unproved spoof: %d %s, application hits %d", res.StatusCode, b, p.app.hits())
	}
	// From the agent through the egress, and added again between the proxies (the
	// fields are not covered by the signature, so the request still verifies).
	p.tamper = func(r *http.Request) {
		for k, v := range spoof {
			if r.Header.Get(k) != "" {
				t.Errorf("the egress sent the agent's %s on", k)
			}
			r.Header[k] = v
		}
	}
	res, body := p.call(t, "/t1", `{}`, func() http.Header {
		h := start()
		for k, v := range spoof {
			h[k] = v
		}
		return h
	}())
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	dc, _ := dialog.FromHeader(res.Header)
	r := p.app.last()
	if r.Header.Get(proxy.VerifiedSenderField) != p.a1.String() || r.Header.Get(proxy.VerifiedDialogField) != dc.DLG() ||
		len(r.Header.Values(proxy.VerifiedSenderField)) != 1 || strings.Contains(r.Header.Get(proxy.VerifiedTxnTokenClaimsField), "everything") {
		t.Fatalf("the application saw spoofed fields: %v", r.Header)
	}
	if want := `{"sender":"` + p.a1.String() + `","dialog":"` + dc.DLG() + `"}`; string(body) != want {
		t.Fatalf("the application answered %s", body)
	}
}

// The egress's own refusals, each with its code.
func TestEgressRefusals(t *testing.T) {
	p := newPair(t, pairOptions{})
	dc, _ := dialog.New("D1", p.a1)
	for name, c := range map[string]struct {
		path string
		h    http.Header
		code errcode.Code
	}{
		"no route":            {"/other", nil, errcode.NoRoute},
		"dot segment":         {"/t1/../admin", nil, errcode.NoRoute},
		"start and a dialog":  {"/t1", http.Header{proxy.StartDialogField: {"?1"}, dialog.HeaderName: {dc.Value()}}, errcode.InvalidRequest},
		"start not a boolean": {"/t1", http.Header{proxy.StartDialogField: {"yes"}}, errcode.InvalidRequest},
		"malformed dialog":    {"/t1", http.Header{dialog.HeaderName: {`dlg=1`}}, errcode.InvalidDialogContext},
		"two Dialog-Contexts": {"/t1", http.Header{dialog.HeaderName: {dc.Value(), dc.Value()}}, errcode.DuplicateField},
	} {
		// A raw request line, so that the dot segment reaches the handler as sent.
		req, _ := http.NewRequest("POST", p.egress.URL+"/", strings.NewReader(`{}`))
		req.URL.Opaque = c.path
		for k, v := range c.h {
			req.Header[k] = v
		}
		res, err := http.DefaultClient.Do(req)
		mustOK(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if got := codeOf(res.StatusCode, b); got != c.code {
			t.Errorf("%s: %d %s, want %s", name, res.StatusCode, b, c.code)
		}
	}
	if p.app.hits() != 0 {
		t.Fatal("a refused request reached the application")
	}
	for _, up := range []string{"http://tool.example/", "ftp://127.0.0.1/", "https://u@tool.example/", "https://tool.example/?q"} {
		if _, err := proxy.CheckUpstream(up, false); errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Errorf("%s: %v", up, err)
		}
	}
	for _, up := range []string{"http://127.0.0.1:1/", "http://[::1]:1/x", "http://localhost:1", "https://tool.example/mcp"} {
		if _, err := proxy.CheckUpstream(up, false); err != nil {
			t.Errorf("%s: %v", up, err)
		}
	}
	if _, err := proxy.CheckUpstream("http://tool.example/", true); err != nil {
		t.Errorf("plain HTTP allowed: %v", err)
	}
}

// A body over the bound is refused at either proxy before anything is signed or
// verified.
func TestBodyBound(t *testing.T) {
	p := newPair(t, pairOptions{})
	big := strings.Repeat("a", proxy.MaxBody+1)
	res, body := p.call(t, "/t1", big, start())
	if got := codeOf(res.StatusCode, body); got != errcode.BodyTooLarge || res.StatusCode != 413 {
		t.Fatalf("egress: %d %s", res.StatusCode, body)
	}
	res2, err := http.Post(p.ingress.URL+"/mcp", "application/json", strings.NewReader(big))
	mustOK(t, err)
	b, _ := io.ReadAll(res2.Body)
	res2.Body.Close()
	if got := codeOf(res2.StatusCode, b); got != errcode.BodyTooLarge || p.app.hits() != 0 {
		t.Fatalf("ingress: %d %s", res2.StatusCode, b)
	}
}

// A path with a dot segment is refused at the ingress before anything else.
func TestIngressRefusesDotSegments(t *testing.T) {
	p := newPair(t, pairOptions{})
	req, _ := http.NewRequest("GET", p.ingress.URL+"/", nil)
	req.URL.Opaque = "/mcp/../admin"
	res, err := http.DefaultClient.Do(req)
	mustOK(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if got := codeOf(res.StatusCode, b); got != errcode.InvalidRequest || p.app.hits() != 0 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
}

// On a route that does not demand a signed response, the ingress's refusal reaches the
// agent with its own code.
func TestPairRefusalReachesAgent(t *testing.T) {
	p := newPair(t, pairOptions{unsignedOK: true})
	res, body := p.call(t, "/t1", `{}`, start())
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	dc, _ := dialog.FromHeader(res.Header)
	hits := p.app.hits()
	p.tamper = func(r *http.Request) {
		r.Header.Set(dialog.HeaderName, strings.Replace(dc.Value(), dc.DLG(), dc.DLG()+"x", 1))
	}
	res, body = p.call(t, "/t1", `{}`, http.Header{dialog.HeaderName: {dc.Value()}})
	if got := codeOf(res.StatusCode, body); got != errcode.InvalidSignature || p.app.hits() != hits {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}
