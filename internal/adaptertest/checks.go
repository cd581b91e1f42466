package adaptertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/handoff"
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

// SwapsDialog is a Recorder edit that replaces, after signing, the Dialog-Context of
// every request that carries one with other's: tampering the signature must catch.
func SwapsDialog(other *dialog.Context) func(*http.Request) {
	return func(r *http.Request) {
		if r.Header.Get(dialog.HeaderName) != "" {
			r.Header.Set(dialog.HeaderName, other.Value())
		}
	}
}
