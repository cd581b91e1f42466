package witissuer

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/wic"
)

// ServerTLSConfig is the issuer's TLS configuration. Client certificates are requested
// but neither required nor verified by crypto/tls: methods other than x509svid need
// none, and the x509svid method verifies the chain itself on every request (doc.go).
// crypto/tls still checks that the client holds the certificate's private key.
func ServerTLSConfig(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: getCert,
		ClientAuth:     tls.RequestClientCert,
	}
}

// FileCertificate is a serving certificate and key read from PEM files (for example
// written by spiffe-helper), reloaded when the files change.
type FileCertificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]

	mu     sync.Mutex
	stamps map[string]fileStamp
}

// LoadFileCertificate loads the pair once; failure is an error.
func LoadFileCertificate(certFile, keyFile string) (*FileCertificate, error) {
	c := &FileCertificate{certFile: certFile, keyFile: keyFile}
	if _, err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// GetCertificate is a tls.Config.GetCertificate.
func (c *FileCertificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// Reload reads the pair now; on failure the previous certificate stays in service.
func (c *FileCertificate) Reload() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stamps := map[string]fileStamp{}
	for _, p := range []string{c.certFile, c.keyFile} {
		st, err := os.Stat(p)
		if err != nil {
			return false, err
		}
		stamps[p] = fileStamp{mod: st.ModTime(), size: st.Size()}
	}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return false, err
	}
	changed := stamps[c.certFile] != c.stamps[c.certFile] || stamps[c.keyFile] != c.stamps[c.keyFile]
	c.cur.Store(&pair)
	c.stamps = stamps
	return changed, nil
}

// ReloadIfChanged reloads when either file's modification time or size changed.
func (c *FileCertificate) ReloadIfChanged() (bool, error) {
	c.mu.Lock()
	for _, p := range []string{c.certFile, c.keyFile} {
		st, err := os.Stat(p)
		if err != nil || c.stamps[p] != (fileStamp{mod: st.ModTime(), size: st.Size()}) {
			c.mu.Unlock()
			return c.Reload()
		}
	}
	c.mu.Unlock()
	return false, nil
}

// LoadPEMCertificates reads every CERTIFICATE block of a PEM file (a trust bundle).
func LoadPEMCertificates(path string) ([]*x509.Certificate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, raw = pem.Decode(raw)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no certificates", path)
	}
	return out, nil
}

// ClientTLSConfig is a workload's TLS configuration towards an issuer: it presents cert
// (nil: none) and trusts roots (the issuer's trust bundle). With a serverID the server's
// certificate is checked as a workload identity certificate naming exactly that
// identifier (mutual-tls-02 section 3.2.1: a WIC names a workload, not a host, so there
// is no DNS name to check). Without one, crypto/tls checks the host name against roots
// as usual.
func ClientTLSConfig(cert *tls.Certificate, roots []*x509.Certificate, serverID identifier.ID) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	if serverID.IsZero() {
		pool := x509.NewCertPool()
		for _, r := range roots {
			pool.AddCert(r)
		}
		cfg.RootCAs = pool
		return cfg
	}
	// VerifyConnection runs on every handshake, resumed ones included.
	cfg.InsecureSkipVerify = true //nolint:gosec // replaced by VerifyConnection below
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		return verifyIssuerID(cs, roots, serverID)
	}
	return cfg
}

// verifyIssuerID checks the issuer's certificate as a workload identity certificate
// naming exactly serverID, chained to roots.
func verifyIssuerID(cs tls.ConnectionState, roots []*x509.Certificate, serverID identifier.ID) error {
	if len(cs.PeerCertificates) == 0 {
		return errcode.New(errcode.MissingCredential, "issuer presented no certificate")
	}
	var inters [][]byte
	for _, c := range cs.PeerCertificates[1:] {
		inters = append(inters, c.Raw)
	}
	id, err := wic.Verify(cs.PeerCertificates[0].Raw, inters, roots, timeNow(),
		wic.WithTrustDomain(serverID.TrustDomain()), wic.WithKeyUsages(x509.ExtKeyUsageServerAuth))
	if err != nil {
		return err
	}
	if !id.Equal(serverID) {
		return errcode.New(errcode.IssuerMismatch, "issuer's certificate names %s, want %s", id, serverID)
	}
	return nil
}

// ClientTLSConfigFromSource is ClientTLSConfig with the workload's X.509-SVID and the
// trust bundle read from sources at every handshake instead of copied once: a go-spiffe
// workloadapi.X509Source is both, so the client follows the SPIFFE Workload API's
// rotations of the SVID and of the bundle without a restart. The issuer's certificate
// must be a workload identity certificate naming exactly serverID, chained to the
// source's bundle of serverID's trust domain; serverID is required (an SVID names a
// workload, not a host, so there is no host name to check instead).
//
// A connection keeps the SVID of its handshake, and the issuer judges that certificate
// on every request, with its own clock and bundles: a connection kept alive across a
// rotation goes on presenting the replaced SVID until it expires. Use the configuration
// on a transport with DisableKeepAlives (a workload asks for a WIT every few minutes, a
// handshake each time costs little), or close idle connections on each update.
//
// The client does not present an expired SVID. A source without an SVID or without the
// bundle, or with an expired SVID, fails the handshake with svid_unavailable
// (Incomplete).
func ClientTLSConfigFromSource(svids x509svid.Source, bundles x509bundle.Source, serverID identifier.ID) (*tls.Config, error) {
	if serverID.IsZero() {
		return nil, errcode.New(errcode.InvalidRequest, "the issuer's identifier (server ID) is required")
	}
	td, err := spiffeid.TrustDomainFromString(serverID.TrustDomain())
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidRequest, err, "the trust domain of %s", serverID)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	getCert := tlsconfig.GetClientCertificate(svids)
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c, err := getCert(cri)
		if err != nil {
			return nil, errcode.Unavailable(errcode.SVIDUnavailable, err, "no X.509-SVID to present to the issuer")
		}
		if c.Leaf != nil && timeNow().After(c.Leaf.NotAfter) {
			return nil, errcode.Unavailable(errcode.SVIDUnavailable, nil, "the X.509-SVID expired at %s", c.Leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		return c, nil
	}
	cfg.InsecureSkipVerify = true //nolint:gosec // replaced by VerifyConnection below
	// VerifyConnection runs on every handshake, resumed ones included.
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		b, err := bundles.GetX509BundleForTrustDomain(td)
		if err != nil {
			return errcode.Unavailable(errcode.SVIDUnavailable, err, "no X.509 bundle of %s", td)
		}
		return verifyIssuerID(cs, b.X509Authorities(), serverID)
	}
	return cfg, nil
}
