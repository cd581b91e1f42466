package proxyservice

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/workloadapi"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
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

// workloadAPIWITSource is the workload's refreshing WIT, with the x509svid method's
// client certificate and the issuer's bundle from svids. The issuer is discovered at the
// first fetch, once there is an SVID to verify its certificate with, and again after a
// failed discovery.
func workloadAPIWITSource(w ProxyWorkloadConfig, svids *kit.SVIDSource, opts ...wit.SourceOption) (*wit.RefreshingSource, error) {
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
