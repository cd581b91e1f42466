package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
)

// A carriage is how the offer rides in the request (handoff-context section 6): in an
// A2A message/send, in the params of an MCP tools/call, or as the bare Handoff JSON of
// a plain HTTP request read by an extractor of the integrator's own.
type carriage struct {
	name    string
	extract dialog.HandoffExtractor
	body    func(t *testing.T, h *handoff.Handoff) []byte
	jsonRPC bool
}

func plainHandoff(body []byte) (*handoff.Handoff, error) {
	if len(body) == 0 {
		return nil, nil
	}
	return handoff.ParseHandoffJSON(body, 0)
}

var carriages = []carriage{
	{name: "plain HTTP", extract: plainHandoff, body: func(t *testing.T, h *handoff.Handoff) []byte {
		b, err := h.MarshalJSON()
		mustOK(t, err)
		return b
	}},
	{name: "A2A", jsonRPC: true, body: func(t *testing.T, h *handoff.Handoff) []byte {
		b, err := agent.A2AMessageSend(7, taskMessage, h)
		mustOK(t, err)
		return b
	}},
	{name: "MCP", jsonRPC: true, body: func(t *testing.T, h *handoff.Handoff) []byte {
		params, err := handoff.PutMCPRequest([]byte(`{"name":"book_hotel","arguments":{}}`), h)
		mustOK(t, err)
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": json.RawMessage(params)})
		mustOK(t, err)
		return b
	}},
}

// newStatusFixture is newHandoffFixture with the carriage's extractor: A2 delegates to
// A3 in dialog D1, A3's receiver middleware checks the offer.
func newStatusFixture(t *testing.T, c carriage, extra ...dialog.ReceiverOption) (*handoffFixture, *dialog.Verified, *dialog.Context) {
	return newDelegateFixture(t, c.extract, 7, extra...)
}

