package authzen

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/authz"
)

// BenchmarkEvaluateCached: a decision served from the cache, for the TTS's question
// (the cost the TTS pays per token with a warm cache).
func BenchmarkEvaluateCached(b *testing.B) {
	p := newFakePDP(b)
	p.answer = func(w http.ResponseWriter, _ map[string]any) { _, _ = w.Write([]byte(`{"decision":true}`)) }
	c, err := New(p.srv.URL, WithEvaluationEndpoint(p.srv.URL+"/access/v1/evaluation"), WithCache(100, time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	in := &authz.Issuance{
		Requester: "wimse://a.example/agent/a1", RequesterTrustDomain: "a.example", Proof: "wit_wpt",
		Audience: "a.example", Scopes: []string{"trip.read"},
		SubjectTokenType: "urn:ietf:params:oauth:token-type:self_signed", SubjectIssuer: "wimse://a.example/agent/a1", Subject: "alice", SubjectScopes: []string{"trip.read", "trip.book"},
		Dialog: "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", Details: map[string]any{"dlg": "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", "purpose": json.RawMessage(`"travel"`)},
	}
	ctx := context.Background()
	if _, err := c.DecideIssuance(ctx, in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if d, err := c.DecideIssuance(ctx, in); err != nil || !d.Allow {
			b.Fatal(d, err)
		}
	}
}
