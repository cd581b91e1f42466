package witissuerservice

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/workloadapi"
)

// workloadAPIWait bounds how long the issuer waits at start for the Workload API's first
// X.509-SVID: without it there is nothing to serve TLS with.
const workloadAPIWait = 30 * time.Second

// openWorkloadAPI connects to the SPIFFE Workload API at addr (tls.workload_api_socket)
// and returns the serving certificate callback and a closer. go-spiffe's X509Source keeps
// the SVID current: SPIRE rotates it, every new TLS handshake gets the latest one.
func openWorkloadAPI(ctx context.Context, addr string, logger *slog.Logger) (func(*tls.ClientHelloInfo) (*tls.Certificate, error), func(), error) {
	wctx, cancel := context.WithTimeout(ctx, workloadAPIWait)
	defer cancel()
	src, err := workloadapi.NewX509Source(wctx, workloadapi.WithClientOptions(workloadapi.WithAddr(addr), workloadapi.WithLogger(spiffeLogger{logger})))
	if err != nil {
		return nil, nil, fmt.Errorf("tls.workload_api_socket %s: no X.509-SVID within %s: %w", addr, workloadAPIWait, err)
	}
	svid, err := src.GetX509SVID()
	if err != nil {
		_ = src.Close()
		return nil, nil, fmt.Errorf("tls.workload_api_socket %s: %w", addr, err)
	}
	logger.Info("serving SVID from the SPIFFE Workload API", "spiffe_id", svid.ID.String(), "not_after", svid.Certificates[0].NotAfter)
	// Log each rotation, so an operator can see the issuer follows SPIRE.
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-src.Updated():
				if !ok {
					return
				}
				if s, err := src.GetX509SVID(); err == nil {
					logger.Info("serving SVID updated", "spiffe_id", s.ID.String(), "not_after", s.Certificates[0].NotAfter)
				}
			}
		}
	}()
	return tlsconfig.GetCertificate(src), func() { _ = src.Close() }, nil
}

// spiffeLogger passes go-spiffe's messages to the issuer's log: an SVID the agent sends
// and go-spiffe refuses (x509svid.Parse wants digitalSignature, for example) is retried
// quietly otherwise, and the start would only say that none arrived.
type spiffeLogger struct{ l *slog.Logger }

func (s spiffeLogger) Debugf(format string, args ...any) {
	s.l.Debug("workload API: " + fmt.Sprintf(format, args...))
}
func (s spiffeLogger) Infof(format string, args ...any) {
	s.l.Info("workload API: " + fmt.Sprintf(format, args...))
}
func (s spiffeLogger) Warnf(format string, args ...any) {
	s.l.Warn("workload API: " + fmt.Sprintf(format, args...))
}
func (s spiffeLogger) Errorf(format string, args ...any) {
	s.l.Error("workload API: " + fmt.Sprintf(format, args...))
}
