package service

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ServerDefaults points at the members that both servers' Config (tts.Config,
// witissuer.Config) have with the same meaning, so that their New fill them the same
// way.
type ServerDefaults struct {
	Registry    **prometheus.Registry
	Logger      **slog.Logger
	Now         *func() time.Time
	Skew        *time.Duration
	MaxBodySize *int64
}

// Fill sets what is left out: a new registry, a logger that discards, time.Now, skew,
// and maxBody, which is also the bound's maximum.
func (d ServerDefaults) Fill(skew time.Duration, maxBody int64) {
	if *d.Registry == nil {
		*d.Registry = prometheus.NewRegistry()
	}
	if *d.Logger == nil {
		*d.Logger = slog.New(slog.DiscardHandler)
	}
	if *d.Now == nil {
		*d.Now = time.Now
	}
	if *d.Skew <= 0 {
		*d.Skew = skew
	}
	if *d.MaxBodySize <= 0 || *d.MaxBodySize > maxBody {
		*d.MaxBodySize = maxBody
	}
}
