package wic

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

// Workload-creds-02 section 9.3: anchors are grouped by the trust domain each names in
// its one URI SAN, so that VerifyWithBundles lets a CA vouch for its own domain only;
// an anchor that names none (the conformance vectors' CA), several, a workload, or
// another scheme is refused with its code.
func TestCreds02Sec9_3_BundlesOfAnchorsByTrustDomain(t *testing.T) {
	ca := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	anchor := func(ext ...pkix.Extension) *x509.Certificate {
		der := ca.custom(t, &x509.Certificate{Subject: pkix.Name{CommonName: "sub"}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign, ExtraExtensions: ext}, newKey(t, "ES256").Public())
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for name, tc := range map[string]struct {
		cert *x509.Certificate
		want errcode.Code
	}{
		"no URI SAN":  {ca.cert, errcode.MissingIdentifier},
		"two":         {anchor(rawSAN([]string{"spiffe://a.example", "spiffe://b.example"})), errcode.MultipleIdentifiers},
		"a workload":  {anchor(rawSAN([]string{"spiffe://a.example/ca"})), errcode.MissingIdentifier},
		"https":       {anchor(rawSAN([]string{"https://a.example"})), errcode.MissingIdentifier},
		"upper case":  {anchor(rawSAN([]string{"spiffe://A.example"})), errcode.InvalidTrustDomainChar},
		"with a port": {anchor(rawSAN([]string{"spiffe://a.example:8443"})), errcode.HasPort},
	} {
		if _, err := TrustDomainOfCA(tc.cert); !errcode.Is(err, tc.want) {
			t.Errorf("%s: %v, want %s", name, err, tc.want)
		}
		if _, err := BundlesOf([]*x509.Certificate{tc.cert}); err == nil {
			t.Errorf("%s: grouped", name)
		}
	}
	a1, a2, b := anchor(rawSAN([]string{"spiffe://a.example"})), anchor(rawSAN([]string{"wimse://a.example"})), anchor(rawSAN([]string{"spiffe://b.example"}))
	set, err := BundlesOf([]*x509.Certificate{a1, b, a2})
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := set.Get(spiffeid.RequireTrustDomainFromString("a.example"))
	bb, _ := set.Get(spiffeid.RequireTrustDomainFromString("b.example"))
	if set.Len() != 2 || ab == nil || len(ab.X509Authorities()) != 2 || bb == nil || len(bb.X509Authorities()) != 1 {
		t.Errorf("bundles: %d", set.Len())
	}
}
