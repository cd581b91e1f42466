package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/hostproto"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/store"
)

var taskMessage10 = json.RawMessage(`{"role":"ROLE_USER","parts":[{"text":"book the hotel"}],"messageId":"m1"}`)

// a2a10Body is an A2A 1.0 request of method carrying h in its message.
func a2a10Body(t *testing.T, method string, h *handoff.Handoff) []byte {
	t.Helper()
	msg, err := handoff.PutA2AMessage(taskMessage10, h)
	mustOK(t, err)
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": map[string]json.RawMessage{"message": msg}})
	mustOK(t, err)
	return b
}

// Section 6 (and 5.1): A2A 1.0 method names carry handoffs too. An offer in a
// SendMessage or SendStreamingMessage is checked like one in message/send: a rejected
// one never reaches the handler, and its "rejected" status comes back in the A2A 1.0
// result shape ({"message": ...} naming the dialog). Before, these methods were not
// read at all and the request went through with its handoff unchecked (fail-open).
func TestHandoffSec6_A2A10MethodsAreChecked(t *testing.T) {
	for _, method := range []string{"SendMessage", "SendStreamingMessage"} {
		t.Run(method, func(t *testing.T) {
			c := carriage{name: "A2A 1.0", jsonRPC: true, body: func(t *testing.T, h *handoff.Handoff) []byte { return a2a10Body(t, method, h) }}
			h, _, dc, _, code, reply := rejectedOffer(t, c)
			noHandler(t, h)
			wantReplyShape(t, c, code, reply, errcode.HandoffPolicy, http.StatusForbidden)
			var env struct {
				Result struct {
					Message struct {
						Role      string `json:"role"`
						ContextID string `json:"contextId"`
						MessageID string `json:"messageId"`
						Parts     []any  `json:"parts"`
					} `json:"message"`
				} `json:"result"`
			}
			mustOK(t, json.Unmarshal(reply, &env))
			if m := env.Result.Message; m.Role != "ROLE_AGENT" || m.ContextID != dc.DLG() || m.MessageID == "" || len(m.Parts) == 0 {
				t.Fatalf("A2A 1.0 result %s", reply)
			}
			u := h.handledStatus(t, reply, "no status in the reply")
			if u.Status.State != handoff.StateRejected {
				t.Fatalf("status %s", u.Status.State)
			}
		})
	}
}

// An accepted offer in an A2A 1.0 SendMessage reaches the handler with its decision.
func TestHandoffSec6_A2A10OfferAccepted(t *testing.T) {
	c := carriage{name: "A2A 1.0", jsonRPC: true}
	h, atA2, dc := newStatusFixture(t, c)
	tokens := agent.Forwarded(atA2.TxnToken)
	offer, _, err := agent.OfferInDialog(context.Background(), h.delegator, tokens, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
	mustOK(t, err)
	code, reply := h.sendAs(t, h.a2, tokens, a2a10Body(t, "SendMessage", offer), dc)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, reply)
	}
	v := <-h.a3.seen
	if v.Handoff == nil || v.Handoff.Outcome != handoff.OutcomeAccepted {
		t.Fatalf("handler saw %+v", v.Handoff)
	}
}

