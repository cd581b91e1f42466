package dialog_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/proof"
)

// Section 12: a receiver without a Txn-Token verifier, or without a provenance
// verifier, could not perform that check. The request is refused, and the refusal says
// the check could not be completed (503), not that the sender's credential failed.
func TestDialogBindingSec12_MissingVerifierCouldNotComplete(t *testing.T) {
	f := newFigure3(t)
	ctx := context.Background()
	// A real provenance record: A1 starts D1 at A2, A2 forwards.
	tok := f.txnToken(t, "D1", "a.example")
	res, dc, err := f.agent(f.a1, agent.Forwarded(tok), proof.HTTPSig).Start(ctx, post(t, f.a2Srv.URL+"/task"), "D1")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	prov, err := (<-f.seen).Forward()
	if err != nil {
		t.Fatal(err)
	}

	aud := f.toolSrv.URL + "/invoke"
	rc, err := dialog.NewReceiver(dialog.WithHTTPSignatures(httpsig.NewVerifier(f.d.Validator(), httpsig.WithAudiences(aud), httpsig.WithClock(f.clock.Now))))
	if err != nil {
		t.Fatal(err)
	}
	f.toolSrv.Config.Handler = rc.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the handler ran although a check could not be performed")
	}))
	for _, tc := range []struct {
		name   string
		tokens agent.TxnTokenSource
		prov   *dialog.Provenance
		code   errcode.Code
	}{
		{"Txn-Token without a verifier", agent.Forwarded(tok), nil, errcode.UntrustedIssuer},
		{"provenance without a verifier", nil, prov, errcode.InvalidProvenance},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := f.agentLax(f.a2, tc.tokens, proof.HTTPSig).Continue(ctx, post(t, aud), dc, tc.prov)
			testkit.WantProblem(t, res, err, tc.code)
			if res.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503", res.StatusCode)
			}
		})
	}
}
