package service

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/problem"
)

// The operational routes.
const (
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
	PathMetrics = "/metrics"
)

// PathJWKS is where both services publish the JWKS of their signing keys.
const PathJWKS = "/.well-known/jwks.json"

// readyTimeout bounds one /readyz: a probe that hangs tells the orchestrator nothing.
const readyTimeout = 2 * time.Second

// Pinger is implemented by replay stores that can say cheaply whether they answer;
// /readyz uses it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// ReadyCheck is an extra readiness check. An error without a code is reported as
// store_unavailable: the checks without a code of their own are the stores' (the
// Redis client's PING); the key sources report keys_unavailable themselves.
type ReadyCheck func(ctx context.Context) error

// Readiness is what /readyz checks, in this order: that a signing key is active, that
// the replay store answers (if it is a Pinger), then Checks.
type Readiness struct {
	// SigningKey reports whether a signing key is active; false is keys_unavailable.
	SigningKey func() bool
	// Store is the replay store.
	Store any
	// Checks are further checks (a JWKS URL that must have answered, the Redis
	// client's PING); see ReadyCheck for their codes.
	Checks []ReadyCheck
	// Logger hears why the service is not ready.
	Logger *slog.Logger
}

// Check runs the checks; the first failure is the answer, an Incomplete
// *errcode.Error.
func (rd Readiness) Check(ctx context.Context) error {
	if !rd.SigningKey() {
		return errcode.Unavailable(errcode.KeysUnavailable, nil, "no signing key")
	}
	if p, ok := rd.Store.(Pinger); ok {
		if err := p.Ping(ctx); err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				err = errcode.Unavailable(errcode.StoreUnavailable, err, "replay store")
			}
			return err
		}
	}
	for _, c := range rd.Checks {
		if err := c(ctx); err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				err = errcode.Unavailable(errcode.StoreUnavailable, err, "readiness check")
			}
			return err
		}
	}
	return nil
}

// ServeHTTP answers 200 {"status":"ready"}, or the failure as a problem document (503).
func (rd Readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := rd.Check(ctx); err != nil {
		if rd.Logger != nil {
			rd.Logger.Warn("not ready", "code", string(errcode.CodeOf(err)), "error", err.Error())
		}
		problem.Write(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// MountOps mounts /healthz, /readyz (rd) and /metrics (reg) on r.
func MountOps(r chi.Router, reg *prometheus.Registry, rd Readiness) {
	r.Get(PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Method(http.MethodGet, PathReadyz, rd)
	r.Method(http.MethodGet, PathMetrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
}

// MountJWKS serves jwks (the signing keys' keys.Ring) at PathJWKS, to GET and HEAD.
func MountJWKS(r chi.Router, jwks http.Handler) {
	r.Method(http.MethodGet, PathJWKS, jwks)
	r.Method(http.MethodHead, PathJWKS, jwks)
}

// NewRegistry is a registry with the Go runtime's and the process's collectors, and
// cs.
func NewRegistry(cs ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(cs...)
	return reg
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
