package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/proxy"
)

const mcpCancel = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user changed plans"}}`

// cancel sends body to the egress canceling hop in the dialog dlg ("" for none).
func (hp *handoffPair) cancel(t *testing.T, body, hop, dlg string) (*http.Response, []byte) {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set(proxy.HandoffCancelField, hop)
	if dlg != "" {
		h.Set(dialog.HeaderName, dlg)
	}
	return send(t, hp.egress.URL+"/t1", body, h)
}

// rpcErrorCode is the errcode of a JSON-RPC error reply, or of a problem document.
func rpcErrorCode(res *http.Response, b []byte) errcode.Code {
	var got struct {
		Error *struct {
			Data struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if res.Header.Get("Content-Type") == "application/json" && json.Unmarshal(b, &got) == nil && got.Error != nil {
		return errcode.Code(got.Error.Data.Code)
	}
	return errcode.CodeOf(problem.Read(res.StatusCode, b))
}

// Sections 4 and 6 (MCP): the agent cancels a hop the egress offered with the host's
// notifications/cancelled and the hop in HandoffCancelField; the egress signs the
// delegator's "canceled" status into params._meta, the ingress checks it with the core,
// records the hop as canceled at the delegate and tells the application which hop.
// A cancel the egress cannot make (a hop it never offered, another dialog, another
// request id) is refused before anything is sent.
func TestHandoffSection4MCPCancel(t *testing.T) {
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: mcpCancelApp})
	var sent atomic.Int32
	hp.tamper = func(*http.Request) { sent.Add(1) }
	res, body := hp.send(t, toolsCall, nil)
	hop := res.Header.Get(proxy.HandoffHopField)
	dc, err := dialog.FromHeader(res.Header)
	if res.StatusCode != 200 || hop == "" || err != nil || dc == nil || res.Header.Get(proxy.HandoffStatusField) != "accepted" {
		t.Fatalf("offer: %d %s %v (%v)", res.StatusCode, body, res.Header, err)
	}

	refused := []struct {
		name, body, hop, dlg string
		want                 errcode.Code
	}{
		{"a hop this egress never offered", mcpCancel, "AAAAAAAAAAAAAAAAAAAAAA", dc.Value(), errcode.HandoffOfferMismatch},
		{"no dialog", mcpCancel, hop, "", errcode.InvalidRequest},
		{"another request", strings.Replace(mcpCancel, `"requestId":7`, `"requestId":8`, 1), hop, dc.Value(), errcode.InvalidRequest},
		{"the request's id as a string", strings.Replace(mcpCancel, `"requestId":7`, `"requestId":"7"`, 1), hop, dc.Value(), errcode.InvalidRequest},
		{"not a cancel", toolsCall, hop, dc.Value(), errcode.InvalidRequest},
		{"not a hop identifier", mcpCancel, "a b", dc.Value(), errcode.InvalidRequest},
	}
	for _, tc := range refused {
		before := sent.Load()
		res, b := hp.cancel(t, tc.body, tc.hop, tc.dlg)
		if code := rpcErrorCode(res, b); code != tc.want || sent.Load() != before || hp.app.hits() != 1 {
			t.Fatalf("%s: %d %s (code %s, want %s), sent %d, application hits %d", tc.name, res.StatusCode, b, code, tc.want, sent.Load()-before, hp.app.hits())
		}
	}
	if rec, err := hp.hr.Lookup(context.Background(), hp.a1.String(), hop); err != nil || rec.State != string(handoff.StateAccepted) {
		t.Fatalf("the delegate's record after refused cancels: %+v (%v)", rec, err)
	}

	res, b := hp.cancel(t, mcpCancel, hop, dc.Value())
	if res.StatusCode != http.StatusAccepted || hp.app.hits() != 2 || res.Header.Get(proxy.HandoffHopField) != hop {
		t.Fatalf("cancel: %d %s %v, application hits %d", res.StatusCode, b, res.Header, hp.app.hits())
	}
	seen := hp.app.last()
	if seen.Header.Get(proxy.VerifiedHandoffCancelField) != hop || seen.Header.Get(proxy.VerifiedHandoffFromField) != hp.a1.String() ||
		seen.Header.Get(proxy.HandoffCancelField) != "" || seen.Header.Get(proxy.VerifiedHandoffField) != "" {
		t.Fatalf("the application was told %v", seen.Header)
	}
	vs := hp.forwardedCancelStatus(t, hop, handoff.MCPCancelStatus)
	if vs.Iss != hp.a1.String() || vs.Aud != hp.t1.String() {
		t.Fatalf("canceled status %+v", vs.Status)
	}
	rec, err := hp.hr.Lookup(context.Background(), hp.a1.String(), hop)
	if err != nil || rec.State != string(handoff.StateCanceled) || !rec.Offer.Equal(vs.Offer) {
		t.Fatalf("the delegate's record: %+v (%v)", rec, err)
	}
}

