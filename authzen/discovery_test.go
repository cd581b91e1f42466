package authzen

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Section 9: the metadata URL inserts the well-known string between the host and the
// path of the PDP identifier.
func TestAuthZEN9_MetadataURL(t *testing.T) {
	for pdp, want := range map[string]string{
		"https://pdp.example":               "https://pdp.example/.well-known/authzen-configuration",
		"https://pdp.example/":              "https://pdp.example/.well-known/authzen-configuration",
		"https://pdp.example:8443/tenant/1": "https://pdp.example:8443/.well-known/authzen-configuration/tenant/1",
	} {
		if got, err := MetadataURL(pdp); err != nil || got != want {
			t.Errorf("MetadataURL(%q) = %q, %v; want %q", pdp, got, err, want)
		}
	}
}

// Section 9: the evaluation endpoint is discovered from the metadata, which is used
// only when its policy_decision_point is the configured identifier, and is fetched
// again after its lifetime (injected clock).
func TestAuthZEN9_Discovery(t *testing.T) {
	p := newFakePDP(t)
	clk := newClock()
	c := mustClient(t, p.srv.URL, WithClock(clk.Now), WithMetadataTTL(time.Hour))
	ctx := context.Background()
	for range 3 {
		if d, err := c.Evaluate(ctx, readReq("w", "read")); err != nil || !d.Allow {
			t.Fatalf("%+v %v", d, err)
		}
	}
	if p.metadata.Load() != 1 || p.evaluations.Load() != 3 {
		t.Fatalf("metadata %d, evaluations %d", p.metadata.Load(), p.evaluations.Load())
	}
	clk.Advance(time.Hour)
	if _, err := c.Evaluate(ctx, readReq("w", "read")); err != nil || p.metadata.Load() != 2 {
		t.Fatalf("metadata not fetched again after its lifetime: %d %v", p.metadata.Load(), err)
	}

	// The discovered endpoint is the one asked, wherever the metadata points.
	other := newFakePDP(t)
	p.meta = func(w http.ResponseWriter, base string) {
		_ = json.NewEncoder(w).Encode(Metadata{PolicyDecisionPoint: base, AccessEvaluationEndpoint: other.srv.URL + "/access/v1/evaluation"})
	}
	clk.Advance(time.Hour)
	if _, err := c.Evaluate(ctx, readReq("w2", "read")); err != nil || other.evaluations.Load() != 1 {
		t.Fatalf("discovered endpoint not used: %d %v", other.evaluations.Load(), err)
	}
}

// Section 9: metadata that names another PDP, has no access_evaluation_endpoint, or is
// not a JSON object "MUST NOT be used": nothing is evaluated, and the error is not kept
// (the next evaluation discovers again).
func TestAuthZEN9_BadMetadataIsNotUsed(t *testing.T) {
	for name, meta := range map[string]func(w http.ResponseWriter, base string){
		"other pdp": func(w http.ResponseWriter, base string) {
			_ = json.NewEncoder(w).Encode(Metadata{PolicyDecisionPoint: "https://evil.example", AccessEvaluationEndpoint: base + "/access/v1/evaluation"})
		},
		"trailing slash": func(w http.ResponseWriter, base string) {
			_ = json.NewEncoder(w).Encode(Metadata{PolicyDecisionPoint: base + "/", AccessEvaluationEndpoint: base + "/access/v1/evaluation"})
		},
		"no endpoint": func(w http.ResponseWriter, base string) {
			_ = json.NewEncoder(w).Encode(Metadata{PolicyDecisionPoint: base})
		},
		"relative endpoint": func(w http.ResponseWriter, base string) {
			_ = json.NewEncoder(w).Encode(Metadata{PolicyDecisionPoint: base, AccessEvaluationEndpoint: "/access/v1/evaluation"})
		},
		"not json": func(w http.ResponseWriter, base string) { _, _ = w.Write([]byte("<html>")) },
		"status":   func(w http.ResponseWriter, base string) { w.WriteHeader(http.StatusNotFound) },
		"duplicate": func(w http.ResponseWriter, base string) {
			_, _ = w.Write([]byte(`{"policy_decision_point":"x","policy_decision_point":"` + base + `"}`))
		},
	} {
		t.Run(name, func(t *testing.T) {
			p := newFakePDP(t)
			p.meta = meta
			c := mustClient(t, p.srv.URL)
			for range 2 {
				if d, err := c.Evaluate(context.Background(), readReq("w", "read")); err == nil || d.Allow {
					t.Fatalf("%+v %v", d, err)
				}
			}
			if p.evaluations.Load() != 0 || p.metadata.Load() != 2 {
				t.Fatalf("evaluations %d, metadata %d", p.evaluations.Load(), p.metadata.Load())
			}
		})
	}
}

// A PDP that publishes its metadata elsewhere (OpenFGA: per store) is found through
// WithMetadataURL; the identifier is still checked. WithEvaluationEndpoint skips
// discovery.
func TestAuthZEN9_MetadataURLAndFixedEndpoint(t *testing.T) {
	p := newFakePDP(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/authzen-configuration/store-1", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(Metadata{PolicyDecisionPoint: "https://pdp.example/stores/store-1", AccessEvaluationEndpoint: p.srv.URL + "/access/v1/evaluation"})
	})
	ms := httptest.NewServer(mux)
	defer ms.Close()
	c := mustClient(t, "https://pdp.example/stores/store-1", WithMetadataURL(ms.URL+"/.well-known/authzen-configuration/store-1"))
	if d, err := c.Evaluate(context.Background(), readReq("w", "read")); err != nil || !d.Allow {
		t.Fatalf("%+v %v", d, err)
	}
	c = mustClient(t, "https://pdp.example/stores/store-2", WithMetadataURL(ms.URL+"/.well-known/authzen-configuration/store-1"))
	if _, err := c.Evaluate(context.Background(), readReq("w", "read")); err == nil {
		t.Fatal("metadata of another identifier used")
	}
	c = mustClient(t, "https://pdp.example", WithEvaluationEndpoint(p.srv.URL+"/access/v1/evaluation"))
	if d, err := c.Evaluate(context.Background(), readReq("w", "read")); err != nil || !d.Allow || p.metadata.Load() != 0 {
		t.Fatalf("%+v %v metadata %d", d, err, p.metadata.Load())
	}
}
