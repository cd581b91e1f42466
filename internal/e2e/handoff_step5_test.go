package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/proof"
)

// Handoff-context section 5.1 step 5 through the receiver middleware: the offer's dialog
// is compared with the dialog the message names, in Dialog-Context and in the host
// protocol (A2A contextId); the two must agree, and a message that names no dialog is
// refused, never let through unchecked.
func TestHandoffSec5_1_Step5_HostDialogIsCompared(t *testing.T) {
	h, atA2, dc := newHandoffFixture(t)
	ctx := context.Background()
	tokens := agent.Forwarded(atA2.TxnToken)
	message := func(contextID string) json.RawMessage {
		if contextID == "" {
			return taskMessage
		}
		return json.RawMessage(`{"role":"user","parts":[{"kind":"text","text":"book the hotel"}],"messageId":"m1","contextId":"` + contextID + `"}`)
	}
	offerFor := func(credential string) *handoff.Handoff {
		o, err := agent.OfferWithCredential(ctx, h.delegator, credential, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
		mustOK(t, err)
		return o
	}

	// With Dialog-Context D1: a contextId of D1 agrees; one of D2 does not.
	body, _ := agent.A2AMessageSend(1, message(dc.DLG()), offerFor(atA2.TxnToken))
	res, err := h.send(t, ctx, body, dc, tokens)
	mustOK(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("contextId equal to the Dialog-Context: status %d", res.StatusCode)
	}
	<-h.a3.seen
	body, _ = agent.A2AMessageSend(2, message("D2"), offerFor(atA2.TxnToken))
	res, err = h.send(t, ctx, body, dc, tokens)
	testkit.WantProblem(t, res, err, errcode.HandoffPolicy)

	// Without Dialog-Context (a bearer credential, no Txn-Token): the offer for D1 is
	// compared with the contextId, and refused without one.
	const bearer = "opaque-access-token"
	withoutContext := func(body []byte) (*http.Response, error) {
		req, err := http.NewRequest("POST", h.a3.url, bytes.NewReader(body))
		mustOK(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+bearer)
		return h.a.caller(h.a2.id, h.a2.src, nil, proof.HTTPSig, false).Client.Do(req)
	}
	body, _ = agent.A2AMessageSend(3, message("D2"), offerFor(bearer))
	res, err = withoutContext(body)
	wantRejected(t, h, res, err, handoff.ReasonPolicy)
	body, _ = agent.A2AMessageSend(4, message(""), offerFor(bearer))
	res, err = withoutContext(body)
	testkit.WantProblem(t, res, err, errcode.HandoffPolicy)
	body, _ = agent.A2AMessageSend(5, message(dc.DLG()), offerFor(bearer))
	res, err = withoutContext(body)
	mustOK(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("contextId equal to the offer's dialog, no Dialog-Context: status %d", res.StatusCode)
	}
	<-h.a3.seen
}