// JSON-RPC 2.0, section 5, and MCP's notifications/cancelled: the requestId names the
// request by its id's value, which the agent's JSON library may write its own way (7.0
// for 7): the cancel is still the offered hop's.
func TestHandoffSection4MCPCancelNamesTheRequestIDByValue(t *testing.T) {
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, app: mcpCancelApp})
	res, body := hp.send(t, toolsCall, nil)
	hop := res.Header.Get(proxy.HandoffHopField)
	dc, err := dialog.FromHeader(res.Header)
	if res.StatusCode != 200 || hop == "" || err != nil || dc == nil {
		t.Fatalf("offer: %d %s %v (%v)", res.StatusCode, body, res.Header, err)
	}
	res, b := hp.cancel(t, strings.Replace(mcpCancel, `"requestId":7`, `"requestId":7.0`, 1), hop, dc.Value())
	if res.StatusCode != http.StatusAccepted || hp.app.last().Header.Get(proxy.VerifiedHandoffCancelField) != hop {
		t.Fatalf("cancel: %d %s %v", res.StatusCode, b, res.Header)
	}
	if rec, err := hp.hr.Lookup(context.Background(), hp.a1.String(), hop); err != nil || rec.State != string(handoff.StateCanceled) {
		t.Fatalf("the delegate's record: %+v (%v)", rec, err)
	}
}

// Sections 4 and 6 (A2A 1.0): a CancelTask canceling an offered hop carries the
// delegator's "canceled" status in its params' metadata, with the extension listed;
// the application is told, and its reply comes back as it is: the core signs no status
// of the delegate for a cancel. A hop resolved by its verified reply ("completed")
// cannot be canceled (handoff.Delegator.Cancel): the agent gets the JSON-RPC error.
func TestHandoffSection4A2ACancelTask(t *testing.T) {
	const cancelTask = `{"jsonrpc":"2.0","id":"c1","method":"CancelTask","params":{"id":"t-1"}}`
	state := "TASK_STATE_WORKING"
	hp := newHandoffPair(t, handoffOptions{host: hostproto.A2A10, app: func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		dlg := r.Header.Get(proxy.VerifiedDialogField)
		if bytes.Contains(body, []byte(`"CancelTask"`)) {
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"c1","result":{"id":"t-1","contextId":"`+dlg+`","status":{"state":"TASK_STATE_CANCELED"}}}`)
			return
		}
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":"r1","result":{"task":{"id":"t-1","contextId":"`+dlg+`","status":{"state":"`+state+`"}}}}`)
	}})
	hop, dc := hp.acceptedOffer(t, a2a10Send)
	res, b := hp.cancel(t, cancelTask, hop, dc.Value())
	if res.StatusCode != 200 || hp.app.hits() != 2 || !strings.Contains(string(b), "TASK_STATE_CANCELED") {
		t.Fatalf("cancel: %d %s, application hits %d", res.StatusCode, b, hp.app.hits())
	}
	seen := hp.app.last()
	if seen.Header.Get(proxy.VerifiedHandoffCancelField) != hop || seen.Header.Get(proxy.VerifiedHandoffFromField) != hp.a1.String() {
		t.Fatalf("the application was told %v", seen.Header)
	}
	hp.mu.Lock()
	ext := hp.sent.Header.Get(hostproto.A2AExtensionsHeader)
	hp.mu.Unlock()
	if !strings.Contains(ext, handoff.A2AExtensionURI) {
		t.Fatalf("the cancel does not list the extension: %q", ext)
	}
	hp.forwardedCancelStatus(t, hop, handoff.A2ACancelStatus)
	if rec, err := hp.hr.Lookup(context.Background(), hp.a1.String(), hop); err != nil || rec.State != string(handoff.StateCanceled) {
		t.Fatalf("the delegate's record: %+v (%v)", rec, err)
	}
	if s, err := handoff.A2ATaskStatus(jsonResult(t, b)); err != nil || s != nil {
		t.Fatalf("a status in the reply to the cancel: %s (%v)", b, err)
	}

	state = "TASK_STATE_COMPLETED"
	res, body := hp.send(t, a2a10Send, map[string]string{proxy.StartDialogField: "", dialog.HeaderName: dc.Value()})
	done := res.Header.Get(proxy.HandoffHopField)
	if res.Header.Get(proxy.HandoffStatusField) != "completed" || done == "" {
		t.Fatalf("second offer: %d %s", res.StatusCode, body)
	}
	res, b = hp.cancel(t, cancelTask, done, dc.Value())
	checkRefusalForm(t, res, b, cancelTask, true)
	if code := rpcErrorCode(res, b); code != errcode.HandoffInvalidTransition || hp.app.hits() != 3 {
		t.Fatalf("cancel of a completed hop: %s, application hits %d", b, hp.app.hits())
	}
}

