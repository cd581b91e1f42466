package kit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/dialogtrust/dialogtrust/httpserver"
)

// DebugConfig is the debug section of both services. It is empty, and nothing in it is
// served, unless an operator asks for it.
type DebugConfig struct {
	// PprofListen, when set, is a loopback host:port of its own where net/http/pprof is
	// served under /debug/pprof/, to profile the running process. It is never mounted
	// on the service's listener: profiles and goroutine dumps are for the operator on
	// the host, not for clients.
	PprofListen string `yaml:"pprof_listen"`
}

// Check refuses a pprof address that is not on the loopback interface.
func (d DebugConfig) Check() error {
	if d.PprofListen == "" {
		return nil
	}
	if !IsLoopback(d.PprofListen) {
		return fmt.Errorf("debug.pprof_listen %q: must be host:port on a loopback IP (127.0.0.1:6060, [::1]:6060)", d.PprofListen)
	}
	return nil
}

// pprofWriteTimeout bounds one answer of the pprof listener: a profile of up to about
// two minutes (?seconds=110) fits.
const pprofWriteTimeout = 2 * time.Minute

// PathPprof is where the pprof listener serves the profiles.
const PathPprof = "/debug/pprof/"

// pprofHandler serves net/http/pprof's pages, and nothing else.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(PathPprof, pprof.Index)
	mux.HandleFunc(PathPprof+"cmdline", pprof.Cmdline)
	mux.HandleFunc(PathPprof+"profile", pprof.Profile)
	mux.HandleFunc(PathPprof+"symbol", pprof.Symbol)
	mux.HandleFunc(PathPprof+"trace", pprof.Trace)
	return mux
}

// startPprof opens the pprof listener of d, if any, and serves it until the returned
// stop is called; the warn line it logs names its URL.
func startPprof(d DebugConfig, logger *slog.Logger) (stop func(), err error) {
	if d.PprofListen == "" {
		return func() {}, nil
	}
	if err := d.Check(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", d.PprofListen)
	if err != nil {
		return nil, fmt.Errorf("debug.pprof_listen: %w", err)
	}
	srv := httpserver.New(pprofHandler())
	// A CPU profile or trace takes as long as it is asked to (?seconds=, 30 s by
	// default): the write bound of the service's own server would cut it off.
	srv.WriteTimeout = pprofWriteTimeout
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("pprof listener", "error", err.Error())
		}
	}()
	logger.Warn("pprof served on its own listener (debug.pprof_listen): profiles of this process", "url", "http://"+ln.Addr().String()+PathPprof)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
	}, nil
}
