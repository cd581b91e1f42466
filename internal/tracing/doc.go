// Package tracing is the services' OpenTelemetry tracing (issue 7, "Observability"): a
// server span per HTTP request through otelhttp, W3C trace-context propagation (a caller's
// traceparent makes the span its child), and export over OTLP/HTTP (protobuf) to a
// collector. It is off unless an OTLP endpoint is configured: Start then returns a nil
// *Tracer, whose methods do nothing, so a service wires it unconditionally.
//
// Everything is in tracing.go (Start, Tracer).
//
// What a span carries is what otelhttp records for a server request (method, path, status,
// server and peer addresses, user agent; never headers, bodies or the query) plus
// dialogtrust.request_id, the id the service's log line for the request carries, so a
// trace and a log line can be joined. Tokens and proofs travel in headers and bodies and
// never reach a span. Health, readiness and metrics probes are not traced.
//
// Spans are named "METHOD /path" for the routes the service names and "METHOD" for any
// other path, so a scan of random paths cannot grow the set of span names.
package tracing
