package reqid

import (
	"net/http"
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

// A generated identifier has crypto/rand.Text's form (26 characters of the RFC 4648
// base32 alphabet), differs from request to request, and is the response's one
// X-Request-Id; a given one is echoed as it came.
func TestSetGenerated(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		w := httptest.NewRecorder()
		id := Set(w, httptest.NewRequest("GET", "/", nil))
		if len(id) != generatedLength || strings.Trim(id, base32Alphabet) != "" || seen[id] {
			t.Fatalf("generated id %q", id)
		}
		seen[id] = true
		if v := w.Header().Values(Header); len(v) != 1 || v[0] != id {
			t.Fatalf("response field %v for %q", v, id)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(Header, "given-1")
	w := httptest.NewRecorder()
	if id := Set(w, r); id != "given-1" || w.Header().Get(Header) != "given-1" || len(w.Header().Values(Header)) != 1 {
		t.Fatalf("given id: %q, field %v", id, w.Header().Values(Header))
	}
}

// Set costs one allocation beside the response's header map, with a given identifier
// or a generated one.
func TestSetAllocations(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	h := http.Header{}
	w := headerOnly{h}
	for _, given := range []bool{false, true} {
		if given {
			r.Header.Set(Header, "given-1")
		}
		Set(w, r) // the map's first entry
		if n := testing.AllocsPerRun(100, func() { Set(w, r) }); n != 1 {
			t.Errorf("given %v: %v allocations", given, n)
		}
	}
}

type headerOnly struct{ h http.Header }

func (w headerOnly) Header() http.Header       { return w.h }
func (headerOnly) Write(b []byte) (int, error) { return len(b), nil }
func (headerOnly) WriteHeader(int)             {}
