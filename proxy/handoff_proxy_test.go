package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// handoffPair is a pair whose egress route makes offers to t1 in host's requests and
// whose ingress checks and answers them, with a1's and t1's handoff keys in one trust.
type handoffPair struct {
	*pair
	a1Key, t1Key *keys.PrivateKey
	trust        *handoff.StaticTrust
	hr           *handoff.Receiver
}

type handoffOptions struct {
	host     hostproto.Host
	method   proof.Method
	delegate string // default t1
	app      func(w http.ResponseWriter, r *http.Request, body []byte)
	now      func() time.Time // the egress's clock (default time.Now)
	// egress, when set, changes the egress's configuration last.
	egress func(c *proxy.EgressConfig)
	// streams: nothing but the handoff needs the reply whole (no response signer at
	// the ingress, no signed response required, the egress's own transport).
	streams bool
}

func newHandoffPair(t *testing.T, o handoffOptions) *handoffPair {
	a1Key, _ := keys.Generate(keys.ES256)
	t1Key, _ := keys.Generate(keys.ES256)
	hp := &handoffPair{a1Key: a1Key, t1Key: t1Key, trust: handoff.NewStaticTrust()}
	hp.pair = newPair(t, pairOptions{method: o.method, app: o.app, unsignedOK: o.streams, unsignedResponses: o.streams,
		receiver: func(t1 identifier.ID) []dialog.ReceiverOption {
			mustOK(t, hp.trust.Bind(t1.String(), t1Key.Public()))
			hp.hr = handoff.NewReceiver(t1.String(), hp.trust, store.NewMemoryRecords(),
				handoff.WithStatusKey(t1Key), handoff.WithGrantRequired(), handoff.WithRecordsLostAt(time.Time{}))
			return []dialog.ReceiverOption{dialog.WithHandoffsIn(hp.hr, o.host)}
		},
		ingress: func(c *proxy.IngressConfig) { c.Handoffs = hp.hr },
		route: func(t1 identifier.ID, r *proxy.Route) {
			r.Delegate, r.Host = t1, o.host
			if o.delegate != "" {
				r.Delegate, _ = identifier.Parse(o.delegate)
			}
		},
		egress: func(c *proxy.EgressConfig) {
			c.HandoffKey, c.HandoffTrust, c.Now = a1Key, hp.trust, o.now
			if o.streams {
				c.Base = nil
			}
			if o.egress != nil {
				o.egress(c)
			}
		},
	})
	mustOK(t, hp.trust.Bind(hp.a1.String(), a1Key.Public()))
	return hp
}

// forgeCompleted replaces the delegate's status st in body with a "completed" one, the
// same but for its state and reason, signed by forger.
func (hp *handoffPair) forgeCompleted(t *testing.T, forger *keys.PrivateKey, st *handoff.Signed, body []byte) []byte {
	t.Helper()
	vs, err := handoff.VerifyStatusSignature(context.Background(), hp.trust, *st, 0)
	mustOK(t, err)
	forged := *vs.Status
	forged.State, forged.Reason = handoff.StateCompleted, nil
	fs, err := handoff.SignStatus(forger, handoff.JWS, &forged)
	mustOK(t, err)
	return bytes.Replace(body, []byte(st.Text()), []byte(fs.Text()), 1)
}

// wantStated checks the delegate's record of hop: it holds state and the last status,
// for a retransmission (section 5.3).
func (hp *handoffPair) wantStated(t *testing.T, hop, state string) {
	t.Helper()
	rec, err := hp.hr.Lookup(context.Background(), hp.a1.String(), hop)
	mustOK(t, err)
	if rec.State != state || rec.LastStatus == nil {
		t.Fatalf("the delegate recorded %+v", rec)
	}
}

// send posts a JSON-RPC body to the egress asking for an offer in a new dialog.
func (hp *handoffPair) send(t *testing.T, body string, fields map[string]string) (*http.Response, []byte) {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set(proxy.StartDialogField, "?1")
	h.Set(proxy.HandoffField, "?1")
	for k, v := range fields {
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
	}
	return send(t, hp.egress.URL+"/t1", body, h)
}

