package tts

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/oauth/oauthmetrics"
)

// newMetrics registers the TTS's Prometheus collectors on a registry the caller owns,
// never the global one, so that several servers (or tests) in one process do not
// collide: the token endpoint's outcomes of every grant handler served at it
// (oauthmetrics: issued and refused Txn-Tokens, chaining grants and access tokens, the
// request duration) and the subject caches' size.
func newMetrics(reg prometheus.Registerer, cacheLen func() float64) (*oauthmetrics.Observer, error) {
	o, err := oauthmetrics.New(reg)
	if err != nil {
		return nil, err
	}
	cache := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dialogtrust_tts_subject_cache_entries",
		Help: "Validated subject tokens held in the caches.",
	}, cacheLen)
	if err := reg.Register(cache); err != nil {
		return nil, err
	}
	return o, nil
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
