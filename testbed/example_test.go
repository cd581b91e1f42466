package testbed_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/testbed"
)

// A dialog linked from a.example to b.example over plain HTTP (Figure 5): the planner's
// first request to the hotel links the dialog, the second goes in it; the hotel's
// receiver verifies the planner's WIT and signature, and its LinkAcceptor the access
// token, which TTS B exchanges for a Txn-Token of b.example recording the dialog.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	world, err := testbed.Start(ctx)
	if err != nil {
		panic(err)
	}
	defer world.Close()
	a, b := world.A, world.B
	planner, hotel := a.Workload("/agent/planner"), b.Workload("/service/hotel")

	wits := testbed.WITs(ctx, a, b) // both sides trust both WIT issuers
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + "/book"
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(url), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())),
		testbed.SignsResponses(hotel),
	)
	if err != nil {
		panic(err)
	}
	acceptor := b.LinkAcceptor(ctx, hotel)
	srv.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, txn, err := acceptor.Accept(r.Context(), dialog.FromRequest(r), r.Header)
		if err != nil {
			http.Error(w, string(errcode.CodeOf(err)), http.StatusForbidden)
			return
		}
		fmt.Fprintf(w, "booked for %s", txn.Sub)
	}))
	srv.Start()
	defer srv.Close()

	txnA, err := a.TxnToken(ctx, planner, "alice@a.example", testbed.Scope, agent.NewDialogID())
	if err != nil {
		panic(err)
	}
	lc := world.Link(planner, txnA, wits, func(l *agent.Linked, t *agent.Transport) (http.RoundTripper, error) {
		return inDialog{l.Dialog, t}, nil
	})
	client := &http.Client{Transport: lc}
	for _, step := range []string{"linked", "in the linked dialog"} {
		res, err := client.Post(url, "text/plain", nil)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Printf("%s: %d %s\n", step, res.StatusCode, body)
	}
	// Output:
	// linked: 200 booked for a.example:alice@a.example
	// in the linked dialog: 200 booked for a.example:alice@a.example
}

// inDialog sends each request in the dialog dc.
type inDialog struct {
	dc   *dialog.Context
	next http.RoundTripper
}

func (t inDialog) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(r.Clone(agent.WithDialog(r.Context(), t.dc)))
}