// status is the delegate's status in a reply, verified with the trust.
func (hp *handoffPair) status(t *testing.T, body []byte) *handoff.VerifiedStatus {
	t.Helper()
	st, err := agent.HandoffStatus(body)
	if err != nil || st == nil {
		t.Fatalf("no status in %s (%v)", body, err)
	}
	vs, err := handoff.VerifyStatusSignature(context.Background(), hp.trust, *st, 0)
	mustOK(t, err)
	return vs
}

const toolsCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"book_hotel","arguments":{"city":"Oslo"}}}`

func mcpResult(w http.ResponseWriter, status string) {
	w.Header().Set("Content-Type", "application/json")
	if status != "" {
		w.Header().Set(proxy.HandoffStatusField, status)
	}
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"booked"}]}}`)
}

// Sections 2, 3 and 6 (MCP) with section 4: the egress makes the offer for the agent
// in the tools/call's _meta, the ingress accepts it and tells the application, and the
// application's stated outcome comes back signed, verified at the egress.
func TestHandoffSection6MCPOfferAndStatus(t *testing.T) {
	for _, tc := range []struct {
		name, stated, reason, want, wantReason string
	}{
		{name: "completed", stated: "completed", want: "completed"},
		{name: "no field: accepted", want: "accepted"},
		{name: "accepted", stated: "accepted", want: "accepted"},
		{name: "failed with a detail", stated: "failed", reason: "no%20room%20in%20K%C3%B8ge", want: "failed", wantReason: "no room in K%C3%B8ge"},
		{name: "failed with a reason", stated: "failed", reason: "policy", want: "failed", wantReason: "policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: func(w http.ResponseWriter, r *http.Request, _ []byte) {
				if tc.reason != "" {
					w.Header().Set(proxy.HandoffReasonField, tc.reason)
				}
				mcpResult(w, tc.stated)
			}})
			res, body := hp.send(t, toolsCall, map[string]string{proxy.HandoffTaskField: "book-42"})
			if res.StatusCode != 200 || hp.app.hits() != 1 {
				t.Fatalf("%d %s, application hits %d", res.StatusCode, body, hp.app.hits())
			}
			seen := hp.app.last()
			hop := res.Header.Get(proxy.HandoffHopField)
			if seen.Header.Get(proxy.VerifiedHandoffField) != "accepted" || seen.Header.Get(proxy.VerifiedHandoffHopField) != hop ||
				seen.Header.Get(proxy.VerifiedHandoffFromField) != hp.a1.String() || hop == "" {
				t.Fatalf("the application was told %v (hop %q)", seen.Header, hop)
			}
			if seen.Header.Get(proxy.HandoffField) != "" || seen.Header.Get(proxy.HandoffTaskField) != "" {
				t.Fatal("the agent's handoff fields reached the application")
			}
			// The offer travelled in params._meta, signed by a1 for t1 in the dialog.
			var req struct {
				Params json.RawMessage `json:"params"`
			}
			mustOK(t, json.Unmarshal([]byte(hp.app.body[0]), &req))
			h, err := handoff.MCPRequestHandoff(req.Params)
			if err != nil || h == nil {
				t.Fatalf("no offer in the application's request: %s (%v)", hp.app.body[0], err)
			}
			vo, err := handoff.VerifyOffer(context.Background(), hp.trust, h.Offer, 0)
			mustOK(t, err)
			dc, _ := dialog.FromHeader(res.Header)
			if vo.Iss != hp.a1.String() || vo.Aud != hp.t1.String() || dc == nil || vo.Dialog != dc.DLG() || vo.Hop != hop ||
				vo.Task == nil || *vo.Task != "book-42" || vo.Grant == nil || vo.Exp <= vo.Iat {
				t.Fatalf("offer %+v, dialog %v", vo.Offer, dc)
			}
			if got := res.Header.Get(proxy.HandoffStatusField); got != tc.want {
				t.Fatalf("status %q, want %q", got, tc.want)
			}
			if got := res.Header.Get(proxy.HandoffReasonField); got != tc.wantReason {
				t.Fatalf("reason %q, want %q", got, tc.wantReason)
			}
			// The signed status stays in the body the agent gets.
			vs := hp.status(t, body)
			if string(vs.State) != tc.want || vs.Hop != hop || vs.Iss != hp.t1.String() || !vs.Offer.Equal(h.Offer.Digest()) {
				t.Fatalf("status in the body: %+v", vs.Status)
			}
			if !strings.Contains(string(body), `"booked"`) {
				t.Fatalf("the application's result is gone: %s", body)
			}
		})
	}
}

