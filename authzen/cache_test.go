package authzen

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The decision cache: a decision (allow or deny) is served until its TTL has passed on
// the injected clock, then the PDP is asked again; an error is never cached.
func TestCacheExpiry(t *testing.T) {
	p := newFakePDP(t)
	clk := newClock()
	c := mustClient(t, p.srv.URL, WithClock(clk.Now), WithCache(100, time.Minute))
	ctx := context.Background()
	ask := func(action string, wantAllow bool, wantEvaluations int64) {
		t.Helper()
		d, err := c.Evaluate(ctx, readReq("w", action))
		if err != nil || d.Allow != wantAllow || p.evaluations.Load() != wantEvaluations {
			t.Fatalf("%s: %+v %v, evaluations %d, want %d", action, d, err, p.evaluations.Load(), wantEvaluations)
		}
	}
	ask("read", true, 1)
	ask("read", true, 1)
	ask("write", false, 2)
	ask("write", false, 2)
	clk.Advance(time.Minute - time.Nanosecond)
	ask("read", true, 2)
	clk.Advance(time.Nanosecond)
	ask("read", true, 3) // expired: asked again
	ask("write", false, 4)

	// A PDP that changes its mind is heard once the entry expires.
	p.answer = func(w http.ResponseWriter, _ map[string]any) { _, _ = w.Write([]byte(`{"decision":false}`)) }
	ask("read", true, 4)
	clk.Advance(time.Minute)
	ask("read", false, 5)

	// Errors are not cached.
	p.answer = func(w http.ResponseWriter, _ map[string]any) { w.WriteHeader(http.StatusInternalServerError) }
	clk.Advance(time.Minute)
	for i := range 2 {
		if _, err := c.Evaluate(ctx, readReq("w", "read")); err == nil || p.evaluations.Load() != int64(6+i) {
			t.Fatalf("error cached: %v, evaluations %d", err, p.evaluations.Load())
		}
	}
}

// The cache is bounded: the least recently used entry goes first.
func TestCacheBounded(t *testing.T) {
	p := newFakePDP(t)
	clk := newClock()
	c := mustClient(t, p.srv.URL, WithClock(clk.Now), WithCache(3, time.Hour))
	ctx := context.Background()
	for i := range 10 {
		if _, err := c.Evaluate(ctx, readReq(fmt.Sprint("w", i), "read")); err != nil {
			t.Fatal(err)
		}
	}
	if c.CacheLen() != 3 {
		t.Fatalf("cache holds %d", c.CacheLen())
	}
	n := p.evaluations.Load()
	_, _ = c.Evaluate(ctx, readReq("w9", "read")) // cached
	_, _ = c.Evaluate(ctx, readReq("w0", "read")) // evicted long ago
	if p.evaluations.Load() != n+1 {
		t.Fatalf("evaluations %d, want %d", p.evaluations.Load(), n+1)
	}
}

// The cache key covers every input that decides: a change to any member of subject,
// action, resource or context is a new question for the PDP.
func TestCacheKeyCoversEveryInput(t *testing.T) {
	p := newFakePDP(t)
	c := mustClient(t, p.srv.URL, WithCache(100, time.Hour))
	base := func() *EvaluationRequest {
		return &EvaluationRequest{
			Subject:  Subject{Type: "workload", ID: "w", Properties: map[string]any{"trust_domain": "a.example"}},
			Action:   Action{Name: "read", Properties: map[string]any{"method": "POST"}},
			Resource: Resource{Type: "tool", ID: "book", Properties: map[string]any{"path": "/mcp"}},
			Context:  map[string]any{"dialog": "d-1", "txn": map[string]any{"sub": "alice"}},
		}
	}
	changes := []func(r *EvaluationRequest){
		func(r *EvaluationRequest) {},
		func(r *EvaluationRequest) { r.Subject.Type = "user" },
		func(r *EvaluationRequest) { r.Subject.ID = "w2" },
		func(r *EvaluationRequest) { obj(r.Subject.Properties)["trust_domain"] = "b.example" },
		func(r *EvaluationRequest) { r.Action.Name = "read2" },
		func(r *EvaluationRequest) { obj(r.Action.Properties)["method"] = "GET" },
		func(r *EvaluationRequest) { r.Resource.Type = "skill" },
		func(r *EvaluationRequest) { r.Resource.ID = "cancel" },
		func(r *EvaluationRequest) { obj(r.Resource.Properties)["path"] = "/other" },
		func(r *EvaluationRequest) { obj(r.Context)["dialog"] = "d-2" },
		func(r *EvaluationRequest) { obj(r.Context)["txn"] = map[string]any{"sub": "bob"} },
		func(r *EvaluationRequest) { obj(r.Context)["linked_from"] = "d-0" },
	}
	for i, change := range changes {
		r := base()
		change(r)
		if _, err := c.Evaluate(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if p.evaluations.Load() != int64(i+1) {
			t.Fatalf("change %d answered from the cache", i)
		}
	}
	if _, err := c.Evaluate(context.Background(), base()); err != nil || p.evaluations.Load() != int64(len(changes)) {
		t.Fatal("the same request was not cached")
	}
}

func obj(v any) map[string]any { return v.(map[string]any) }
