package kit

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/dialogtrust/dialogtrust/httpserver"
	"github.com/dialogtrust/dialogtrust/internal/graceful"
	"github.com/dialogtrust/dialogtrust/internal/tracing"
)

// Server is a built, not yet serving, service. A binary's Build fills it: Listen (and
// UseTLS), Handle, what it says when it starts, and OnClose for what it opened. The zero
// value is ready to use; a Server must not be copied.
type Server struct {
	// Issuer is the issuer identifier, for the start-up log line.
	Issuer string
	// StartAttrs follow url, issuer and config on the "<name> started" line.
	StartAttrs []any
	// Development, when set, is said loudly at the start: Warning is logged at warn
	// level, Banner framed on stderr (see Banner).
	Development *Development
	// Listening follows "<name> listening on <url> " on stdout: what a person or a
	// test waiting for the start reads.
	Listening string
	// ShutdownTimeout bounds the graceful stop.
	ShutdownTimeout time.Duration
	// HTTP is the server Handle built; a binary may tighten a bound on it.
	HTTP *http.Server

	ln      net.Listener
	tls     bool
	drain   graceful.Drainer
	closers []func()
	more    []listener
}

// listener is a further listener of a Server and the HTTP server on it.
type listener struct {
	ln  net.Listener
	srv *http.Server
}

// Development is what a development configuration says at the start.
type Development struct {
	Warning string
	Banner  []string
}

// Listen opens the TCP listener at addr; it is closed with the Server.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.OnClose(func() { _ = ln.Close() })
	return nil
}

// UseTLS serves TLS with cfg on the listener Listen opened.
func (s *Server) UseTLS(cfg *tls.Config) {
	s.ln = tls.NewListener(s.ln, cfg)
	s.tls = true
}

// URL is the base URL the listener answers at: http(s)://host:port.
func (s *Server) URL() string {
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	return scheme + "://" + s.ln.Addr().String()
}

// TLS reports whether UseTLS was called.
func (s *Server) TLS() bool { return s.tls }

// OnClose registers f to run when the Server is closed; the last registered runs
// first.
func (s *Server) OnClose(f func()) { s.closers = append(s.closers, f) }

// Close releases what the Server holds, in reverse order of OnClose.
func (s *Server) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// CloseOnError closes the Server if *err is set: a Build defers it, so that a failed
// build leaves nothing open.
func (s *Server) CloseOnError(err *error) {
	if *err != nil {
		s.Close()
	}
}

// Handle builds the HTTP server for h: tracing as tc says (service names the process
// in the spans; spanRoutes are the routes that get spans of their own), the drain of
// the graceful stop, and the bounds of package httpserver.
func (s *Server) Handle(h http.Handler, tc tracing.Config, service string, logger *slog.Logger, spanRoutes ...string) error {
	tracer, err := tracing.Start(tc, service)
	if err != nil {
		return err
	}
	s.OnClose(func() { tracer.ShutdownLogged(logger) })
	if tracer.Enabled() {
		logger.Info("tracing on", "otlp_endpoint", tc.OTLPEndpoint)
	}
	s.HTTP = NewHTTPServer(s.drain.Handler(tracer.Handler(h, spanRoutes...)), logger)
	s.HTTP.ConnState = s.drain.ConnState
	return nil
}

// HandleMore serves h on a further listener at addr (with TLS when tlsCfg is not nil),
// with the bounds of package httpserver and the same drain and graceful stop as the
// main one, and returns its base URL (http(s)://host:port). It is for a binary with more than one face that must not
// share a listener: the proxy's egress (loopback, for the local agent only) and
// ingress (for remote callers) beside its operational routes.
func (s *Server) HandleMore(addr string, tlsCfg *tls.Config, h http.Handler, logger *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	return s.HandleMoreOn(ln, tlsCfg, h, logger), nil
}

// HandleMoreOn is HandleMore on a listener the binary opened, such as a Unix domain
// socket from ListenUnix (the egress's listener for the local agent); the Server
// closes it. It returns the base URL: http(s)://host:port, or unix:///path for a
// Unix socket.
func (s *Server) HandleMoreOn(ln net.Listener, tlsCfg *tls.Config, h http.Handler, logger *slog.Logger) string {
	s.OnClose(func() { _ = ln.Close() })
	u := "http://" + ln.Addr().String()
	if a, ok := ln.Addr().(*net.UnixAddr); ok {
		u = UnixScheme + a.Name
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		u = "https://" + ln.Addr().String()
	}
	srv := NewHTTPServer(s.drain.Handler(h), logger)
	srv.ConnState = s.drain.ConnState
	s.more = append(s.more, listener{ln: ln, srv: srv})
	return u
}

// NewHTTPServer is httpserver.New with the server's own errors (a TLS handshake that
// failed, a panic in a handler) logged at warn level on logger.
func NewHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	srv := httpserver.New(h)
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	return srv
}

// announce says that the service started: the log line, the development warning and
// banner, the listening line.
func (s *Server) announce(name string, src Source, logger *slog.Logger, stdout, stderr io.Writer) {
	attrs := append([]any{"url", s.URL(), "issuer", s.Issuer, "config", src.String()}, s.StartAttrs...)
	logger.Info(name+" started", attrs...)
	if d := s.Development; d != nil {
		logger.Warn(d.Warning)
		Banner(stderr, d.Banner...)
	}
	fmt.Fprintf(stdout, "%s listening on %s %s\n", name, s.URL(), s.Listening)
}

// announceQuietly is announce for a program whose caller announces the start
// (Program.Announced): the same lines at debug, no banner, no listening line.
func (s *Server) announceQuietly(name string, src Source, logger *slog.Logger) {
	attrs := append([]any{"url", s.URL(), "issuer", s.Issuer, "config", src.String()}, s.StartAttrs...)
	logger.Debug(name+" started", attrs...)
	if d := s.Development; d != nil {
		logger.Debug(d.Warning)
	}
}

// serve serves until ctx ends or serving fails; then it stops gracefully.
func (s *Server) serve(ctx context.Context, logger *slog.Logger) error {
	errc := make(chan error, 1+len(s.more))
	go func() { errc <- s.HTTP.Serve(s.ln) }()
	for _, m := range s.more {
		go func() { errc <- m.srv.Serve(m.ln) }()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", s.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.ShutdownTimeout)
	defer cancel()
	// Requests already sent are answered first (internal/graceful); then Shutdown.
	s.drain.Drain(sctx, graceful.Duration(s.ShutdownTimeout))
	for _, m := range s.more {
		if err := m.srv.Shutdown(sctx); err != nil {
			logger.Error("shutdown", "error", err.Error())
			_ = m.srv.Close()
		}
	}
	if err := s.HTTP.Shutdown(sctx); err != nil {
		logger.Error("shutdown", "error", err.Error())
		_ = s.HTTP.Close()
		return err
	}
	logger.Info("stopped")
	return nil
}
