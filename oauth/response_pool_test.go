package oauth

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// WriteResponse writes exactly the document AppendJSON makes, whatever buffer the pool
// hands it: a long one after a short one, a short one after a long one, and one larger
// than the pool keeps; an earlier response is never overwritten by a later one.
func TestWriteResponseReusesNoVisibleBuffer(t *testing.T) {
	var recs []*httptest.ResponseRecorder
	var want []string
	for _, n := range []int{10, 3000, 5, 100 << 10, 7, 2000} {
		resp := &TokenResponse{AccessToken: strings.Repeat("a", n), IssuedTokenType: "urn:x", TokenType: "Bearer", ExpiresIn: 60, Scope: "s"}
		rec := httptest.NewRecorder()
		WriteResponse(rec, resp, resp.SizeHint())
		recs = append(recs, rec)
		want = append(want, string(resp.AppendJSON(nil)))
	}
	for i, rec := range recs {
		if got := rec.Body.String(); got != want[i] {
			t.Errorf("response %d: body %.40q..., want %.40q...", i, got, want[i])
		}
		if rec.Code != 200 || rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Pragma") != "no-cache" || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("response %d: status %d, header %v", i, rec.Code, rec.Header())
		}
	}
}

// The fields of a token response are those Header.Set writes, and changing one of
// them (Add, or in place) leaves the others, and the next response, alone.
func TestSetResponseHeader(t *testing.T) {
	want := http.Header{}
	want.Set("Cache-Control", "no-store")
	want.Set("Pragma", "no-cache")
	want.Set("Content-Type", "application/json")
	h := http.Header{}
	setResponseHeader(h)
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("header %v, want %v", h, want)
	}
	h.Add("Cache-Control", "private")
	h["Pragma"][0] = "changed"
	if h.Get("Content-Type") != "application/json" || len(h["Content-Type"]) != 1 || h["Cache-Control"][1] != "private" {
		t.Fatalf("one field reached another: %v", h)
	}
	next := http.Header{}
	setResponseHeader(next)
	if !reflect.DeepEqual(next, want) {
		t.Fatalf("next header %v, want %v", next, want)
	}
}
