package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
)

// Section 5: the initiator checks the context the server accepted. A successful answer
// that echoes no Dialog-Context (or a malformed one) is refused like one that echoes
// another context; the one that echoes the proposed context is accepted.
func TestDialogBindingSec5_StartChecksTheAcceptedContext(t *testing.T) {
	var echo func(h http.Header, proposed string)
	self := identifier.MustParse("wimse://a.example/agent/a1")
	proposed, _ := dialog.New("D1", self)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echo(w.Header(), proposed.Value())
	}))
	defer srv.Close()
	a := &agent.Agent{Self: self, Client: srv.Client()}
	for _, tc := range []struct {
		name string
		echo func(h http.Header, proposed string)
		want errcode.Code
	}{
		{"the proposed context", func(h http.Header, p string) { h.Set(dialog.HeaderName, p) }, ""},
		{"no context", func(http.Header, string) {}, errcode.DialogContextMismatch},
		{"another context", func(h http.Header, _ string) {
			h.Set(dialog.HeaderName, `dlg="other", initiator="wimse://a.example/agent/a1"`)
		}, errcode.DialogContextMismatch},
		{"a malformed context", func(h http.Header, _ string) { h.Set(dialog.HeaderName, `dlg=`) }, errcode.InvalidDialogContext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			echo = tc.echo
			req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
			res, dc, err := a.Start(context.Background(), req, "D1")
			if got := errcode.CodeOf(err); got != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if err == nil {
				res.Body.Close()
				if dc.DLG() != "D1" {
					t.Fatalf("dialog %s", dc.DLG())
				}
			}
		})
	}
}
