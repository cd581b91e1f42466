package oauthmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/oauth"
)

// Observer counts the outcomes of a token endpoint. Label values come from fixed sets
// (the token type and grant labels, OAuth errors, error codes) and configuration (peer
// issuers), so a caller cannot grow the number of series.
type Observer struct {
	ttsIssued, ttsRefused *prometheus.CounterVec
	ttsDuration           prometheus.Histogram
	grants, accessTokens  chaining
	// issued holds ttsIssued's children by their labels (issuedLabels to
	// prometheus.Counter): a Txn-Token is counted with one map lookup rather than
	// WithLabelValues's checking and hashing of its three labels. The label sets are
	// the vector's own, so it grows only as the vector does.
	issued sync.Map
}

// issuedLabels are the labels of a dialogtrust_tts_issued_total series.
type issuedLabels struct{ grant, subjectType, method string }

// chaining are the counters of one identity chaining handler.
type chaining struct{ issued, refused *prometheus.CounterVec }

func newChaining(what string) chaining {
	return chaining{
		issued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_chaining_" + what + "_issued_total",
			Help: "Identity chaining " + what + " issued, by peer authorization server.",
		}, []string{"peer"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_chaining_" + what + "_refused_total",
			Help: "Identity chaining " + what + " requests refused, by OAuth error and dialogtrust error code.",
		}, []string{"error", "code"}),
	}
}

// New registers the collectors on reg, a registry the caller owns (never the global
// one, so that several servers or tests in one process do not collide).
func New(reg prometheus.Registerer) (*Observer, error) {
	o := &Observer{
		ttsIssued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_tts_issued_total",
			Help: "Txn-Tokens issued, by grant (token_exchange or replacement), subject token type and authentication method.",
		}, []string{"grant", "subject_token_type", "method"}),
		ttsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dialogtrust_tts_refused_total",
			Help: "Token requests refused, by grant, subject token type, OAuth error and dialogtrust error code.",
		}, []string{"grant", "subject_token_type", "error", "code"}),
		ttsDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "dialogtrust_tts_request_duration_seconds",
			Help: "Time to answer a token request, issued or refused.",
			// Issuance with warm caches is one proof verification and one signature
			// (~0.1 ms); cold, two more verifications; the tail is a slow store or JWKS.
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1},
		}),
		grants:       newChaining("grants"),
		accessTokens: newChaining("access_tokens"),
	}
	for _, c := range []prometheus.Collector{o.ttsIssued, o.ttsRefused, o.ttsDuration,
		o.grants.issued, o.grants.refused, o.accessTokens.issued, o.accessTokens.refused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// Observe implements oauth.Observer.
func (o *Observer) Observe(rec *oauth.Record) {
	switch rec.Handler {
	case oauth.HandlerTxnToken:
		o.ttsDuration.Observe(rec.Duration.Seconds())
		grant := rec.Grant
		if grant == "" {
			grant = "none"
		}
		if rec.Err != nil {
			o.ttsRefused.WithLabelValues(grant, TypeLabel(rec.SubjectTokenType), rec.Error, string(rec.Code)).Inc()
			return
		}
		o.issuedCounter(issuedLabels{grant, TypeLabel(rec.SubjectTokenType), rec.Method}).Inc()
	case oauth.HandlerChainingGrants:
		o.grants.observe(rec)
	case oauth.HandlerChainingAccessTokens:
		o.accessTokens.observe(rec)
	}
}

// issuedCounter is the dialogtrust_tts_issued_total series of l.
func (o *Observer) issuedCounter(l issuedLabels) prometheus.Counter {
	if c, ok := o.issued.Load(l); ok {
		return c.(prometheus.Counter)
	}
	c := o.ttsIssued.WithLabelValues(l.grant, l.subjectType, l.method)
	o.issued.Store(l, c)
	return c
}

func (c chaining) observe(rec *oauth.Record) {
	if rec.Err != nil {
		c.refused.WithLabelValues(rec.Error, string(rec.Code)).Inc()
		return
	}
	c.issued.WithLabelValues(rec.Peer).Inc()
}

// TypeLabel is the short label of a subject token type.
func TypeLabel(t string) string {
	switch t {
	case oauth.TokenTypeAccessToken:
		return "access_token"
	case oauth.TokenTypeIDToken:
		return "id_token"
	case oauth.TokenTypeJWT:
		return "jwt"
	case oauth.TokenTypeSelfSigned:
		return "self_signed"
	case oauth.TokenTypeUnsignedJSON:
		return "unsigned_json"
	case oauth.TokenTypeTxnToken:
		return "txn_token"
	case oauth.TokenTypeRefreshToken:
		return "refresh_token"
	case "":
		return "none"
	}
	return "other"
}

var _ oauth.Observer = (*Observer)(nil)
