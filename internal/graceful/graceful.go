// Package graceful stops an HTTP/1.1 server without failing requests that were already
// sent to it.
//
// http.Server.Shutdown closes the listener and every idle connection at once. A
// kept-alive connection counts as idle from the moment its last response is written
// until the server has read the first bytes of the next request, so on a busy server a
// request the client sent just before the signal, still unread in the socket buffer, is
// lost: the client sees EOF or a reset for a request that was in flight. The fault
// tests (internal/faulttest, SIGTERM under load) saw this on both services.
//
// A Drainer puts a short drain before Shutdown. During the drain the server keeps
// accepting and serving, but every response carries "Connection: close", so each
// connection is closed right after the answer to the request its client had already
// sent, and the client opens a new connection for its next one. When the drain ends
// (after its duration, or as soon as no connection is open), Shutdown closes the
// listener, so new connections are refused, and finds only connections that were idle
// for the whole drain: whatever is sent on them from then on was sent after the signal.
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
