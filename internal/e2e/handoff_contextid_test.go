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
)

// Section 5.1 step 5 behind an extractor named by the integrator (dialog.WithHandoffs
// with a non-nil extractor, dialog.JSONRPCHandoff among them): the contextId of the A2A
// message that carries the offer is the message's dialog too, and must agree with the
// Dialog-Context dlg, in A2A 0.3 and 1.0. Before issue 22 this path was tested only
// with plain-HTTP bodies, so an extractor path that never read the contextId would
// have let the offer through. A message whose contextId is the dlg is accepted, so the
// refusal is the contextId's doing.
func TestHandoffSec5_1_ExtractorPathComparesContextID(t *testing.T) {
	own := func(body []byte) (*handoff.Handoff, error) { return dialog.JSONRPCHandoff(body) }
	extractors := []struct {
		name string
		fn   dialog.HandoffExtractor
	}{{"JSONRPCHandoff", dialog.JSONRPCHandoff}, {"own", own}}
	versions := []struct {
		name, method string
		message      func(contextID string) json.RawMessage
	}{
		{"A2A 0.3", "message/send", func(c string) json.RawMessage {
			b, _ := json.Marshal(map[string]any{"role": "user", "parts": []any{map[string]any{"kind": "text", "text": "x"}}, "messageId": "m1", "contextId": c})
			return b
		}},
		{"A2A 1.0", "SendMessage", func(c string) json.RawMessage {
			b, _ := json.Marshal(map[string]any{"role": "ROLE_USER", "parts": []any{map[string]any{"text": "x"}}, "messageId": "m1", "contextId": c})
			return b
		}},
	}
	for _, ex := range extractors {
		for _, v := range versions {
			t.Run(ex.name+"/"+v.name, func(t *testing.T) {
				h, atA2, dc := newStatusFixture(t, carriage{extract: ex.fn})
				tokens := agent.Forwarded(atA2.TxnToken)
				send := func(contextID string) (int, []byte) {
					offer, _, err := agent.OfferInDialog(context.Background(), h.delegator, tokens, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
					mustOK(t, err)
					msg, err := handoff.PutA2AMessage(v.message(contextID), offer)
					mustOK(t, err)
					body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": v.method, "params": map[string]json.RawMessage{"message": msg}})
					mustOK(t, err)
					return h.sendAs(t, h.a2, tokens, body, dc)
				}
				code, reply := send("another-dialog")
				wantJSONRPCRefusal(t, code, reply, "7", -32602, errcode.HandoffPolicy, errcode.Failed)
				noHandler(t, h)

				if code, reply := send(dc.DLG()); code != http.StatusOK {
					t.Fatalf("contextId = dlg: status %d %s", code, reply)
				}
				if v := <-h.a3.seen; v.Handoff == nil || v.Handoff.Outcome != handoff.OutcomeAccepted {
					t.Fatalf("contextId = dlg: handler saw %+v", v.Handoff)
				}
			})
		}
	}
}
