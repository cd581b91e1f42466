package e2e

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/handoff"
)

// Sections 5.2, 5.3 and 8.4 through the dialog middleware (issue 22): a workload that
// is not the offer's iss gets hold of A2's offer and sends it to A3 first, in a request
// it signs itself, with its own Txn-Token. The refusal binds nothing and carries no
// status; A2's own request with the same octets is then accepted. Before, the first
// refusal was recorded as the hop's, and A2 got it back.
func TestHandoffSec5_2_LeakedOfferSentFirstByAnotherWorkload(t *testing.T) {
	for _, c := range carriages {
		for _, own := range []bool{true, false} {
			name := c.name + "/the dialog's Txn-Token"
			if own {
				name = c.name + "/a Txn-Token of its own"
			}
			t.Run(name, func(t *testing.T) { leakedOfferSentFirst(t, c, own) })
		}
	}
}

// leakedOfferSentFirst has A1 (in this figure the workload that obtained the dialog's
// Txn-Token, which A2 forwards) send A2's offer to A3 before A2 does: with that
// Txn-Token, which the grant names (the copy was accepted before), or with another
// one of its own (the copy was refused and its refusal recorded for A2's hop before).
func leakedOfferSentFirst(t *testing.T, c carriage, own bool) {
	h, atA2, dc := newStatusFixture(t, c)
	tokens := agent.Forwarded(atA2.TxnToken)
	offer, _, err := agent.OfferInDialog(context.Background(), h.delegator, tokens, dc, handoff.OfferRequest{Offer: handoff.Offer{Aud: h.a3.id.String()}})
	mustOK(t, err)
	body := c.body(t, offer)

	var strangerTokens agent.TxnTokenSource = tokens
	if own {
		src := agent.NewTTSSource(h.a.ttsClient(h.a1.src), "a.example", "trip.book", h.a.selfSigned(h.a1.id, h.a1.src), time.Now)
		tok, err := src.TxnToken(context.Background(), dc.DLG())
		mustOK(t, err)
		if tok == atA2.TxnToken {
			t.Fatal("expected a distinct token")
		}
		strangerTokens = agent.Forwarded(tok)
	}
	code, reply := h.sendAs(t, h.a1, strangerTokens, body, dc)
	noHandler(t, h)
	if c.jsonRPC {
		wantJSONRPCRefusal(t, code, reply, "7", -32602, errcode.HandoffSenderNotIssuer, errcode.Failed)
	} else if code != http.StatusForbidden || !bytes.Contains(reply, []byte(errcode.HandoffSenderNotIssuer)) {
		t.Fatalf("status %d body %s, want 403 %s", code, reply, errcode.HandoffSenderNotIssuer)
	}
	if st, err := agent.HandoffStatus(reply); st != nil || err != nil {
		t.Fatalf("a status (%v) went to the workload that is not the offer's iss: %s", err, reply)
	}

	code, reply = h.sendAs(t, h.a2, tokens, body, dc)
	if code != http.StatusOK || bytes.Contains(reply, []byte(`"error"`)) {
		t.Fatalf("A2's own copy: status %d %s", code, reply)
	}
	if v := <-h.a3.seen; v.Handoff == nil || v.Handoff.Outcome != handoff.OutcomeAccepted {
		t.Fatalf("A2's own copy: handler saw %+v", v.Handoff)
	}
}
