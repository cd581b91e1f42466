package chaining

import "github.com/prometheus/client_golang/prometheus"

// metrics of one handler. Each handler has its own names (grants for AS A,
// access_tokens for AS B), so both can share the TTS's registry. Label values come from
// configuration (peer issuers) and fixed sets (OAuth errors, error codes), so a caller
// cannot grow the number of series.
type metrics struct {
	issued  *prometheus.CounterVec
	refused *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, what string) (*metrics, error) {
	m := &metrics{
		issued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_chaining_" + what + "_issued_total",
			Help: "Identity chaining " + what + " issued, by peer authorization server.",
		}, []string{"peer"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_chaining_" + what + "_refused_total",
			Help: "Identity chaining " + what + " requests refused, by OAuth error and dialogtrust error code.",
		}, []string{"error", "code"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.issued, m.refused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
