package ttsservice

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dialogtrust/dialogtrust/keys"
)

// jwksRefreshes counts the JWKS fetches of every JWKS URL this process trusts (WIT
// issuers, subject token issuers, registered clients): forced ones (the first fetch,
// an unknown kid) by outcome, and background refreshes that brought a new set. It is
// one collector for the process, registered on each server's registry.
var jwksRefreshes = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "dialogtrust_tts_jwks_refreshes_total",
	Help: "JWKS fetches of trusted JWKS URLs, by trigger (forced: first fetch or unknown kid; background) and result (ok or error).",
}, []string{"trigger", "result"})

// jwksRefreshHook counts a RemoteSet's fetches in jwksRefreshes.
func jwksRefreshHook() keys.RemoteOption {
	return keys.WithRefreshHook(func(e keys.RefreshEvent) {
		trigger, result := "background", "ok"
		if e.Forced {
			trigger = "forced"
		}
		if e.Err != nil {
			result = "error"
		}
		jwksRefreshes.WithLabelValues(trigger, result).Inc()
	})
}
