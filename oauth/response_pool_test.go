package oauth

import (
	"net/http/httptest"
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
