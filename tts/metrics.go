package tts

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the TTS's Prometheus collectors, registered on a registry the caller
// owns, never the global one, so that several servers (or tests) in one process do not
// collide. Label values come from fixed sets (metricType, metricGrant and the error
// codes), so a caller cannot grow the number of series.
type metrics struct {
	issued   *prometheus.CounterVec
	refused  *prometheus.CounterVec
	duration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, cacheLen func() float64) (*metrics, error) {
	m := &metrics{
		issued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_tts_issued_total",
			Help: "Txn-Tokens issued, by grant (token_exchange or replacement), subject token type and authentication method.",
		}, []string{"grant", "subject_token_type", "method"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_tts_refused_total",
			Help: "Token requests refused, by grant, subject token type, OAuth error and dialogtrust error code.",
		}, []string{"grant", "subject_token_type", "error", "code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dialogtrust_tts_request_duration_seconds",
			Help: "Time to answer a token request, issued or refused.",
			// Issuance with warm caches is one proof verification and one signature
			// (~0.1 ms); cold, two more verifications; the tail is a slow store or JWKS.
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
		}),
	}
	cache := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dialogtrust_tts_subject_cache_entries",
		Help: "Validated subject tokens held in the caches.",
	}, cacheLen)
	for _, c := range []prometheus.Collector{m.issued, m.refused, m.duration, cache} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// metricType is the short label of a subject token type.
func metricType(t string) string {
	switch t {
	case TokenTypeAccessToken:
		return "access_token"
	case TokenTypeIDToken:
		return "id_token"
	case TokenTypeJWT:
		return "jwt"
	case TokenTypeSelfSigned:
		return "self_signed"
	case TokenTypeUnsignedJSON:
		return "unsigned_json"
	case TokenTypeTxnToken:
		return "txn_token"
	case TokenTypeRefreshToken:
		return "refresh_token"
	case "":
		return "none"
	}
	return "other"
}

// metricGrant: the grant as a label. A token exchange whose subject is a Txn-Token is a
// replacement (oauth.md 1.8).
func metricGrant(grantType, subjectType string) string {
	if grantType != GrantTypeTokenExchange {
		if grantType == "" {
			return "none"
		}
		return "other"
	}
	if subjectType == TokenTypeTxnToken {
		return "replacement"
	}
	return "token_exchange"
}
