package httpserver

import (
	"net/http"
	"testing"
	"time"
)

// Every bound is set, and a bound the caller set is kept.
func TestNewSetsEveryBound(t *testing.T) {
	srv := New(http.NotFoundHandler())
	if srv.ReadHeaderTimeout != ReadHeaderTimeout || srv.ReadTimeout != ReadTimeout || srv.WriteTimeout != WriteTimeout ||
		srv.IdleTimeout != IdleTimeout || srv.MaxHeaderBytes != MaxHeaderBytes || srv.Handler == nil {
		t.Fatalf("%+v", srv)
	}
	for _, d := range []time.Duration{srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout} {
		if d <= 0 {
			t.Fatal("a zero timeout is no bound")
		}
	}
	own := &http.Server{MaxHeaderBytes: 32 << 10, IdleTimeout: time.Minute}
	SetDefaults(own)
	if own.MaxHeaderBytes != 32<<10 || own.IdleTimeout != time.Minute || own.ReadHeaderTimeout != ReadHeaderTimeout {
		t.Fatalf("%+v", own)
	}
}