// Section 4, Table 1, and section 6 (A2A 1.0 and 0.3): the offer rides in the message's
// metadata with the extension listed; without the application's field, a returned
// Task's state gives the status.
func TestHandoffSection4Table1A2ATaskStates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		host   hostproto.Host
		body   string
		result string
		want   string
	}{
		{"1.0 completed", hostproto.A2A10, a2a10Send, `{"task":{"id":"t-1","contextId":"%s","status":{"state":"TASK_STATE_COMPLETED"}}}`, "completed"},
		{"1.0 working", hostproto.A2A10, a2a10Send, `{"task":{"id":"t-1","contextId":"%s","status":{"state":"TASK_STATE_WORKING"}}}`, "accepted"},
		{"1.0 failed", hostproto.A2A10, a2a10Send, `{"task":{"id":"t-1","contextId":"%s","status":{"state":"TASK_STATE_FAILED"}}}`, "failed"},
		{"1.0 input required", hostproto.A2A10, a2a10Send, `{"task":{"id":"t-1","contextId":"%s","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}`, "accepted"},
		{"1.0 rejected after the hop was taken", hostproto.A2A10, a2a10Send, `{"task":{"id":"t-1","contextId":"%s","status":{"state":"TASK_STATE_REJECTED"}}}`, "failed"},
		{"1.0 canceled", hostproto.A2A10, a2a10Send, `{"task":{"id":"t-1","contextId":"%s","status":{"state":"TASK_STATE_CANCELED"}}}`, "accepted"},
		{"1.0 message", hostproto.A2A10, a2a10Send, `{"message":{"role":"ROLE_AGENT","messageId":"m-2","contextId":"%s","parts":[{"text":"on it"}]}}`, "accepted"},
		{"0.3 completed", hostproto.A2A03, a2a03Send, `{"kind":"task","id":"t-1","contextId":"%s","status":{"state":"completed"}}`, "completed"},
		{"0.3 message", hostproto.A2A03, a2a03Send, `{"kind":"message","role":"agent","messageId":"m-2","contextId":"%s","parts":[]}`, "accepted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hp := newHandoffPair(t, handoffOptions{host: tc.host, app: func(w http.ResponseWriter, r *http.Request, _ []byte) {
				w.Header().Set("Content-Type", "application/json")
				result := strings.ReplaceAll(tc.result, "%s", r.Header.Get(proxy.VerifiedDialogField))
				_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"r1","result":`+result+`}`)
			}})
			res, body := hp.send(t, tc.body, nil)
			if res.StatusCode != 200 || hp.app.hits() != 1 {
				t.Fatalf("%d %s, application hits %d", res.StatusCode, body, hp.app.hits())
			}
			seen := hp.app.last()
			ext := seen.Header.Get(hostproto.A2AExtensionsHeader)
			if tc.host == hostproto.A2A03 {
				ext = seen.Header.Get(hostproto.A2A03ExtensionsHeader)
			}
			if !strings.Contains(ext, handoff.A2AExtensionURI) {
				t.Fatalf("the extension is not listed in the request: %v", seen.Header)
			}
			var req struct {
				Params struct {
					Message json.RawMessage `json:"message"`
				} `json:"params"`
			}
			mustOK(t, json.Unmarshal([]byte(hp.app.body[0]), &req))
			if h, err := handoff.A2AMessageHandoff(req.Params.Message); err != nil || h == nil {
				t.Fatalf("no offer in the message: %s (%v)", req.Params.Message, err)
			}
			if got := res.Header.Get(proxy.HandoffStatusField); got != tc.want {
				t.Fatalf("status %q, want %q (%s)", got, tc.want, body)
			}
			vs := hp.status(t, body)
			if string(vs.State) != tc.want {
				t.Fatalf("status in the body %s", vs.State)
			}
			if strings.Contains(tc.name, "rejected") && (vs.ReasonValue() != handoff.ReasonPolicy || res.Header.Get(proxy.HandoffReasonField) != "policy") {
				t.Fatalf("a rejected task: reason %q, field %q", vs.ReasonValue(), res.Header.Get(proxy.HandoffReasonField))
			}
		})
	}
}

const (
	a2a10Send = `{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"role":"ROLE_USER","messageId":"m-1","parts":[{"text":"book a room"}]}}}`
	a2a03Send = `{"jsonrpc":"2.0","id":"r1","method":"message/send","params":{"message":{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"book a room"}]}}}`
)

// Section 5.6: the egress checks the status as a delegator does. A status swapped
// between the proxies for one signed by another key, or removed, is refused and the
// agent gets no body; the route uses WPTs, so that no response signature hides the
// swap. Fields named like the proxy's from the upstream never reach the agent.
func TestHandoffSection5_6TamperedStatusRefused(t *testing.T) {
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, method: proof.WPT, app: func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		mcpResult(w, "failed")
	}})
	forger, _ := keys.Generate(keys.ES256)
	hp.tamperResponse = func(res *http.Response, body []byte) []byte {
		st, err := agent.HandoffStatus(body)
		if err != nil || st == nil {
			return body
		}
		return hp.forgeCompleted(t, forger, st, body)
	}
	res, body := hp.send(t, toolsCall, nil)
	if code := errcode.CodeOf(problem.Read(res.StatusCode, body)); code != errcode.HandoffUntrustedKey && code != errcode.HandoffBadSignature {
		t.Fatalf("a forged status: %d %s", res.StatusCode, body)
	}
	if strings.Contains(string(body), "booked") || res.Header.Get(proxy.HandoffStatusField) != "" {
		t.Fatal("the agent got the body or a status")
	}

	hp.tamperResponse = func(res *http.Response, body []byte) []byte {
		var env map[string]any
		_ = json.Unmarshal(body, &env)
		delete(env["result"].(map[string]any), "_meta")
		b, _ := json.Marshal(env)
		return b
	}
	res, body = hp.send(t, toolsCall, nil)
	if code := errcode.CodeOf(problem.Read(res.StatusCode, body)); code != errcode.MissingCredential {
		t.Fatalf("a removed status: %d %s", res.StatusCode, body)
	}

	hp.tamperResponse = func(res *http.Response, body []byte) []byte {
		res.Header.Set(proxy.HandoffStatusField, "completed")
		res.Header.Set(proxy.VerifiedSenderField, "wimse://a.example/evil")
		return body
	}
	req, _ := http.NewRequest("POST", hp.egress.URL+"/t1", strings.NewReader(toolsCall))
	req.Header.Set(proxy.StartDialogField, "?1")
	r2, err := http.DefaultClient.Do(req)
	mustOK(t, err)
	r2.Body.Close()
	if r2.StatusCode != 200 || r2.Header.Get(proxy.HandoffStatusField) != "" || r2.Header.Get(proxy.VerifiedSenderField) != "" {
		t.Fatalf("the upstream's copies of the proxy's fields: %d %v", r2.StatusCode, r2.Header)
	}
}

// Section 5.1, step 2: an offer for another delegate is rejected by the party that got
// it, with reason wrong-audience; the egress takes that signed rejection (it names
// this offer and this workload), and the application does not run.
func TestHandoffSection5_1WrongDelegateRejected(t *testing.T) {
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, delegate: "wimse://a.example/tool/t2"})
	res, body := hp.send(t, toolsCall, nil)
	if res.StatusCode != 200 || hp.app.hits() != 0 {
		t.Fatalf("%d %s, application hits %d", res.StatusCode, body, hp.app.hits())
	}
	if res.Header.Get(proxy.HandoffStatusField) != "rejected" || res.Header.Get(proxy.HandoffReasonField) != "wrong-audience" {
		t.Fatalf("status %q reason %q", res.Header.Get(proxy.HandoffStatusField), res.Header.Get(proxy.HandoffReasonField))
	}
	if vs := hp.status(t, body); vs.State != handoff.StateRejected || vs.Iss != hp.t1.String() {
		t.Fatalf("status in the body %+v", vs.Status)
	}
}

// Section 5.3: a retransmission of an offer the ingress answered (the same octets, in
// a new request of the delegator) is not processed again: it gets the last status,
// signed before, and the application is not reached.
func TestHandoffSection5_3RetransmissionGetsLastStatus(t *testing.T) {
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		mcpResult(w, "completed")
	}})
	res, body := hp.send(t, toolsCall, nil)
	if res.Header.Get(proxy.HandoffStatusField) != "completed" {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	first, _ := agent.HandoffStatus(body)
	hp.mu.Lock()
	sent := bytes.Clone(hp.sentBody)
	hp.mu.Unlock()
	dc, err := dialog.FromHeader(res.Header)
	mustOK(t, err)

	tokens := agent.NewTTSSource(&txntoken.Client{TokenEndpoint: hp.d.ttsURL + tts.PathToken, WITSource: hp.a1src, Proof: proof.WPT},
		td, "trip.book", selfSigned(hp.d, hp.a1, hp.a1src), nil)
	a1 := &agent.Agent{Self: hp.a1, Client: &http.Client{Transport: &agent.Transport{Source: hp.a1src, Tokens: tokens,
		Responses: httpsig.NewVerifier(wit.NewValidator(hp.d.trust)), Audience: func(*http.Request) string { return hp.recipient }}}}
	req, _ := http.NewRequest("POST", hp.ingress.URL+"/mcp", bytes.NewReader(sent))
	req.Header.Set("Content-Type", "application/json")
	r2, err := a1.Continue(context.Background(), req, dc, nil)
	mustOK(t, err)
	defer r2.Body.Close()
	b2, _ := io.ReadAll(r2.Body)
	if hp.app.hits() != 1 {
		t.Fatalf("the application ran again for a retransmission: %s", b2)
	}
	again, err := agent.HandoffStatus(b2)
	if err != nil || again == nil || again.Text() != first.Text() {
		t.Fatalf("retransmission answered with %s (%v), not the last status", b2, err)
	}
}

// Section 6 places statuses in results: a JSON-RPC error from the application goes
// back without one (the agent gets the error and no status field), and the outcome the
// application stated is recorded for a retransmission (section 5.3).
func TestHandoffSection6JSONRPCErrorCarriesNoStatus(t *testing.T) {
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(proxy.HandoffStatusField, "failed")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"no rooms"}}`)
	}})
	res, body := hp.send(t, toolsCall, nil)
	if res.StatusCode != 200 || !strings.Contains(string(body), "no rooms") || res.Header.Get(proxy.HandoffStatusField) != "" || res.Header.Get(proxy.HandoffHopField) == "" {
		t.Fatalf("%d %s %v", res.StatusCode, body, res.Header)
	}
	hp.wantStated(t, res.Header.Get(proxy.HandoffHopField), string(handoff.StateFailed))
}

