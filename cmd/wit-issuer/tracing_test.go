package main

import (
	"context"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/tracing"
	"github.com/dialogtrust/dialogtrust/internal/tracing/tracingtest"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// Issue 7, observability: with tracing.otlp_endpoint set, the wit-issuer exports a
// server span per issuance request over OTLP/HTTP, carrying the request id of its log
// line and nothing of the proof or the WIT; the spans are flushed at shutdown.
func TestTracingExportsIssuanceSpans(t *testing.T) {
	col := tracingtest.Start(t)
	s := start(t, []string{"--listen", "127.0.0.1:0"}, []string{EnvPrefix + "TRACING_OTLP_ENDPOINT=" + col.URL})
	ctx := context.Background()
	c, _, err := witissuer.NewClient(ctx, nil, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.Subject = "wimse://dev.local/agent/a1"
	key, _ := keys.Generate(keys.ES256)
	w, err := c.Request(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	var issued *tracingtest.Span
	for _, sp := range col.Spans() {
		if sp.Service != "dialogtrust-wit-issuer" {
			t.Errorf("service.name %q", sp.Service)
		}
		for _, a := range sp.Attributes {
			if strings.Contains(a.Value.String(), w.WIT[:40]) {
				t.Errorf("span %s attribute %s carries the WIT", sp.Name, a.Key)
			}
		}
		if sp.Name == "POST "+witissuer.PathWIT {
			issued = &sp
		}
	}
	if issued == nil {
		t.Fatalf("no issuance span in %d spans", len(col.Spans()))
	}
	if id, ok := issued.Attr(tracing.RequestIDAttribute); !ok || id == "" {
		t.Errorf("no request id on the issuance span")
	}
	if v, _ := issued.Attr("http.response.status_code"); !strings.Contains(v, "200") {
		t.Errorf("status %q", v)
	}
}
