package witissuer

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the issuer's Prometheus collectors. They are registered on a registry the
// caller owns, never on the global one, so that several issuers (or tests) in one
// process do not collide.
type Metrics struct {
	issued   *prometheus.CounterVec
	refused  *prometheus.CounterVec
	duration prometheus.Histogram
}

// NewMetrics creates the collectors and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		issued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_wit_issued_total",
			Help: "WITs issued, by the authentication method of the request.",
		}, []string{"method"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_wit_refused_total",
			Help: "WIT requests refused, by error code.",
		}, []string{"code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dialogtrust_wit_request_duration_seconds",
			Help: "Time to answer a WIT request, issued or refused.",
			// Issuance is two signature operations (~0.1ms) plus a store round trip;
			// the buckets resolve that and the slow tail of a struggling store.
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		}),
	}
	for _, c := range []prometheus.Collector{m.issued, m.refused, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
