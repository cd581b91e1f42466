package kit

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"github.com/spiffe/go-spiffe/v2/workloadapi"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// SVIDSource is the workload's X.509-SVID and bundles from the SPIFFE Workload API,
// kept current by go-spiffe's workloadapi.X509Source (SPIRE rotates the SVID; every
// new TLS handshake gets the latest one). It opens in the background: a sidecar
// started with the workload starts, and its /readyz answers svid_unavailable (Ready),
// before the agent has attested the workload; a service that cannot serve without an
// SVID waits for the first one (Wait).
type SVIDSource struct {
	addr    string
	now     func() time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	first   chan struct{} // closed at the first SVID or when the opening failed
	src     atomic.Pointer[workloadapi.X509Source]
	lastErr atomic.Pointer[error]
}

var (
	_ x509svid.Source   = (*SVIDSource)(nil)
	_ x509bundle.Source = (*SVIDSource)(nil)
)

// OpenWorkloadAPI starts connecting to the Workload API at addr; Close stops it. what
// names the SVID in the log lines ("X.509-SVID", "serving SVID"): "<what> from the
// SPIFFE Workload API" at the first one, "<what> updated" at each rotation, so that an
// operator can see the service follows SPIRE.
func OpenWorkloadAPI(ctx context.Context, addr, what string, logger *slog.Logger) *SVIDSource {
	ctx, cancel := context.WithCancel(ctx)
	s := &SVIDSource{addr: addr, now: time.Now, cancel: cancel, done: make(chan struct{}), first: make(chan struct{})}
	go func() {
		defer close(s.done)
		// Blocks until the first X.509-SVID arrives, retrying (go-spiffe's backoff) while
		// the agent is down or has none for this workload yet.
		x, err := workloadapi.NewX509Source(ctx, workloadapi.WithClientOptions(workloadapi.WithAddr(addr), workloadapi.WithLogger(spiffeLog{logger})))
		if err != nil {
			if ctx.Err() == nil {
				s.lastErr.Store(&err)
				logger.Error("workload API: no X.509-SVID", "socket", addr, "error", err.Error())
			}
			close(s.first)
			return
		}
		s.src.Store(x)
		logSVID := func(msg string) {
			if v, err := x.GetX509SVID(); err == nil {
				logger.Info(msg, "spiffe_id", v.ID.String(), "not_after", v.Certificates[0].NotAfter)
			}
		}
		logSVID(what + " from the SPIFFE Workload API")
		close(s.first)
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-x.Updated():
				if !ok {
					return
				}
				logSVID(what + " updated")
			}
		}
	}()
	return s
}

// Wait waits at most d for the first X.509-SVID; the error says why there is none.
func (s *SVIDSource) Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.first:
	case <-t.C:
		return fmt.Errorf("no X.509-SVID within %s: %w", d, context.DeadlineExceeded)
	case <-ctx.Done():
		return fmt.Errorf("no X.509-SVID within %s: %w", d, ctx.Err())
	}
	if _, err := s.GetX509SVID(); err != nil {
		return fmt.Errorf("no X.509-SVID within %s: %w", d, err)
	}
	return nil
}

func (s *SVIDSource) unavailable() error {
	var cause error
	if e := s.lastErr.Load(); e != nil {
		cause = *e
	}
	return errcode.Unavailable(errcode.SVIDUnavailable, cause, "no X.509-SVID from the Workload API at %s yet", s.addr)
}

// GetX509SVID implements x509svid.Source.
func (s *SVIDSource) GetX509SVID() (*x509svid.SVID, error) {
	x := s.src.Load()
	if x == nil {
		return nil, s.unavailable()
	}
	return x.GetX509SVID()
}

// GetX509BundleForTrustDomain implements x509bundle.Source.
func (s *SVIDSource) GetX509BundleForTrustDomain(td spiffeid.TrustDomain) (*x509bundle.Bundle, error) {
	x := s.src.Load()
	if x == nil {
		return nil, s.unavailable()
	}
	return x.GetX509BundleForTrustDomain(td)
}

// Ready is the readiness check: an X.509-SVID has arrived and has not expired.
func (s *SVIDSource) Ready(context.Context) error {
	v, err := s.GetX509SVID()
	if err != nil {
		if errcode.CodeOf(err) == errcode.Unmapped {
			err = errcode.Unavailable(errcode.SVIDUnavailable, err, "workload API")
		}
		return err
	}
	if na := v.Certificates[0].NotAfter; s.now().After(na) {
		return errcode.Unavailable(errcode.SVIDUnavailable, nil, "the X.509-SVID from %s expired at %s", s.addr, na.UTC().Format(time.RFC3339))
	}
	return nil
}

// Close stops the connecting or closes the source, dropping the stream to the agent.
func (s *SVIDSource) Close() {
	s.cancel()
	<-s.done
	if x := s.src.Load(); x != nil {
		_ = x.Close()
	}
}

// spiffeLog passes go-spiffe's messages to the service's log: an SVID the agent sends
// and go-spiffe refuses (x509svid.Parse wants digitalSignature, for example) is
// otherwise retried silently, and a start would only say that none arrived.
type spiffeLog struct{ l *slog.Logger }

func (s spiffeLog) Debugf(format string, args ...any) {
	s.l.Debug("workload API: " + fmt.Sprintf(format, args...))
}
func (s spiffeLog) Infof(format string, args ...any) {
	s.l.Info("workload API: " + fmt.Sprintf(format, args...))
}
func (s spiffeLog) Warnf(format string, args ...any) {
	s.l.Warn("workload API: " + fmt.Sprintf(format, args...))
}
func (s spiffeLog) Errorf(format string, args ...any) {
	s.l.Error("workload API: " + fmt.Sprintf(format, args...))
}
