package tracing

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/dialogtrust/dialogtrust/internal/tracing/tracingtest"
)

type echo struct{}

func (echo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.ReadAll(r.Body)
	w.Header().Set("X-Request-Id", "req-42")
	w.WriteHeader(http.StatusOK)
}

func do(t *testing.T, r *http.Request) {
	t.Helper()
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
}

func newRequest(t *testing.T, method, url string, body io.Reader) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTracingExportsServerSpansOverOTLP(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	tr, err := Start(Config{OTLPEndpoint: col.URL, Headers: map[string]string{"X-Api-Key": "k1"}}, "dialogtrust-test")
	if err != nil || !tr.Enabled() {
		t.Fatalf("Start: %v %v", tr, err)
	}
	srv := httptest.NewServer(tr.Handler(echo{}, "/token"))
	defer srv.Close()

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	const parentID = "00f067aa0ba902b7"
	req := newRequest(t, http.MethodPost, srv.URL+"/token?x=secret-in-query", strings.NewReader("subject_token=secret-subject-token"))
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	req.Header.Set("Authorization", "WPT secret-proof")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	do(t, req)
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/random/scan/path"} {
		do(t, newRequest(t, http.MethodGet, srv.URL+p, nil))
	}
	do(t, newRequest(t, "FROBNICATE", srv.URL+"/token", nil))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	paths, headers := col.Exports()
	if len(paths) == 0 || paths[0] != TracesPath {
		t.Fatalf("exports to %v, want %s", paths, TracesPath)
	}
	if got := headers[0].Get("X-Api-Key"); got != "k1" {
		t.Errorf("export header X-Api-Key = %q", got)
	}
	spans := col.Spans()
	byName := map[string]tracingtest.Span{}
	for _, sp := range spans {
		byName[sp.Name] = sp
		if sp.Service != "dialogtrust-test" {
			t.Errorf("span %q service.name = %q", sp.Name, sp.Service)
		}
		if sp.Kind != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("span %q kind %v", sp.Name, sp.Kind)
		}
		for _, a := range sp.Attributes {
			if strings.Contains(a.Value.String(), "secret") {
				t.Errorf("span %q attribute %s carries request material: %v", sp.Name, a.Key, a.Value)
			}
		}
	}
	if len(spans) != 3 {
		t.Errorf("%d spans %v, want 3 (the token request, the scan, the odd method; no probes)", len(spans), names(spans))
	}
	tok, ok := byName["POST /token"]
	if !ok {
		t.Fatalf("no span POST /token: %v", names(spans))
	}
	if got := hex.EncodeToString(tok.TraceId); got != traceID {
		t.Errorf("trace id %s, want the caller's %s (W3C trace context)", got, traceID)
	}
	if got := hex.EncodeToString(tok.ParentSpanId); got != parentID {
		t.Errorf("parent span %s, want %s", got, parentID)
	}
	if v, _ := tok.Attr(RequestIDAttribute); v != "req-42" {
		t.Errorf("%s = %q", RequestIDAttribute, v)
	}
	if v, ok := tok.Attr("http.response.status_code"); !ok || !strings.Contains(v, "200") {
		t.Errorf("status attribute = %q", v)
	}
	if _, ok := byName["GET"]; !ok {
		t.Errorf("the unknown path's span is not named by its method alone: %v", names(spans))
	}
	if _, ok := byName["HTTP /token"]; !ok {
		t.Errorf("a non-standard method is not folded into HTTP: %v", names(spans))
	}
}

func names(spans []tracingtest.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func TestTracingSampleRatioZeroRecordsOnlySampledCallers(t *testing.T) {
	col := tracingtest.New()
	defer col.Close()
	zero := 0.0
	tr, err := Start(Config{OTLPEndpoint: col.URL + "/", SampleRatio: &zero}, "svc")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(tr.Handler(echo{}, "/token"))
	defer srv.Close()
	do(t, newRequest(t, http.MethodPost, srv.URL+"/token", nil))
	// A sampled caller is followed even at ratio 0 (parent-based sampling).
	req := newRequest(t, http.MethodPost, srv.URL+"/token", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	do(t, req)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(col.Spans()); n != 1 {
		t.Fatalf("%d spans, want only the sampled caller's", n)
	}
}

func TestTracingOffIsANoOp(t *testing.T) {
	tr, err := Start(Config{}, "svc")
	if err != nil || tr != nil || tr.Enabled() {
		t.Fatalf("Start(off) = %v, %v", tr, err)
	}
	h := &struct{ echo }{}
	if got := tr.Handler(h); got != http.Handler(h) {
		t.Fatal("a nil Tracer wrapped the handler")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A collector that is down must not stop the service: requests are answered, and the
// spans are dropped.
func TestTracingCollectorDownDoesNotFailRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	tr, err := Start(Config{OTLPEndpoint: dead, ExportTimeout: 500 * time.Millisecond}, "svc")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(tr.Handler(echo{}, "/token"))
	defer srv.Close()
	res, err := http.Post(srv.URL+"/token", "text/plain", nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("request with the collector down: %v %v", res, err)
	}
	res.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = tr.Shutdown(ctx) // the export error is the SDK's to report; Shutdown must return
	if ctx.Err() != nil {
		t.Fatal("Shutdown hung on a dead collector")
	}
}

func TestTracingConfigValidate(t *testing.T) {
	half, bad := 0.5, 1.5
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{OTLPEndpoint: "http://127.0.0.1:4318"}, true},
		{Config{OTLPEndpoint: "https://collector.example/otlp", SampleRatio: &half}, true},
		{Config{OTLPEndpoint: "collector:4318"}, false},
		{Config{OTLPEndpoint: "ftp://collector:4318"}, false},
		{Config{OTLPEndpoint: "http://user:pw@collector:4318"}, false},
		{Config{OTLPEndpoint: "http://collector:4318?k=v"}, false},
		{Config{OTLPEndpoint: "http://collector:4318", SampleRatio: &bad}, false},
		{Config{OTLPEndpoint: "http://collector:4318", ExportTimeout: -1}, false},
		{Config{OTLPEndpoint: "http://collector:4318", Headers: map[string]string{"bad name": "v"}}, false},
		{Config{SampleRatio: &half}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", tc.cfg, err, tc.ok)
		}
	}
	if u, _ := (Config{OTLPEndpoint: "https://c.example/otlp/"}).tracesURL(); u != "https://c.example/otlp/v1/traces" {
		t.Errorf("tracesURL = %s", u)
	}
}
