package reqid

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(Header, "abc-123_x.y:z")
	if got := From(r); got != "abc-123_x.y:z" {
		t.Fatalf("well-formed id not kept: %q", got)
	}
	for _, bad := range []string{"", "a b", "a\nb", `{"x":1}`, strings.Repeat("a", MaxLength+1), "eyJ0eXAi/x+y="} {
		r.Header.Set(Header, bad)
		got := From(r)
		if got == bad || len(got) != 26 {
			t.Fatalf("%q: got %q, want a generated id", bad, got)
		}
	}
	r.Header.Del(Header)
	r.Header.Add(Header, "a")
	r.Header.Add(Header, "b")
	if got := From(r); got == "a" || got == "b" {
		t.Fatal("a duplicated field must not choose the id")
	}
	w := httptest.NewRecorder()
	r.Header.Del(Header)
	id := Set(w, r)
	if w.Header().Get(Header) != id || id == "" {
		t.Fatal("Set does not echo the id")
	}
}
