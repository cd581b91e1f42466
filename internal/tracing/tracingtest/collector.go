package tracingtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span with its resource's service.name.
type Span struct {
	*tracepb.Span
	Service string
}

// Attr returns the attribute key of the span (a string value as it is, any other
// value in its protobuf text form) and whether the span has it.
func (s Span) Attr(key string) (string, bool) {
	for _, a := range s.Attributes {
		if a.Key != key {
			continue
		}
		if _, ok := a.Value.GetValue().(*commonpb.AnyValue_StringValue); ok {
			return a.Value.GetStringValue(), true
		}
		return a.Value.String(), true
	}
	return "", false
}

// Collector is the receiver. URL is its base URL (give it as the OTLP endpoint).
type Collector struct {
	URL     string
	srv     *httptest.Server
	mu      sync.Mutex
	paths   []string
	headers []http.Header
	spans   []Span
	errs    []error
}

// New starts a Collector; Close stops it.
func New() *Collector {
	c := &Collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	c.URL = c.srv.URL
	return c
}

// Start starts a Collector that stops when the test ends, after the clean-ups
// registered later (a service stopped at the end flushes its spans into it first).
func Start(t testing.TB) *Collector {
	c := New()
	t.Cleanup(c.Close)
	return c
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.errs = append(c.errs, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.paths = append(c.paths, r.URL.Path)
	c.headers = append(c.headers, r.Header.Clone())
	for _, rs := range req.ResourceSpans {
		var svc string
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				svc = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				c.spans = append(c.spans, Span{Span: sp, Service: svc})
			}
		}
	}
	b, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// Spans returns the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Exports returns the path and headers of every export received.
func (c *Collector) Exports() ([]string, []http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...), append([]http.Header(nil), c.headers...)
}

// Errors returns the exports that could not be decoded.
func (c *Collector) Errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.errs...)
}

// Close stops the receiver.
func (c *Collector) Close() { c.srv.Close() }
