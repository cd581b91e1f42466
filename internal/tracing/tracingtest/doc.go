// Package tracingtest is an OTLP/HTTP traces receiver for tests: a real HTTP server on
// loopback that decodes every export as the protobuf ExportTraceServiceRequest an
// OpenTelemetry collector receives, and keeps the spans.
//
// Everything is in collector.go.
//
// It follows the OTLP/HTTP binary protobuf encoding of the OpenTelemetry Protocol; it
// implements no spec section of this project.
package tracingtest