// Section 6: a handoff the receiver cannot place (in a request of a host or version it
// does not serve, under a method that carries none, in the wrong object, or in a body
// that is not a JSON-RPC request) is refused with handoff_unplaced, never skipped. A
// JSON-RPC request is refused with a JSON-RPC error naming its id, on 200, as its host
// protocol carries errors; a batch, which is not one request, with the problem document.
func TestHandoffSec6_UnplacedHandoffRefused(t *testing.T) {
	ctx := context.Background()
	only03 := dialog.WithHandoffsIn(handoff.NewReceiver("spiffe://a.example/agent/a3", handoff.NewStaticTrust(), store.NewMemoryRecords()), hostproto.A2A03)
	onlyMCP := dialog.WithHandoffsIn(handoff.NewReceiver("spiffe://a.example/agent/a3", handoff.NewStaticTrust(), store.NewMemoryRecords()), hostproto.MCP)
	cases := []struct {
		name string
		opts []dialog.ReceiverOption
		body func(t *testing.T, h *handoff.Handoff) []byte
	}{
		{"A2A 1.0 SendMessage at an A2A 0.3 receiver", []dialog.ReceiverOption{only03}, func(t *testing.T, h *handoff.Handoff) []byte {
			return a2a10Body(t, "SendMessage", h)
		}},
		{"A2A 0.3 message/send at an MCP receiver", []dialog.ReceiverOption{onlyMCP}, func(t *testing.T, h *handoff.Handoff) []byte {
			b, err := agent.A2AMessageSend(7, taskMessage, h)
			mustOK(t, err)
			return b
		}},
		{"MCP key in an A2A message's params", nil, func(t *testing.T, h *handoff.Handoff) []byte {
			v, _ := h.MetaValue()
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "message/send",
				"params": map[string]any{"message": taskMessage, "_meta": map[string]any{handoff.MCPMetaKey: v}}})
			return b
		}},
		{"A2A 0.3 tasks/get", nil, func(t *testing.T, h *handoff.Handoff) []byte {
			v, _ := h.MetaValue()
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tasks/get",
				"params": map[string]any{"id": "t1", "metadata": map[string]any{handoff.A2AExtensionURI: v}}})
			return b
		}},
		{"a JSON-RPC batch", nil, func(t *testing.T, h *handoff.Handoff) []byte {
			params, err := handoff.PutMCPRequest([]byte(`{"name":"book_hotel","arguments":{}}`), h)
			mustOK(t, err)
			b, _ := json.Marshal([]any{map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": json.RawMessage(params)}})
			return b
		}},
		{"an escaped key", nil, func(t *testing.T, h *handoff.Handoff) []byte {
			hj, _ := h.MarshalJSON()
			return []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"quantumlearningmachines.com/agent\u002dhandoff":` + string(hj) + `}}}`)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, atA2, dc := newStatusFixture(t, carriage{jsonRPC: true}, c.opts...)
			tokens := agent.Forwarded(atA2.TxnToken)
			offer, _, err := agent.OfferInDialog(ctx, h.delegator, tokens, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
			mustOK(t, err)
			body := c.body(t, offer)
			code, reply := h.sendAs(t, h.a2, tokens, body, dc)
			if body[0] == '[' {
				if code != http.StatusBadRequest || errcode.CodeOf(problem.Read(code, reply)) != errcode.HandoffUnplaced {
					t.Fatalf("status %d body %s, want 400 handoff_unplaced", code, reply)
				}
			} else {
				wantJSONRPCRefusal(t, code, reply, "7", -32602, errcode.HandoffUnplaced, errcode.Failed)
			}
			noHandler(t, h)
		})
	}
}

// Section 6 (with 5.6): a delegator's "canceled" status in the _meta of MCP
// notifications/cancelled is read as a status, not as an offer (it was refused as
// invalid_encoding), checked and recorded, and the cancel reaches the handler.
func TestHandoffSec6_MCPCancelIsAStatus(t *testing.T) {
	ctx := context.Background()
	c := carriages[2] // MCP
	h, atA2, dc := newStatusFixture(t, c)
	tokens := agent.Forwarded(atA2.TxnToken)
	offer, canceled := h.acceptedThenCanceled(ctx, t, tokens, dc, func(o *handoff.Handoff) []byte { return c.body(t, o) })
	params, err := handoff.PutMCPCancel([]byte(`{"requestId":7,"reason":"no longer needed"}`), canceled)
	mustOK(t, err)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": json.RawMessage(params)})
	h.cancelReached(t, tokens, dc, body, offer)
	// A cancel whose status does not verify is refused, not passed on.
	forged := handoff.Signed{Form: canceled.Form, Octets: append([]byte(nil), canceled.Octets...)}
	forged.Octets[len(forged.Octets)-3] ^= 1
	params, _ = handoff.PutMCPCancel([]byte(`{"requestId":7}`), forged)
	body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": json.RawMessage(params)})
	code, _ := h.sendAs(t, h.a2, tokens, body, dc)
	if code == http.StatusOK {
		t.Fatal("a cancel with a broken signature was passed on")
	}
	noHandler(t, h)
}

// acceptedThenCanceled has A2 send A3 an offer in the request body builds (the
// carriage under test), checks that A3's handler saw it accepted, and returns the offer
// and the delegator's "canceled" status of its hop.
func (h *handoffFixture) acceptedThenCanceled(ctx context.Context, t *testing.T, tokens agent.TxnTokenSource, dc *dialog.Context, body func(*handoff.Handoff) []byte) (*handoff.Handoff, handoff.Signed) {
	t.Helper()
	offer, _, err := agent.OfferInDialog(ctx, h.delegator, tokens, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
	mustOK(t, err)
	code, reply := h.sendAs(t, h.a2, tokens, body(offer), dc)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, reply)
	}
	v := <-h.a3.seen
	if v.Handoff == nil || v.Handoff.Outcome != handoff.OutcomeAccepted {
		t.Fatalf("offer: %+v", v.Handoff)
	}
	canceled, err := h.delegator.Cancel(ctx, v.Handoff.Offer.Hop)
	mustOK(t, err)
	return offer, canceled
}

// cancelReached has A2 send the cancel in body and checks that A3's handler got the
// checked "canceled" status of offer's hop.
func (h *handoffFixture) cancelReached(t *testing.T, tokens agent.TxnTokenSource, dc *dialog.Context, body []byte, offer *handoff.Handoff) {
	t.Helper()
	code, reply := h.sendAs(t, h.a2, tokens, body, dc)
	if code != http.StatusOK {
		t.Fatalf("cancel refused: %d %s", code, reply)
	}
	v := <-h.a3.seen
	if v.Cancel == nil || v.Cancel.Status.State != handoff.StateCanceled || !v.Cancel.Offer.Equal(offer.Offer.Digest()) {
		t.Fatalf("the handler did not get the checked cancel: %+v", v.Cancel)
	}
}

// Section 6 (with 5.6): a delegator's "canceled" status in the metadata of an A2A
// cancel (0.3 tasks/cancel, 1.0 CancelTask) is read as a status, checked and recorded,
// and the cancel reaches the handler.
func TestHandoffSec6_A2ACancelIsAStatus(t *testing.T) {
	for _, c := range []struct{ name, send, cancel string }{
		{"A2A 0.3", "message/send", "tasks/cancel"},
		{"A2A 1.0", "SendMessage", "CancelTask"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			h, atA2, dc := newStatusFixture(t, carriage{jsonRPC: true})
			tokens := agent.Forwarded(atA2.TxnToken)
			offer, canceled := h.acceptedThenCanceled(ctx, t, tokens, dc, func(o *handoff.Handoff) []byte { return a2a10Body(t, c.send, o) })
			params, err := handoff.PutA2ACancel([]byte(`{"id":"task-1"}`), canceled)
			mustOK(t, err)
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 8, "method": c.cancel, "params": json.RawMessage(params)})
			h.cancelReached(t, tokens, dc, body, offer)
		})
	}
}

// Section 5.1 step 5 in A2A 1.0: a SendMessage whose message names another contextId
// than its Dialog-Context dlg is refused with handoff_policy, and the handler never runs.
func TestHandoffSec5_1_A2A10WrongContextIDRefused(t *testing.T) {
	h, atA2, dc := newStatusFixture(t, carriage{jsonRPC: true})
	tokens := agent.Forwarded(atA2.TxnToken)
	offer, _, err := agent.OfferInDialog(context.Background(), h.delegator, tokens, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
	mustOK(t, err)
	msg, err := handoff.PutA2AMessage(json.RawMessage(`{"role":"ROLE_USER","parts":[{"text":"x"}],"messageId":"m1","contextId":"another-dialog"}`), offer)
	mustOK(t, err)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": map[string]json.RawMessage{"message": msg}})
	code, reply := h.sendAs(t, h.a2, tokens, body, dc)
	wantJSONRPCRefusal(t, code, reply, "7", -32602, errcode.HandoffPolicy, errcode.Failed)
	noHandler(t, h)
}

// wantJSONRPCRefusal checks the refusal of a JSON-RPC request: a JSON-RPC 2.0 error
// response on 200 that echoes the request's id, with the JSON-RPC code and, in its
// data, the stable code and kind (which problem.Read recovers too).
func wantJSONRPCRefusal(t *testing.T, status int, reply []byte, id string, rpcCode int, code errcode.Code, kind errcode.Kind) {
	t.Helper()
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
				Kind string `json:"kind"`
			} `json:"data"`
		} `json:"error"`
	}
	if status != http.StatusOK || json.Unmarshal(reply, &r) != nil || r.JSONRPC != "2.0" || string(r.ID) != id || r.Result != nil || r.Error == nil {
		t.Fatalf("status %d body %s, want a JSON-RPC error for id %s on 200", status, reply, id)
	}
	if r.Error.Code != rpcCode || r.Error.Data.Code != string(code) || r.Error.Data.Kind != kind.String() || r.Error.Message == "" {
		t.Fatalf("error %+v, want %d with %s (%s)", *r.Error, rpcCode, code, kind)
	}
	if back := problem.Read(status, reply); errcode.CodeOf(back) != code || errcode.KindOf(back) != kind {
		t.Fatalf("problem.Read: %v", back)
	}
}
