package kit

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/keys"
)

// Metric names of the signing keys, which the key-age alert of deploy/prometheus
// compares.
const (
	MetricKeyAge    = "dialogtrust_signing_key_age_seconds"
	MetricKeyMaxAge = "dialogtrust_signing_key_max_age_seconds"
)

// KeyMetrics are the gauges of a service's signing keys: how long the active key has
// signed, and how long it may sign before its rotation is overdue: the rotation period,
// plus the publish delay before the next key signs, plus two rotation steps (one to
// start the rotation, one to activate the key). The limit is 0 when the keys are not
// rotated (a key from a file, no rotation_period), and the alert then stays silent.
func KeyMetrics(rot *keys.Rotator, step time.Duration, now func() time.Time) []prometheus.Collector {
	var limit time.Duration
	if p := rot.Period(); p > 0 {
		limit = p + rot.PublishDelay() + 2*step
	}
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricKeyAge,
		Help: "How long the active signing key has signed, since it was activated (0 when that is not known)."},
		func() float64 {
			for _, k := range rot.State().Keys {
				if k.State == keys.KeyActive && !k.ActivatedAt.IsZero() {
					return now().Sub(k.ActivatedAt).Seconds()
				}
			}
			return 0
		})
	max := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: MetricKeyMaxAge,
		Help: "How long the active signing key may sign before its rotation is overdue (0: the keys are not rotated)."},
		func() float64 { return limit.Seconds() })
	return []prometheus.Collector{age, max}
}
