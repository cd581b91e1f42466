package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/wic"
)

// NewTrustDomainCA is a P-256 CA of trust domain td valid from notBefore to notAfter,
// naming its trust domain in its URI SAN (spiffe://td) as SPIFFE CAs do: the anchors of
// administrators' client certificates must (revokeapi.CertBundles). It issues WICs with
// wic.IssueWIC(key, der, ...).
func NewTrustDomainCA(t testing.TB, td string, notBefore, notAfter time.Time) (*ecdsa.PrivateKey, []byte, *x509.Certificate) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: td + " workload CA"},
		URIs: []*url.URL{{Scheme: "spiffe", Host: td}}, NotBefore: notBefore, NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return k, der, c
}

// NewCANamingNoTrustDomain is a P-256 CA as wic.NewCA makes it, valid from notBefore
// to notAfter: no URI SAN, so it names no trust domain (an anchor the administrators'
// client certificates must not have).
func NewCANamingNoTrustDomain(t testing.TB, notBefore, notAfter time.Time) ([]byte, *x509.Certificate) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := wic.NewCA(k, notBefore, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return der, c
}
