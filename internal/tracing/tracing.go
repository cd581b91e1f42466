package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TracesPath is appended to Config.OTLPEndpoint, as OTEL_EXPORTER_OTLP_ENDPOINT does.
const TracesPath = "/v1/traces"

// RequestIDAttribute names the span attribute that carries the response's X-Request-Id.
const RequestIDAttribute = "dialogtrust.request_id"

// Config is the tracing section of a service's configuration.
type Config struct {
	// OTLPEndpoint is the collector's OTLP/HTTP base URL, e.g. http://otel-collector:4318;
	// spans are posted to it with TracesPath appended. Empty: tracing is off.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// SampleRatio is the share of new traces recorded, 0 to 1 (default 1). A request
	// that arrives with a traceparent follows its caller's sampling decision.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// Headers are sent with every export (a collector's API key, for example).
	Headers map[string]string `yaml:"headers"`
	// ExportTimeout bounds one export (default 10s).
	ExportTimeout time.Duration `yaml:"export_timeout"`
}

// Enabled reports whether an endpoint is configured.
func (c Config) Enabled() bool { return c.OTLPEndpoint != "" }

// ApplyEnv applies a service's environment override, named without the service's
// prefix: TRACING_OTLP_ENDPOINT or TRACING_SAMPLE_RATIO. known is false for any other
// name.
func (c *Config) ApplyEnv(name, value string) (known bool, err error) {
	switch name {
	case "TRACING_OTLP_ENDPOINT":
		c.OTLPEndpoint = value
	case "TRACING_SAMPLE_RATIO":
		r, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return true, err
		}
		c.SampleRatio = &r
	default:
		return false, nil
	}
	return true, nil
}

// Validate checks the section without opening anything.
func (c Config) Validate() error {
	if !c.Enabled() {
		if c.SampleRatio != nil || len(c.Headers) > 0 || c.ExportTimeout != 0 {
			return errors.New("tracing: otlp_endpoint is required when other tracing settings are given")
		}
		return nil
	}
	if _, err := c.tracesURL(); err != nil {
		return err
	}
	if r := c.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		return fmt.Errorf("tracing.sample_ratio: %v is not between 0 and 1", *r)
	}
	if c.ExportTimeout < 0 {
		return errors.New("tracing.export_timeout: negative")
	}
	for k := range c.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return fmt.Errorf("tracing.headers: %q is not a header name", k)
		}
	}
	return nil
}

func (c Config) tracesURL() (string, error) {
	u, err := url.Parse(c.OTLPEndpoint)
	if err != nil {
		return "", fmt.Errorf("tracing.otlp_endpoint: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("tracing.otlp_endpoint: %q is not an http or https URL", c.OTLPEndpoint)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("tracing.otlp_endpoint: no user, query or fragment (put credentials in tracing.headers)")
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + TracesPath
	return u.String(), nil
}

// Tracer traces a service's HTTP handler. A nil *Tracer is tracing switched off.
type Tracer struct {
	provider   *sdktrace.TracerProvider
	propagator propagation.TextMapPropagator
	service    string
}

// Start sets up export to cfg's endpoint for the service named service (the spans'
// service.name). It returns nil, nil when cfg is not Enabled. Nothing is sent until a
// span ends, so a collector that is down does not stop the service: its spans are
// dropped (the OpenTelemetry SDK reports that through its error handler).
func Start(cfg Config, service string) (*Tracer, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	endpoint, _ := cfg.tracesURL()
	timeout := cfg.ExportTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithTimeout(timeout)}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
	}
	// otlptracehttp.New only builds the client; it connects on the first export.
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	ratio := 1.0
	if cfg.SampleRatio != nil {
		ratio = *cfg.SampleRatio
	}
	res := resource.NewSchemaless(attribute.String("service.name", service))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	)
	return &Tracer{provider: tp, propagator: propagation.TraceContext{}, service: service}, nil
}

// Enabled reports whether t traces.
func (t *Tracer) Enabled() bool { return t != nil }

// untraced are the operational endpoints: probes and scrapes every few seconds would
// drown the token requests.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// standardMethods name spans; any other method (a client may send any token) is "HTTP".
var standardMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodConnect: true, http.MethodOptions: true, http.MethodTrace: true,
}

// Handler wraps next in a server span per request. routes are the paths that name
// their spans ("POST /token"); other paths give spans named by the method alone. With
// t nil it returns next unchanged.
func (t *Tracer) Handler(next http.Handler, routes ...string) http.Handler {
	if t == nil {
		return next
	}
	known := make(map[string]bool, len(routes))
	for _, r := range routes {
		known[r] = true
	}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if id := w.Header().Get("X-Request-Id"); id != "" {
			trace.SpanFromContext(r.Context()).SetAttributes(attribute.String(RequestIDAttribute, id))
		}
	})
	return otelhttp.NewHandler(inner, t.service,
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(t.propagator),
		otelhttp.WithFilter(func(r *http.Request) bool { return !untraced[r.URL.Path] }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			m := r.Method
			if !standardMethods[m] {
				m = "HTTP"
			}
			if known[r.URL.Path] {
				return m + " " + r.URL.Path
			}
			return m
		}),
		// The default MeterProvider is a no-op; Prometheus already has the metrics.
	)
}

// ShutdownLogged is Shutdown within five seconds, for a service's exit: a failed final
// export is logged, not returned. With t nil it does nothing.
func (t *Tracer) ShutdownLogged(logger *slog.Logger) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		logger.Warn("tracing: final export", "error", err.Error())
	}
}

// Shutdown exports the spans still buffered and stops the exporter. With t nil it does
// nothing.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