func jsonResult(t *testing.T, b []byte) json.RawMessage {
	t.Helper()
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	mustOK(t, json.Unmarshal(b, &env))
	return env.Result
}

// Section 5.6: a "canceled" status whose signature is changed between the proxies is
// refused by the ingress with the core's code; the application is not reached and the
// hop stays accepted at the delegate. The route uses WPTs, which do not cover the body,
// so that the handoff check is the one that fails.
func TestHandoffSection5_6TamperedCancelRefused(t *testing.T) {
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, method: proof.WPT, app: func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		mcpResult(w, "")
	}})
	hop, dc := hp.acceptedOffer(t, toolsCall)
	tampered := false
	hp.tamper = func(r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var env struct {
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(b, &env)
		if st, err := handoff.MCPCancelStatus(env.Params); err == nil && st != nil {
			parts := strings.Split(st.Text(), ".")
			sig := []byte(parts[2])
			if sig[5] == 'A' {
				sig[5] = 'B'
			} else {
				sig[5] = 'A'
			}
			parts[2] = string(sig)
			b = bytes.Replace(b, []byte(st.Text()), []byte(strings.Join(parts, ".")), 1)
			tampered = true
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
	res, b := hp.cancel(t, mcpCancel, hop, dc.Value())
	if code, ans := hp.ingressCode(); !tampered || code != errcode.HandoffBadSignature || hp.app.hits() != 1 {
		t.Fatalf("a tampered cancel: ingress %s %s, agent %d %s, application hits %d", code, ans, res.StatusCode, b, hp.app.hits())
	}
	if rec, err := hp.hr.Lookup(context.Background(), hp.a1.String(), hop); err != nil || rec.State != string(handoff.StateAccepted) {
		t.Fatalf("the delegate's record: %+v (%v)", rec, err)
	}
}

// An offer is remembered for its cancel for proxy.RememberedOfferTTL after it was
// sent: later, its cancel is refused as a hop the egress does not know, with nothing
// sent.
func TestHandoffCancelAfterTheOfferIsForgotten(t *testing.T) {
	clock := testkit.NewClock(time.Now())
	hp := newHandoffPair(t, handoffOptions{host: hostproto.MCP, now: clock.Now, app: func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		mcpResult(w, "")
	}})
	hop, dc := hp.acceptedOffer(t, toolsCall)
	var sent atomic.Int32
	hp.tamper = func(*http.Request) { sent.Add(1) }
	clock.Advance(proxy.RememberedOfferTTL)
	res, b := hp.cancel(t, mcpCancel, hop, dc.Value())
	if code := rpcErrorCode(res, b); code != errcode.HandoffOfferMismatch || sent.Load() != 0 || hp.app.hits() != 1 {
		t.Fatalf("a forgotten hop's cancel: %d %s, sent %d", res.StatusCode, b, sent.Load())
	}
}

// forwardedCancelStatus is the canceled status of hop that the delegate's ingress put
// in the cancel it forwarded (the application's second request), read from the
// request's params with status and verified.
func (hp *handoffPair) forwardedCancelStatus(t *testing.T, hop string, status func([]byte) (*handoff.Signed, error)) *handoff.VerifiedStatus {
	t.Helper()
	var req struct {
		Params json.RawMessage `json:"params"`
	}
	mustOK(t, json.Unmarshal([]byte(hp.app.body[1]), &req))
	st, err := status(req.Params)
	if err != nil || st == nil {
		t.Fatalf("no canceled status in %s (%v)", hp.app.body[1], err)
	}
	vs, err := handoff.VerifyStatusSignature(context.Background(), hp.trust, *st, 0)
	mustOK(t, err)
	if vs.State != handoff.StateCanceled || vs.Hop != hop {
		t.Fatalf("canceled status %+v", vs.Status)
	}
	return vs
}

// acceptedOffer sends body as a handoff offer that starts a dialog and returns the hop
// the delegate accepted and the dialog.
func (hp *handoffPair) acceptedOffer(t *testing.T, body string) (string, *dialog.Context) {
	t.Helper()
	res, b := hp.send(t, body, nil)
	dc, _ := dialog.FromHeader(res.Header)
	if res.Header.Get(proxy.HandoffStatusField) != "accepted" || dc == nil {
		t.Fatalf("offer: %d %s", res.StatusCode, b)
	}
	return res.Header.Get(proxy.HandoffHopField), dc
}

// mcpCancelApp is an MCP application that accepts notifications/cancelled and answers
// every other request with a result.
func mcpCancelApp(w http.ResponseWriter, _ *http.Request, body []byte) {
	if bytes.Contains(body, []byte("notifications/cancelled")) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	mcpResult(w, "")
}
