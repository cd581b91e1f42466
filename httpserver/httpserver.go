package httpserver

import (
	"net/http"
	"time"
)

// The bounds New sets.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, headers and body: the body read
	// deadline. A handler that reads its body after this has passed reads an error.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds the time from the end of the request headers to the end of
	// the response.
	WriteTimeout = 30 * time.Second
	// IdleTimeout bounds how long a kept-alive connection waits for its next request.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds the request line and headers (64 KiB: a WIT, a proof and
	// a signature together stay far below it).
	MaxHeaderBytes = 64 << 10
)

// New returns a server for h with every bound of this package set.
func New(h http.Handler) *http.Server {
	srv := &http.Server{Handler: h}
	SetDefaults(srv)
	return srv
}

// SetDefaults sets each bound of this package that srv leaves at zero (no bound), and
// keeps the ones it sets.
func SetDefaults(srv *http.Server) {
	if srv.ReadHeaderTimeout == 0 {
		srv.ReadHeaderTimeout = ReadHeaderTimeout
	}
	if srv.ReadTimeout == 0 {
		srv.ReadTimeout = ReadTimeout
	}
	if srv.WriteTimeout == 0 {
		srv.WriteTimeout = WriteTimeout
	}
	if srv.IdleTimeout == 0 {
		srv.IdleTimeout = IdleTimeout
	}
	if srv.MaxHeaderBytes == 0 {
		srv.MaxHeaderBytes = MaxHeaderBytes
	}
}