// sendAs posts body to A3 in dc, signed by the workload (id, src) with Txn-Tokens from
// tokens (nil: none), and returns the HTTP status and the reply body.
func (h *handoffFixture) sendAs(t *testing.T, from *participant, tokens agent.TxnTokenSource, body []byte, dc *dialog.Context) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", h.a3.url, bytes.NewReader(body))
	mustOK(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := h.a.caller(from.id, from.src, tokens, proof.HTTPSig, false).Continue(context.Background(), req, dc, nil)
	mustOK(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	mustOK(t, err)
	return res.StatusCode, b
}

// rejectedOffer sends A3 an offer for dialog D2 in dialog D1, which A3 rejects at step
// 5 with reason policy (section 5.1), and returns the request body and the reply.
func rejectedOffer(t *testing.T, c carriage) (h *handoffFixture, atA2 *dialog.Verified, dc *dialog.Context, body []byte, code int, reply []byte) {
	h, atA2, dc = newStatusFixture(t, c)
	d2, err := dialog.New("D2", h.a2.id)
	mustOK(t, err)
	offer, err := agent.OfferWithCredential(context.Background(), h.delegator, atA2.TxnToken, d2, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
	mustOK(t, err)
	body = c.body(t, offer)
	code, reply = h.sendAs(t, h.a2, agent.Forwarded(atA2.TxnToken), body, dc)
	return h, atA2, dc, body, code, reply
}

// wantReplyShape checks the HTTP status and host protocol shape of a reply carrying a
// status: a JSON-RPC result on 200 echoing the request id, else the problem document
// of the refusal with its code.
func wantReplyShape(t *testing.T, c carriage, status int, reply []byte, code errcode.Code, httpStatus int) {
	t.Helper()
	if !c.jsonRPC {
		if status != httpStatus || errcode.CodeOf(problem.Read(status, reply)) != code {
			t.Fatalf("status %d body %s, want %d with code %s", status, reply, httpStatus, code)
		}
		return
	}
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}
	if status != http.StatusOK || json.Unmarshal(reply, &env) != nil || env.JSONRPC != "2.0" || string(env.ID) != "7" || len(env.Result) == 0 {
		t.Fatalf("status %d body %s, want a JSON-RPC result on 200 for id 7", status, reply)
	}
}

func noHandler(t *testing.T, h *handoffFixture) {
	t.Helper()
	select {
	case v := <-h.a3.seen:
		t.Fatalf("the handler ran for a refused offer (%+v)", v.Handoff)
	default:
	}
}

// Section 5.1 (with 6): a rejected offer's signed "rejected" status travels back in the
// host protocol's reply, and the delegator's reader finds and verifies it.
func TestHandoffSec5_1_RejectedStatusInReply(t *testing.T) {
	for _, c := range carriages {
		t.Run(c.name, func(t *testing.T) {
			h, _, dc, _, code, reply := rejectedOffer(t, c)
			noHandler(t, h)
			wantReplyShape(t, c, code, reply, errcode.HandoffPolicy, http.StatusForbidden)
			u := h.handledStatus(t, reply, "no status in the reply")
			if u.Status.State != handoff.StateRejected || u.Status.ReasonValue() != handoff.ReasonPolicy {
				t.Fatalf("status %s reason %s, want rejected policy", u.Status.State, u.Status.ReasonValue())
			}
			if c.name == "A2A" {
				var env struct {
					Result struct {
						Kind      string `json:"kind"`
						ContextID string `json:"contextId"`
					} `json:"result"`
				}
				mustOK(t, json.Unmarshal(reply, &env))
				if env.Result.Kind != "message" || env.Result.ContextID != dc.DLG() {
					t.Fatalf("A2A result %s, want a message in context %s", reply, dc.DLG())
				}
			}
			if c.name == "MCP" {
				var env struct {
					Result struct {
						IsError bool `json:"isError"`
					} `json:"result"`
				}
				mustOK(t, json.Unmarshal(reply, &env))
				if !env.Result.IsError {
					t.Fatalf("MCP result %s, want isError for a rejection", reply)
				}
			}
		})
	}
}

// Section 5.3: a retransmission from the delegator gets the identical octets of the
// last status, and the handler does not run again.
func TestHandoffSec5_3_RetransmissionGetsLastStatus(t *testing.T) {
	for _, c := range carriages {
		t.Run(c.name, func(t *testing.T) {
			h, atA2, dc, body, _, first := rejectedOffer(t, c)
			firstStatus, err := agent.HandoffStatus(first)
			if err != nil || firstStatus == nil {
				t.Fatalf("no status in the first reply (%v): %s", err, first)
			}
			code, again := h.sendAs(t, h.a2, agent.Forwarded(atA2.TxnToken), body, dc)
			noHandler(t, h)
			wantReplyShape(t, c, code, again, errcode.HandoffRetransmission, http.StatusUnauthorized)
			st, err := agent.HandoffStatus(again)
			if err != nil || st == nil {
				t.Fatalf("no status in the reply to the retransmission (%v): %s", err, again)
			}
			if !st.Equal(*firstStatus) {
				t.Fatalf("the resent status is not the identical octets:\n%s\n%s", st.Text(), firstStatus.Text())
			}
			if c.jsonRPC && !bytes.Equal(again, first) {
				t.Fatalf("the JSON-RPC reply to the retransmission differs:\n%s\n%s", again, first)
			}
		})
	}
}

// Section 8.4: a retransmission whose authenticated sender is not offer.iss gets no
// status, only the refusal.
func TestHandoffSec8_4_RetransmissionFromOtherSenderGetsNoStatus(t *testing.T) {
	for _, c := range carriages {
		t.Run(c.name, func(t *testing.T) {
			h, _, dc, body, _, first := rejectedOffer(t, c)
			if st, _ := agent.HandoffStatus(first); st == nil {
				t.Fatalf("no status in the first reply: %s", first)
			}
			code, reply := h.sendAs(t, h.a1, nil, body, dc)
			noHandler(t, h)
			if c.jsonRPC {
				wantJSONRPCRefusal(t, code, reply, "7", -32602, errcode.HandoffRetransmission, errcode.Failed)
			} else if code != http.StatusUnauthorized || errcode.CodeOf(problem.Read(code, reply)) != errcode.HandoffRetransmission {
				t.Fatalf("status %d body %s, want 401 handoff_retransmission", code, reply)
			}
			if st, err := agent.HandoffStatus(reply); st != nil || err != nil {
				t.Fatalf("a status (%v) went to a sender that is not offer.iss: %s", err, reply)
			}
		})
	}
}

// wantRejected checks that a JSON-RPC request carrying an offer was answered on 200 with
// the delegate's signed "rejected" status for reason (sections 5.1 and 6), which the
// delegator verifies.
func wantRejected(t *testing.T, h *handoffFixture, res *http.Response, err error, reason handoff.Reason) {
	t.Helper()
	mustOK(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	mustOK(t, err)
	st, err := agent.HandoffStatus(body)
	if res.StatusCode != http.StatusOK || err != nil || st == nil {
		t.Fatalf("status %d (%v) body %s, want a JSON-RPC result with a rejected status", res.StatusCode, err, body)
	}
	u, err := h.delegator.HandleStatus(context.Background(), *st)
	mustOK(t, err)
	if u.Status.State != handoff.StateRejected || u.Status.ReasonValue() != reason {
		t.Fatalf("status %s reason %s, want rejected %s", u.Status.State, u.Status.ReasonValue(), reason)
	}
}

// Section 5.1 with dialog-binding section 5: a refused offer in a request that would
// have established its dialog gets the refusal alone, for a reply echoing the
// Dialog-Context would tell the initiator the dialog was taken. Once the dialog exists,
// the rejected status travels back.
func TestHandoffSec5_1_RefusalOfAnEstablishingRequestCarriesNoStatus(t *testing.T) {
	for _, c := range carriages {
		t.Run(c.name, func(t *testing.T) {
			h, _, _ := newStatusFixture(t, c, dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())))
			d9, err := dialog.New("D9", h.a2.id)
			mustOK(t, err)
			offer := func() []byte {
				// The offer names no grant, which the receiver requires: rejected at
				// step 5, reason policy.
				o, err := h.delegator.Offer(context.Background(), handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String(), Dialog: "D9"}})
				mustOK(t, err)
				return c.body(t, o)
			}
			code, reply := h.sendAs(t, h.a2, nil, offer(), d9)
			noHandler(t, h)
			if c.jsonRPC {
				wantJSONRPCRefusal(t, code, reply, "7", -32602, errcode.HandoffGrantMismatch, errcode.Failed)
			} else if code != http.StatusForbidden || errcode.CodeOf(problem.Read(code, reply)) != errcode.HandoffGrantMismatch {
				t.Fatalf("status %d body %s, want 403 handoff_grant_mismatch", code, reply)
			}
			if st, err := agent.HandoffStatus(reply); st != nil || err != nil {
				t.Fatalf("a status (%v) in the refusal of an establishing request: %s", err, reply)
			}
			// The refused request took no dialog: the next one establishes it.
			if code, reply := h.sendAs(t, h.a2, nil, nil, d9); code != http.StatusOK {
				t.Fatalf("status %d body %s", code, reply)
			}
			if v := <-h.a3.seen; v.Outcome != dialog.Established {
				t.Fatalf("outcome %v, want the dialog established by the second request", v.Outcome)
			}
			code, reply = h.sendAs(t, h.a2, nil, offer(), d9)
			noHandler(t, h)
			wantReplyShape(t, c, code, reply, errcode.HandoffGrantMismatch, http.StatusForbidden)
			u := h.handledStatus(t, reply, "no status in the reply in an existing dialog")
			if u.Status.State != handoff.StateRejected {
				t.Fatalf("state %s, want rejected", u.Status.State)
			}
		})
	}
}
