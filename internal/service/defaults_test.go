package service

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// What is left out is filled; what is set stays, except a body bound above the maximum.
func TestServerDefaultsFill(t *testing.T) {
	var (
		reg    *prometheus.Registry
		logger *slog.Logger
		now    func() time.Time
		skew   time.Duration
		body   int64 = 1 << 30
	)
	ServerDefaults{Registry: &reg, Logger: &logger, Now: &now, Skew: &skew, MaxBodySize: &body}.Fill(time.Minute, 64<<10)
	if reg == nil || logger == nil || now == nil || skew != time.Minute || body != 64<<10 {
		t.Fatalf("not filled: %v %v %v %v %v", reg, logger, now == nil, skew, body)
	}
	setReg, setLogger := prometheus.NewRegistry(), slog.New(slog.DiscardHandler)
	reg, logger, skew, body = setReg, setLogger, time.Second, 1024
	ServerDefaults{Registry: &reg, Logger: &logger, Now: &now, Skew: &skew, MaxBodySize: &body}.Fill(time.Minute, 64<<10)
	if reg != setReg || logger != setLogger || skew != time.Second || body != 1024 {
		t.Fatalf("overwritten: %v %v %v", reg == setReg, skew, body)
	}
}
