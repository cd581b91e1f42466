package witissuer

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

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
	return cfg
}
