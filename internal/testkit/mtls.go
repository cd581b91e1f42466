package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/wic"
)

// NewWICCert is a client certificate for id: a fresh P-256 key and its WIC issued by
// the CA (caKey, caDER; NewTrustDomainCA makes one) valid from notBefore to notAfter.
func NewWICCert(t testing.TB, caKey *ecdsa.PrivateKey, caDER []byte, id string, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := wic.IssueWIC(caKey, caDER, k.Public(), identifier.MustParse(id), notBefore, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
}

// StartClientCertTLS starts srv under TLS asking for a client certificate without
// requiring one (as the admin listener does: the handler decides), and closes it at
// the test's end.
func StartClientCertTLS(t testing.TB, srv *httptest.Server) {
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
}

// ClientCertTransport is srv's client transport presenting certs.
func ClientCertTransport(srv *httptest.Server, certs ...tls.Certificate) *http.Transport {
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = certs
	return tr
}
