package kit

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// WITIssuerTransport is the HTTP transport to a WIT issuer from files: with certFile
// and keyFile it presents that X.509-SVID over mutual TLS (the x509svid method); with
// bundleFile it requires the issuer's certificate to chain to the bundle, and to name
// serverID when that is not zero. `dialogtrust wit request` and the proxy's workload
// section use it.
func WITIssuerTransport(certFile, keyFile, bundleFile string, serverID identifier.ID) (*http.Transport, error) {
	var cert *tls.Certificate
	if certFile != "" || keyFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidKey, err, "loading the SVID")
		}
		cert = &c
	}
	transport := &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext, TLSHandshakeTimeout: 10 * time.Second}
	if bundleFile != "" || cert != nil {
		var roots []*x509.Certificate
		if bundleFile != "" {
			var err error
			if roots, err = witissuer.LoadPEMCertificates(bundleFile); err != nil {
				return nil, errcode.Wrap(errcode.InvalidRequest, err, "--bundle")
			}
		}
		transport.TLSClientConfig = witissuer.ClientTLSConfig(cert, roots, serverID)
	}
	return transport, nil
}
