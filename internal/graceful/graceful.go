package graceful

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Drainer counts a server's open connections and marks its responses during the drain.
// Use Handler and ConnState when building the http.Server, and Drain before Shutdown.
// The zero value is ready to use; a Drainer must not be copied.
type Drainer struct {
	draining atomic.Bool
	open     atomic.Int64
}

// Handler wraps h: once the drain has begun, every response asks the client to close
// the connection.
func (d *Drainer) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// ConnState is the http.Server's ConnState hook: it counts open connections.
func (d *Drainer) ConnState(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		d.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		d.open.Add(-1)
	}
}

// Drain begins the drain and returns after dur, as soon as no connection is open, or
// when ctx ends, whichever comes first. Call Shutdown after it.
func (d *Drainer) Drain(ctx context.Context, dur time.Duration) {
	d.draining.Store(true)
	if dur <= 0 {
		return
	}
	timer := time.NewTimer(dur)
	defer timer.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for d.open.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		case <-tick.C:
		}
	}
}

// Duration is the drain a service with the given shutdown timeout uses: one second,
// but at most half the timeout, so that Shutdown keeps the other half for the requests
// still running.
func Duration(shutdownTimeout time.Duration) time.Duration {
	return min(time.Second, shutdownTimeout/2)
}
