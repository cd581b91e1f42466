package adaptertest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/problem"
)

// The Recorder keeps the code of each refusal and leaves the body readable; an
// accepted response records nothing.
func TestRecorderKeepsTheRefusalCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			problem.Write(w, errcode.New(errcode.DialogMismatch, "another dialog"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	rec := &Recorder{}
	c := &http.Client{Transport: rec}
	res, err := c.Get(srv.URL + "/ok")
	MustOK(t, err)
	res.Body.Close()
	if got := rec.Last(); got != "" {
		t.Fatalf("after an accepted request: %q", got)
	}
	res, err = c.Get(srv.URL + "/refuse")
	MustOK(t, err)
	defer res.Body.Close()
	if got := rec.Last(); got != string(errcode.DialogMismatch) {
		t.Fatalf("recorded %q, want %s", got, errcode.DialogMismatch)
	}
	b := make([]byte, 1)
	if n, _ := res.Body.Read(b); n != 1 {
		t.Fatal("the refusal's body was consumed")
	}
}
