package kit

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dialogtrust/dialogtrust/keys"
)

// The key gauges: the active key's age by the injected clock, and the limit the
// key-age alert compares it with (period + publish delay + two steps; 0 unrotated).
func TestKeyMetrics(t *testing.T) {
	start := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		period    time.Duration
		wantLimit time.Duration
	}{
		{time.Hour, time.Hour + keys.DefaultPublishDelay + 2*30*time.Second},
		{0, 0},
	} {
		now := start
		clock := func() time.Time { return now }
		rot, _, err := keys.OpenRotator(keys.KeySource{}, keys.RotationConfig{Period: tc.period, Retain: time.Hour, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		now = start.Add(50 * time.Minute)
		m := KeyMetrics(rot, 30*time.Second, clock)
		if got := testutil.ToFloat64(m[0]); got != (50 * time.Minute).Seconds() {
			t.Errorf("period %v: age %v", tc.period, got)
		}
		if got := testutil.ToFloat64(m[1]); got != tc.wantLimit.Seconds() {
			t.Errorf("period %v: limit %v, want %v", tc.period, got, tc.wantLimit.Seconds())
		}
	}
}
