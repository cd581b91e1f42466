package loadtest

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dialogtrust/dialogtrust/internal/service"
)

// ReceiverMetrics are what "bench receiver" serves on /metrics, so that the receiver's
// own CPU and memory can be read apart from the load generator's: the Go runtime's and
// the process's collectors, and the count of requests the receiver verified.
type ReceiverMetrics struct {
	reg      *prometheus.Registry
	verified prometheus.Counter
}

// NewReceiverMetrics registers the collectors and the counter on a registry of their own.
func NewReceiverMetrics() *ReceiverMetrics {
	verified := prometheus.NewCounter(prometheus.CounterOpts{Name: "dialogtrust_bench_receiver_verified_total", Help: "Requests the receiver verified."})
	return &ReceiverMetrics{reg: service.NewRegistry(verified), verified: verified}
}

// Verified counts one verified request.
func (m *ReceiverMetrics) Verified() { m.verified.Inc() }

// Handler serves the metrics in the Prometheus text format.
func (m *ReceiverMetrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