// The egress's refusals of the handoff fields and of bodies it cannot put an offer
// in: nothing is sent upstream and the application does not run. A refusal of the
// offer asked for (HandoffField ?1, well formed) of a JSON-RPC request with an id is a
// JSON-RPC error on 200, as the receiver's (dialog.WriteRefusal); the rest are problem
// documents.
func TestHandoffEgressRefusals(t *testing.T) {
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP})
	withOffer, err := handoff.PutMCPRequest([]byte(`{"name":"x","_meta":{}}`), &handoff.Handoff{Offer: handoff.Signed{Form: handoff.JWS, Octets: []byte("a.b.c")}})
	mustOK(t, err)
	for _, tc := range []struct {
		name   string
		body   string
		fields map[string]string
		multi  []string
		want   errcode.Code
		rpc    bool // answered as a JSON-RPC error
	}{
		{name: "not a boolean", body: toolsCall, fields: map[string]string{proxy.HandoffField: "true"}, want: errcode.InvalidRequest},
		{name: "twice", body: toolsCall, multi: []string{proxy.HandoffField, "?1"}, want: errcode.DuplicateField},
		{name: "no dialog", body: toolsCall, fields: map[string]string{proxy.StartDialogField: ""}, want: errcode.InvalidRequest, rpc: true},
		{name: "task without offer", body: toolsCall, fields: map[string]string{proxy.HandoffField: "?0", proxy.HandoffTaskField: "t"}, want: errcode.InvalidRequest},
		{name: "task too long", body: toolsCall, fields: map[string]string{proxy.HandoffTaskField: strings.Repeat("t", proxy.MaxHandoffTask+1)}, want: errcode.InvalidRequest},
		{name: "not JSON-RPC", body: `{"city":"Oslo"}`, want: errcode.InvalidRequest},
		{name: "not tools/call", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, want: errcode.InvalidRequest, rpc: true},
		{name: "string id", body: `{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}`, want: errcode.InvalidRequest, rpc: true},
		{name: "id neither string nor number", body: `{"jsonrpc":"2.0","id":{},"method":"tools/list","params":{}}`, want: errcode.InvalidRequest},
		{name: "a notification", body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}`, want: errcode.InvalidRequest},
		{name: "already an offer", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + string(withOffer) + `}`, want: errcode.HandoffUnplaced, rpc: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hp.mu.Lock()
			hp.sent = nil
			hp.mu.Unlock()
			req, _ := http.NewRequest("POST", hp.egress.URL+"/t1", strings.NewReader(tc.body))
			req.Header.Set(proxy.StartDialogField, "?1")
			req.Header.Set(proxy.HandoffField, "?1")
			for k, v := range tc.fields {
				if v == "" {
					req.Header.Del(k)
				} else {
					req.Header.Set(k, v)
				}
			}
			if tc.multi != nil {
				req.Header.Add(tc.multi[0], tc.multi[1])
			}
			res, err := http.DefaultClient.Do(req)
			mustOK(t, err)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if code := errcode.CodeOf(problem.Read(res.StatusCode, b)); code != tc.want {
				t.Fatalf("%d %s, want %s", res.StatusCode, b, tc.want)
			}
			checkRefusalForm(t, res, b, tc.body, tc.rpc)
			hp.mu.Lock()
			sent := hp.sent
			hp.mu.Unlock()
			if sent != nil || hp.app.hits() != 0 {
				t.Fatal("the refused request went upstream")
			}
		})
	}

	// A route without a delegate makes no offers.
	plain := newPair(t, pairOptions{})
	req, _ := http.NewRequest("POST", plain.egress.URL+"/t1", strings.NewReader(toolsCall))
	req.Header.Set(proxy.StartDialogField, "?1")
	req.Header.Set(proxy.HandoffField, "?1")
	res, err := http.DefaultClient.Do(req)
	mustOK(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if code := errcode.CodeOf(problem.Read(res.StatusCode, b)); code != errcode.InvalidRequest || plain.app.hits() != 0 {
		t.Fatalf("a route without a delegate: %d %s", res.StatusCode, b)
	}
	checkRefusalForm(t, res, b, toolsCall, true)
}

// checkRefusalForm checks that a refusal of the request body reqBody is a JSON-RPC
// error on 200 naming the request's id, with the code and kind in its data (rpc), or a
// problem document with an error status.
func checkRefusalForm(t *testing.T, res *http.Response, b []byte, reqBody string, rpc bool) {
	t.Helper()
	ct := res.Header.Get("Content-Type")
	if !rpc {
		if res.StatusCode < 400 || ct != "application/problem+json" {
			t.Fatalf("want a problem document: %d %s %s", res.StatusCode, ct, b)
		}
		return
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	mustOK(t, json.Unmarshal([]byte(reqBody), &req))
	var got struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code int `json:"code"`
			Data struct {
				Code string `json:"code"`
				Kind string `json:"kind"`
			} `json:"data"`
		} `json:"error"`
	}
	if res.StatusCode != http.StatusOK || ct != "application/json" || json.Unmarshal(b, &got) != nil ||
		got.JSONRPC != "2.0" || string(got.ID) != string(req.ID) || got.Error.Code != -32602 ||
		got.Error.Data.Code == "" || got.Error.Data.Kind != "failed" {
		t.Fatalf("want a JSON-RPC error naming id %s: %d %s %s", req.ID, res.StatusCode, ct, b)
	}
}

// The ingress sends no unsigned success for an accepted offer: an application status
// other than completed, failed or accepted, and a reply in which no status can be
// placed (an event stream without a response to the request), are refused as
// upstream_unavailable.
func TestHandoffIngressNoUnsignedSuccess(t *testing.T) {
	for _, tc := range []struct {
		name string
		app  func(w http.ResponseWriter, r *http.Request, _ []byte)
	}{
		{"unknown status", func(w http.ResponseWriter, _ *http.Request, _ []byte) { mcpResult(w, "done") }},
		{"canceled is the delegator's", func(w http.ResponseWriter, _ *http.Request, _ []byte) { mcpResult(w, "canceled") }},
		{"event stream without a response", func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{\"content\":[]}}\n\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: tc.app})
			res, body := hp.send(t, toolsCall, nil)
			if code := errcode.CodeOf(problem.Read(res.StatusCode, body)); code != errcode.UpstreamUnavailable || hp.app.hits() != 1 {
				t.Fatalf("%d %s", res.StatusCode, body)
			}
			if res.Header.Get(proxy.HandoffStatusField) != "" {
				t.Fatal("a status for a refused reply")
			}
		})
	}
}

// NewEgress refuses a route whose handoff members do not go together.
func TestHandoffEgressConfig(t *testing.T) {
	d := startDomain(t)
	a1, src := d.workload(t, "/agent/a1")
	t1, _ := identifier.Parse("wimse://a.example/tool/t1")
	key, _ := keys.Generate(keys.ES256)
	base := func() proxy.EgressConfig {
		return proxy.EgressConfig{Self: a1, WIT: src, Responses: httpsig.NewVerifier(wit.NewValidator(d.trust)),
			TTS: &txntoken.Client{TokenEndpoint: d.ttsURL + tts.PathToken, WITSource: src, Proof: proof.WPT}, Subject: selfSigned(d, a1, src),
			HandoffKey: key, HandoffTrust: handoff.NewStaticTrust(),
			Routes: []proxy.Route{{Prefix: "/t1", Upstream: "http://127.0.0.1:1/mcp", TxnAudience: td, Delegate: t1, Host: hostproto.MCP}}}
	}
	if _, err := proxy.NewEgress(base()); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*proxy.EgressConfig){
		"no host":          func(c *proxy.EgressConfig) { c.Routes[0].Host = 0 },
		"host only":        func(c *proxy.EgressConfig) { c.Routes[0].Delegate = identifier.ID{} },
		"no Txn-Token":     func(c *proxy.EgressConfig) { c.Routes[0].TxnAudience = "" },
		"no handoff key":   func(c *proxy.EgressConfig) { c.HandoffKey = nil },
		"no handoff trust": func(c *proxy.EgressConfig) { c.HandoffTrust = nil },
		"across a boundary": func(c *proxy.EgressConfig) {
			c.Routes[0].Boundary = &proxy.BoundaryRoute{GrantEndpoint: d.ttsURL + tts.PathToken, PeerIssuer: "https://as.b.example", PeerTokenEndpoint: "http://127.0.0.1:2/token", PeerTrustDomain: "b.example"}
		},
	} {
		c := base()
		change(&c)
		if _, err := proxy.NewEgress(c); errcode.CodeOf(err) != errcode.InvalidRequest || name == "across a boundary" && !strings.Contains(err.Error(), "no handoff offers") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
