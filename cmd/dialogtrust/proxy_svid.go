package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"github.com/spiffe/go-spiffe/v2/workloadapi"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// ProxyWorkloadAPIConfig: the SPIFFE Workload API the x509svid method takes the
// workload's X.509-SVID and the issuer's bundle from.
type ProxyWorkloadAPIConfig struct {
	// Socket is the API's address (unix:///path or tcp://ip:port); default the
	// SPIFFE_ENDPOINT_SOCKET environment variable, as go-spiffe reads it.
	Socket string `yaml:"socket"`
}

// workloadAPIAddr is the configured socket, or SPIFFE_ENDPOINT_SOCKET.
func workloadAPIAddr(c *ProxyWorkloadAPIConfig) (string, error) {
	addr := c.Socket
	if addr == "" {
		var ok bool
		if addr, ok = workloadapi.GetDefaultAddress(); !ok {
			return "", fmt.Errorf("workload.workload_api.socket: required (or the SPIFFE_ENDPOINT_SOCKET environment variable)")
		}
	}
	if err := workloadapi.ValidateAddress(addr); err != nil {
		return "", fmt.Errorf("workload.workload_api.socket %q: %w", addr, err)
	}
	return addr, nil
}

// checkWorkloadAPI checks the x509svid method with a workload_api section.
func checkWorkloadAPI(w ProxyWorkloadConfig) error {
	if w.SVIDCertFile != "" || w.SVIDKeyFile != "" || w.BundleFile != "" {
		return fmt.Errorf("workload: workload_api excludes svid_cert_file, svid_key_file and bundle_file (the SVID and the bundle come from the Workload API)")
	}
	if w.ServerID == "" {
		return fmt.Errorf("workload.server_id: required with workload_api (the WIT issuer's SPIFFE ID, its certificate checked against the Workload API's bundle)")
	}
	id, err := identifier.Parse(w.ServerID)
	if err != nil {
		return fmt.Errorf("workload.server_id: %w", err)
	}
	if _, err := spiffeid.TrustDomainFromString(id.TrustDomain()); err != nil {
		return fmt.Errorf("workload.server_id: %w", err)
	}
	_, err = workloadAPIAddr(w.WorkloadAPI)
	return err
}

// svidSource is the workload's X.509-SVID and bundles from the SPIFFE Workload API,
// kept current by go-spiffe's workloadapi.X509Source. It opens in the background: the
// proxy starts, and /readyz answers svid_unavailable, before the agent has attested the
// workload, as a sidecar started with it must.
type svidSource struct {
	addr    string
	now     func() time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	src     atomic.Pointer[workloadapi.X509Source]
	lastErr atomic.Pointer[error]
}

var (
	_ x509svid.Source   = (*svidSource)(nil)
	_ x509bundle.Source = (*svidSource)(nil)
)

// openSVIDSource starts connecting to the Workload API at addr; Close stops it.
func openSVIDSource(ctx context.Context, addr string, logger *slog.Logger) *svidSource {
	ctx, cancel := context.WithCancel(ctx)
	s := &svidSource{addr: addr, now: time.Now, cancel: cancel, done: make(chan struct{})}
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
			return
		}
		s.src.Store(x)
		logSVID := func(msg string) {
			if v, err := x.GetX509SVID(); err == nil {
				logger.Info(msg, "spiffe_id", v.ID.String(), "not_after", v.Certificates[0].NotAfter)
			}
		}
		logSVID("X.509-SVID from the SPIFFE Workload API")
		for {
			select {
			case <-ctx.Done():
				return
			case <-x.Updated():
				logSVID("X.509-SVID updated")
			}
		}
	}()
	return s
}

func (s *svidSource) unavailable() error {
	var cause error
	if e := s.lastErr.Load(); e != nil {
		cause = *e
	}
	return errcode.Unavailable(errcode.SVIDUnavailable, cause, "no X.509-SVID from the Workload API at %s yet", s.addr)
}

// GetX509SVID implements x509svid.Source.
func (s *svidSource) GetX509SVID() (*x509svid.SVID, error) {
	x := s.src.Load()
	if x == nil {
		return nil, s.unavailable()
	}
	return x.GetX509SVID()
}

// GetX509BundleForTrustDomain implements x509bundle.Source.
func (s *svidSource) GetX509BundleForTrustDomain(td spiffeid.TrustDomain) (*x509bundle.Bundle, error) {
	x := s.src.Load()
	if x == nil {
		return nil, s.unavailable()
	}
	return x.GetX509BundleForTrustDomain(td)
}

// Ready is the readiness check: an X.509-SVID has arrived and has not expired.
func (s *svidSource) Ready(context.Context) error {
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
func (s *svidSource) Close() {
	s.cancel()
	<-s.done
	if x := s.src.Load(); x != nil {
		_ = x.Close()
	}
}

// workloadAPIWITSource is the workload's refreshing WIT, with the x509svid method's
// client certificate and the issuer's bundle from svids. The issuer is discovered at the
// first fetch, once there is an SVID to verify its certificate with, and again after a
// failed discovery.
func workloadAPIWITSource(w ProxyWorkloadConfig, svids *svidSource, opts ...wit.SourceOption) (*wit.RefreshingSource, error) {
	sid, err := identifier.Parse(w.ServerID)
	if err != nil {
		return nil, fmt.Errorf("workload.server_id: %w", err)
	}
	tlsCfg, err := witissuer.ClientTLSConfigFromSource(svids, svids, sid)
	if err != nil {
		return nil, fmt.Errorf("workload.server_id: %w", err)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second, TLSClientConfig: tlsCfg,
		// Each request a new handshake with the SVID as it is now: the issuer judges a
		// connection's certificate on every request, so a connection kept alive across
		// a rotation would present the old SVID until it expired.
		DisableKeepAlives: true,
	}}
	d := &discovered{hc: hc, base: w.WITIssuer}
	return wit.NewRefreshingSource(d.fetch, opts...), nil
}

// discovered is a WIT issuer client made at the first fetch that can discover it.
type discovered struct {
	hc   *http.Client
	base string
	mu   sync.Mutex
	c    *witissuer.Client
}

func (d *discovered) fetch(ctx context.Context, key *keys.PrivateKey) (string, time.Time, error) {
	d.mu.Lock()
	c := d.c
	if c == nil {
		var err error
		if c, _, err = witissuer.NewClient(ctx, d.hc, d.base); err != nil {
			d.mu.Unlock()
			var ce *errcode.Error
			if !errors.As(err, &ce) {
				err = errcode.Unavailable(errcode.IssuerUnavailable, err, "workload.wit_issuer")
			}
			return "", time.Time{}, err
		}
		d.c = c
	}
	d.mu.Unlock()
	return c.Fetch(ctx, key)
}

// spiffeLog passes go-spiffe's messages to the proxy's log: an SVID the agent sends and
// go-spiffe refuses is otherwise retried silently.
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
