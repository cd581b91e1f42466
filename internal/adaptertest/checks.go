package adaptertest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// Serve starts h on loopback with path appended to its URL, recording every request
// as it arrived in s before h sees it. The server stops when t's test ends.
func Serve(t *testing.T, s *Seen, path string, h func(url string) http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String() + path
	next := h(url)
	srv.Config.Handler = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.Header(r)
		next.ServeHTTP(rw, r)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return url
}

// WantCompleted verifies the hotel's signed status st with the planner's delegator and
// requires "completed", resolving the hop.
func (w *World) WantCompleted(t *testing.T, st handoff.Signed) *handoff.StatusUpdate {
	t.Helper()
	u, err := w.Delegator.HandleStatus(context.Background(), st)
	MustOK(t, err)
	if u.Status.State != handoff.StateCompleted || !u.Hop.Resolved {
		t.Fatalf("status %s, hop %+v", u.Status.State, u.Hop)
	}
	return u
}

// WantCanceledAtBothEnds requires the hop of the offer in h to be canceled at the
// hotel's handoff receiver (the status travelled with the cancel) and at the planner's
// delegator.
func (w *World) WantCanceledAtBothEnds(t *testing.T, h *handoff.Handoff) {
	t.Helper()
	o, err := handoff.DecodeOffer(h.Offer)
	MustOK(t, err)
	rec, err := w.HandoffReceiver.Lookup(context.Background(), w.Planner.ID.String(), o.Hop)
	MustOK(t, err)
	if handoff.State(rec.State) != handoff.StateCanceled {
		t.Fatalf("the hop is %q at the delegate, want canceled (the status travelled with the cancel)", rec.State)
	}
	if hs, _ := w.Delegator.State(o.Hop); hs.State != handoff.StateCanceled {
		t.Fatalf("delegator's hop %+v", hs)
	}
}

// TamperedDialog is a dialog of the planner and a Recorder that, as an intermediary
// would after the planner signed, puts another dialog of the planner's in the
// Dialog-Context of every request (dialog-binding section 7).
func (w *World) TamperedDialog(tb testing.TB) (*dialog.Context, *Recorder) {
	tb.Helper()
	dc := NewDialog(tb, w.Planner.ID)
	return dc, &Recorder{Edit: SwapsDialog(NewDialog(tb, w.Planner.ID))}
}

// SwapsDialog is a Recorder edit that replaces, after signing, the Dialog-Context of
// every request that carries one with other's: tampering the signature must catch.
func SwapsDialog(other *dialog.Context) func(*http.Request) {
	return func(r *http.Request) {
		if r.Header.Get(dialog.HeaderName) != "" {
			r.Header.Set(dialog.HeaderName, other.Value())
		}
	}
}

// WantOfferTaken requires the work to have run once, seeing what the receiver verified
// of the planner's request in dc with the accepted offer in h, and every HTTP request
// s saw to be proved in dc (signed, with its Dialog-Context and a Txn-Token). It
// returns those requests' header fields for the protocol's own checks.
func (w *World) WantOfferTaken(t *testing.T, s *Seen, dc *dialog.Context, h *handoff.Handoff) []http.Header {
	t.Helper()
	requests, calls := s.Snapshot()
	if len(calls) != 1 {
		t.Fatalf("the work ran %d times", len(calls))
	}
	v := calls[0]
	if v == nil || !v.Sender.Equal(w.Planner.ID) || v.Context == nil || v.Context.DLG() != dc.DLG() || v.Txn == nil || v.Txn.Dialog() != dc.DLG() {
		t.Fatalf("the work saw %+v", v)
	}
	if v.Handoff == nil || v.Handoff.Outcome != handoff.OutcomeAccepted || !v.Handoff.Offer.Signed.Equal(h.Offer) {
		t.Fatalf("the work saw the decision %+v", v.Handoff)
	}
	for i, hd := range requests {
		if hd.Get("Signature-Input") == "" || hd.Get(dialog.HeaderName) != dc.Value() || hd.Get(txntoken.HeaderName) == "" {
			t.Fatalf("HTTP request %d was not proved in the dialog: %v", i, hd)
		}
	}
	return requests
}

// WantRuns requires the work to have run n times.
func (s *Seen) WantRuns(t *testing.T, n int) {
	t.Helper()
	if got := s.Count(); got != n {
		t.Fatalf("the work ran %d times, want %d", got, n)
	}
}

// WantRefusedBeforeWork requires a request to have reached the server and been refused
// there with a problem code (rec), before the work ran.
func WantRefusedBeforeWork(t *testing.T, rec *Recorder, s *Seen) {
	t.Helper()
	if got := rec.Last(); got == "" {
		t.Fatal("no refusal with a code")
	}
	if requests, _ := s.Snapshot(); len(requests) == 0 {
		t.Fatal("the request never reached the server")
	}
	s.WantRuns(t, 0)
}

// WantNoHTTPError requires no HTTP error status to have come back: a refusal at the
// handoff step is the call's JSON-RPC error, not a 4xx.
func (r *Recorder) WantNoHTTPError(t *testing.T) {
	t.Helper()
	if got := r.Last(); got != "" {
		t.Fatalf("an HTTP error status came back (%q)", got)
	}
}

// Blocking is work that runs until its context ends (or 30 seconds pass), for the
// tests of a cancel.
type Blocking struct {
	Started chan struct{} // closed when the work starts
	Stopped chan error    // the context's error when it ended, nil at the timeout
}

// NewBlocking is work not yet started.
func NewBlocking() *Blocking {
	return &Blocking{Started: make(chan struct{}), Stopped: make(chan error, 1)}
}

// Run is the work: it returns ctx's error once ctx ends.
func (b *Blocking) Run(ctx context.Context) error {
	close(b.Started)
	select {
	case <-ctx.Done():
		b.Stopped <- ctx.Err()
		return ctx.Err()
	case <-time.After(30 * time.Second):
		b.Stopped <- nil
		return nil
	}
}

// WantCanceled requires the work to have stopped because its context was canceled.
func (b *Blocking) WantCanceled(t *testing.T) {
	t.Helper()
	select {
	case err := <-b.Stopped:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the work was not canceled: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancel never reached the work")
	}
}
