package authzen

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// fakePDP is an httptest PDP: metadata at the well-known URL of its identifier, an
// evaluation endpoint answering what answer returns, and counters.
type fakePDP struct {
	srv         *httptest.Server
	evaluations atomic.Int64
	metadata    atomic.Int64
	mu          sync.Mutex
	last        map[string]any // the last evaluation request, decoded
	answer      func(w http.ResponseWriter, req map[string]any)
	meta        func(w http.ResponseWriter, base string)
}

func newFakePDP(t testing.TB) *fakePDP {
	p := &fakePDP{}
	p.answer = func(w http.ResponseWriter, req map[string]any) {
		allow := req["action"].(map[string]any)["name"] == "read"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"decision": allow, "context": map[string]any{"reason_admin": map[string]string{"en": "policy C076E82F"}}})
	}
	p.meta = func(w http.ResponseWriter, base string) {
		_ = json.NewEncoder(w).Encode(Metadata{PolicyDecisionPoint: base, AccessEvaluationEndpoint: base + "/access/v1/evaluation"})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+WellKnownPath, func(w http.ResponseWriter, r *http.Request) {
		p.metadata.Add(1)
		p.meta(w, p.srv.URL)
	})
	mux.HandleFunc("POST /access/v1/evaluation", func(w http.ResponseWriter, r *http.Request) {
		p.evaluations.Add(1)
		if r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "content type", http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(b, &req); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.last = req
		p.mu.Unlock()
		p.answer(w, req)
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakePDP) lastRequest() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// newClock is the settable clock of the decision cache tests.
func newClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 1, 11, 12, 0, 0, 0, time.UTC))
}

func mustClient(t *testing.T, pdp string, opts ...Option) *Client {
	t.Helper()
	c, err := New(pdp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readReq(id, action string) *EvaluationRequest {
	return &EvaluationRequest{
		Subject:  Subject{Type: "workload", ID: id},
		Action:   Action{Name: action},
		Resource: Resource{Type: "tool", ID: "book"},
	}
}
