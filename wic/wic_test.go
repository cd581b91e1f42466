package wic

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net/url"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

const wl = "spiffe://example.org/workload/api"

func TestMutualTLS02Sec3_IssuedWICVerifies(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			ca := newTestCA(t, alg, t0.Add(-time.Hour), t0.Add(24*time.Hour))
			for _, id := range []string{wl, "wimse://example.org/ns/prod/sa/orders", "wimse://example.org/a%2Fb"} {
				der, _ := ca.issue(t, alg, id, t0, t0.Add(time.Hour))
				got, err := Verify(der, nil, ca.roots(), t0.Add(time.Minute), WithTrustDomain("example.org"))
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if got.String() != id {
					t.Fatalf("identifier %s, want %s", got, id)
				}
			}
		})
	}
}

func TestMutualTLS02Sec3_ExactlyOneURISAN(t *testing.T) {
	ca := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	pub := newKey(t, "ES256").Public()
	cases := []struct {
		name string
		ext  pkix.Extension
		want errcode.Code // "" means accepted
	}{
		{"one", rawSAN([]string{wl}), ""},
		{"one URI beside DNS names (other SAN types are not the identity)", rawSAN([]string{wl}, "api.example.org", "api"), ""},
		{"none", rawSAN(nil, "api.example.org"), errcode.MissingIdentifier},
		{"two workload identifiers", rawSAN([]string{wl, "spiffe://example.org/workload/other"}), errcode.MultipleIdentifiers},
		{"the same identifier twice", rawSAN([]string{wl, wl}), errcode.MultipleIdentifiers},
		{"a second URI of another scheme", rawSAN([]string{wl, "https://api.example.org/"}), errcode.MultipleIdentifiers},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			der := ca.custom(t, &x509.Certificate{ExtraExtensions: []pkix.Extension{c.ext}}, pub)
			id, err := Verify(der, nil, ca.roots(), t0)
			if c.want == "" {
				if err != nil || id.String() != wl {
					t.Fatalf("got %v, %v", id, err)
				}
			} else {
				wantCode(t, err, c.want)
			}
			// IdentifierFromCert on its own applies the same rule.
			leaf, _ := x509.ParseCertificate(der)
			_, err = IdentifierFromCert(leaf)
			if c.want == "" && err != nil || c.want != "" && errcode.CodeOf(err) != c.want {
				t.Fatalf("IdentifierFromCert: %v", err)
			}
		})
	}
	t.Run("no SAN extension at all", func(t *testing.T) {
		der := ca.custom(t, &x509.Certificate{Subject: pkix.Name{CommonName: "api"}}, pub)
		_, err := Verify(der, nil, ca.roots(), t0)
		wantCode(t, err, errcode.MissingIdentifier)
	})
}

// A second spelling in the SAN is rejected with the identifier code, never normalised
// (workload-creds-02 section 6.1 via identifier-03).
func TestCreds02Sec6_1_NonCanonicalIdentifierInSAN(t *testing.T) {
	ca := newTestCA(t, "EdDSA", t0.Add(-time.Hour), t0.Add(time.Hour))
	pub := newKey(t, "EdDSA").Public()
	cases := map[string]errcode.Code{
		"spiffe://Example.org/workload/api":  errcode.InvalidTrustDomainChar,
		"spiffe://example.org/workload/../x": errcode.DotSegment,
		"spiffe://example.org/workload/api/": errcode.EmptyPathSegment,
		"wimse://example.org/a%7eb":          errcode.NonNormalizedPercentEncoding,
		"wimse://example.org/a%7Eb":          errcode.NonNormalizedPercentEncoding,
		"wimse://example.org/a%2fb":          errcode.NonNormalizedPercentEncoding,
		"spiffe://example.org:443/workload":  errcode.HasPort,
		"https://example.org/workload":       errcode.UnsupportedScheme,
		"wimse://example.org":                errcode.EmptyPathSegment,
	}
	for san, want := range cases {
		t.Run(san, func(t *testing.T) {
			der := ca.custom(t, &x509.Certificate{ExtraExtensions: []pkix.Extension{rawSAN([]string{san})}}, pub)
			_, err := Verify(der, nil, ca.roots(), t0)
			wantCode(t, err, want)
		})
	}
}

func TestMutualTLS02Sec3_ValidityWindow(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			ca := newTestCA(t, alg, t0.Add(-time.Hour), t0.Add(48*time.Hour))
			nb, na := t0, t0.Add(24*time.Hour)
			der, _ := ca.issue(t, alg, wl, nb, na)
			for _, c := range []struct {
				name string
				now  time.Time
				want errcode.Code
			}{
				{"at notBefore", nb, ""},
				{"at notAfter", na, ""},
				{"one second before notBefore", nb.Add(-time.Second), errcode.CertificateNotValid},
				{"one second after notAfter (expired)", na.Add(time.Second), errcode.CertificateNotValid},
				{"zero time is never now", time.Time{}, errcode.CertificateNotValid},
			} {
				_, err := Verify(der, nil, ca.roots(), c.now)
				if c.want == "" {
					if err != nil {
						t.Errorf("%s: %v", c.name, err)
					}
					continue
				}
				if errcode.CodeOf(err) != c.want {
					t.Errorf("%s: %v, want %s", c.name, err, c.want)
				}
			}
		})
	}
}

func TestCreds02Sec9_3_ChainToTrustDomainAnchors(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			ca := newTestCA(t, alg, t0.Add(-time.Hour), t0.Add(time.Hour))
			other := newTestCA(t, alg, t0.Add(-time.Hour), t0.Add(time.Hour)) // same subject name, other key
			der, _ := ca.issue(t, alg, wl, t0, t0.Add(time.Hour))

			if _, err := Verify(der, nil, other.roots(), t0); errcode.CodeOf(err) != errcode.InvalidSignature {
				t.Fatalf("wrong CA: %v, want invalid_signature", err)
			}
			if _, err := Verify(der, nil, nil, t0); errcode.CodeOf(err) != errcode.UntrustedIssuer {
				t.Fatalf("no anchors: %v, want untrusted_issuer", err)
			}
			if _, err := Verify(der, nil, []*x509.Certificate{other.cert, ca.cert}, t0); err != nil {
				t.Fatalf("one of two anchors: %v", err)
			}

			// Anchors chosen by the identifier's trust domain: the CA of another trust
			// domain cannot vouch for example.org.
			exampleTD := spiffeid.RequireTrustDomainFromString("example.org")
			otherTD := spiffeid.RequireTrustDomainFromString("other.test")
			set := x509bundle.NewSet(
				x509bundle.FromX509Authorities(exampleTD, other.roots()),
				x509bundle.FromX509Authorities(otherTD, ca.roots()),
			)
			if _, err := VerifyWithBundles(der, nil, set, t0); errcode.CodeOf(err) != errcode.InvalidSignature {
				t.Fatalf("anchors of another trust domain: %v, want invalid_signature", err)
			}
			set = x509bundle.NewSet(x509bundle.FromX509Authorities(exampleTD, ca.roots()))
			if id, err := VerifyWithBundles(der, nil, set, t0); err != nil || id.String() != wl {
				t.Fatalf("own trust domain: %v, %v", id, err)
			}
			foreign, _ := ca.issue(t, alg, "spiffe://unknown.test/x", t0, t0.Add(time.Hour))
			if _, err := VerifyWithBundles(foreign, nil, set, t0); errcode.CodeOf(err) != errcode.UntrustedIssuer {
				t.Fatalf("trust domain without a bundle: %v, want untrusted_issuer", err)
			}
		})
	}
}

func TestCreds02Sec9_3_IdentifierOutsideExpectedTrustDomain(t *testing.T) {
	ca := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	der, _ := ca.issue(t, "ES256", "wimse://evil.example/workload/api", t0, t0.Add(time.Hour))
	_, err := Verify(der, nil, ca.roots(), t0, WithTrustDomain("example.org"))
	wantCode(t, err, errcode.UntrustedIssuer)
	// A trust domain match is exact: a parent or child domain is another trust domain.
	der, _ = ca.issue(t, "ES256", "spiffe://sub.example.org/workload/api", t0, t0.Add(time.Hour))
	_, err = Verify(der, nil, ca.roots(), t0, WithTrustDomain("example.org"))
	wantCode(t, err, errcode.UntrustedIssuer)
}

// The algorithm comes from the CA key, not from the certificate (wimsey
// "ca-of-the-other-algorithm").
func TestMutualTLS02Sec3_AlgorithmFromCAKey(t *testing.T) {
	es := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	ed := newTestCA(t, "EdDSA", t0.Add(-time.Hour), t0.Add(time.Hour))
	esWIC, _ := es.issue(t, "ES256", wl, t0, t0.Add(time.Hour))
	edWIC, _ := ed.issue(t, "ES256", wl, t0, t0.Add(time.Hour))
	_, err := Verify(esWIC, nil, ed.roots(), t0)
	wantCode(t, err, errcode.UnsupportedAlg)
	_, err = Verify(edWIC, nil, es.roots(), t0)
	wantCode(t, err, errcode.UnsupportedAlg)

	// A P-256 CA "signing" with SHA-384: crypto/x509 would accept it, the profile does not.
	leafKey := newKey(t, "ES256")
	der := es.custom(t, &x509.Certificate{
		SignatureAlgorithm: x509.ECDSAWithSHA384,
		ExtraExtensions:    []pkix.Extension{rawSAN([]string{wl})},
	}, leafKey.Public())
	_, err = Verify(der, nil, es.roots(), t0)
	wantCode(t, err, errcode.UnsupportedAlg)

	// A P-384 CA is outside the profile too.
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := NewCA(p384, t0, t0.Add(time.Hour)); errcode.CodeOf(err) != errcode.UnsupportedAlg {
		t.Fatalf("NewCA(P-384): %v", err)
	}
}

func TestVerify_ParseErrors(t *testing.T) {
	ca := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	good, _ := ca.issue(t, "ES256", wl, t0, t0.Add(time.Hour))
	for name, c := range map[string]struct {
		leaf  []byte
		inter [][]byte
	}{
		"not DER":                {leaf: []byte("not a certificate")},
		"empty":                  {leaf: nil},
		"truncated":              {leaf: good[:len(good)-1]},
		"trailing data":          {leaf: append(append([]byte{}, good...), 0)},
		"oversized":              {leaf: make([]byte, MaxCertificateSize+1)},
		"bad intermediate":       {leaf: good, inter: [][]byte{[]byte("junk")}},
		"too many intermediates": {leaf: good, inter: make([][]byte, MaxIntermediates+1)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Verify(c.leaf, c.inter, ca.roots(), t0)
			wantCode(t, err, errcode.CertificateParseError)
		})
	}
	if _, err := IdentifierFromCert(nil); errcode.CodeOf(err) != errcode.CertificateParseError {
		t.Fatalf("IdentifierFromCert(nil): %v", err)
	}
}

func TestMutualTLS02Sec3_LeafMustBeEndEntity(t *testing.T) {
	ca := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	pub := newKey(t, "ES256").Public()
	for name, tmpl := range map[string]*x509.Certificate{
		"CA flag":     {BasicConstraintsValid: true, IsCA: true},
		"keyCertSign": {KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign},
		"cRLSign":     {KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign},
	} {
		t.Run(name, func(t *testing.T) {
			tmpl.ExtraExtensions = []pkix.Extension{rawSAN([]string{wl})}
			_, err := Verify(ca.custom(t, tmpl, pub), nil, ca.roots(), t0)
			wantCode(t, err, errcode.CertificateNotValid)
		})
	}
	// The self-signed CA presented as a WIC reports the missing identifier first
	// (wimsey "no-uri-san").
	_, err := Verify(ca.der, nil, ca.roots(), t0)
	wantCode(t, err, errcode.MissingIdentifier)
}

func TestCreds02Sec9_3_Intermediates(t *testing.T) {
	root := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(48*time.Hour))
	interKey := newKey(t, "EdDSA")
	interTmpl := func(nb, na time.Time) *x509.Certificate {
		return &x509.Certificate{
			Subject:               pkix.Name{CommonName: "intermediate"},
			NotBefore:             nb,
			NotAfter:              na,
			BasicConstraintsValid: true,
			IsCA:                  true,
			KeyUsage:              x509.KeyUsageCertSign,
		}
	}
	interDER := root.custom(t, interTmpl(t0.Add(-time.Hour), t0.Add(24*time.Hour)), interKey.Public())
	interCert, _ := x509.ParseCertificate(interDER)
	inter := testCA{interKey, interDER, interCert}
	leaf, _ := inter.issue(t, "ES256", wl, t0, t0.Add(time.Hour))

	if id, err := Verify(leaf, [][]byte{interDER}, root.roots(), t0); err != nil || id.String() != wl {
		t.Fatalf("via intermediate: %v %v", id, err)
	}
	_, err := Verify(leaf, nil, root.roots(), t0)
	wantCode(t, err, errcode.InvalidSignature)

	expiredDER := root.custom(t, interTmpl(t0.Add(-2*time.Hour), t0.Add(-time.Hour)), interKey.Public())
	_, err = Verify(leaf, [][]byte{expiredDER}, root.roots(), t0)
	wantCode(t, err, errcode.CertificateNotValid)

	notCA := root.custom(t, &x509.Certificate{Subject: pkix.Name{CommonName: "intermediate"}}, interKey.Public())
	_, err = Verify(leaf, [][]byte{notCA}, root.roots(), t0)
	wantCode(t, err, errcode.InvalidSignature)
}

func TestVerify_ExtKeyUsage(t *testing.T) {
	ca := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	wic, _ := ca.issue(t, "ES256", wl, t0, t0.Add(time.Hour))
	for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth} {
		if _, err := Verify(wic, nil, ca.roots(), t0, WithKeyUsages(u)); err != nil {
			t.Fatalf("usage %v: %v", u, err)
		}
	}
	_, err := Verify(wic, nil, ca.roots(), t0, WithKeyUsages(x509.ExtKeyUsageCodeSigning))
	wantCode(t, err, errcode.CertificateNotValid)
}

func TestVerify_UnknownCriticalExtension(t *testing.T) {
	ca := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	der := ca.custom(t, &x509.Certificate{ExtraExtensions: []pkix.Extension{
		rawSAN([]string{wl}),
		{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}, Critical: true, Value: []byte{5, 0}},
	}}, newKey(t, "ES256").Public())
	_, err := Verify(der, nil, ca.roots(), t0)
	wantCode(t, err, errcode.UnsupportedCritical)
}

func TestIdentifierFromCert_InMemoryCertificate(t *testing.T) {
	u, _ := url.Parse(wl)
	id, err := IdentifierFromCert(&x509.Certificate{URIs: []*url.URL{u}})
	if err != nil || id.String() != wl {
		t.Fatalf("%v %v", id, err)
	}
	_, err = IdentifierFromCert(&x509.Certificate{URIs: []*url.URL{u, u}})
	wantCode(t, err, errcode.MultipleIdentifiers)
}

func TestIssue_Errors(t *testing.T) {
	ca := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	pub := newKey(t, "ES256").Public()
	id := identifier.MustParse(wl)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	for name, c := range map[string]struct {
		err  func() error
		want errcode.Code
	}{
		"CA key does not match": {func() error {
			_, err := IssueWIC(newKey(t, "ES256"), ca.der, pub, id, t0, t0.Add(time.Hour))
			return err
		}, errcode.InvalidKey},
		"zero identifier": {func() error {
			_, err := IssueWIC(ca.key, ca.der, pub, identifier.ID{}, t0, t0.Add(time.Hour))
			return err
		}, errcode.InvalidRequest},
		"issuer is not a CA": {func() error {
			leafDER, leafKey := ca.issue(t, "ES256", wl, t0, t0.Add(time.Hour))
			_, err := IssueWIC(leafKey, leafDER, pub, id, t0, t0.Add(time.Hour))
			return err
		}, errcode.InvalidRequest},
		"CA DER garbage": {func() error {
			_, err := IssueWIC(ca.key, []byte{1, 2, 3}, pub, id, t0, t0.Add(time.Hour))
			return err
		}, errcode.CertificateParseError},
		"P-384 workload key": {func() error {
			_, err := IssueWIC(ca.key, ca.der, p384.Public(), id, t0, t0.Add(time.Hour))
			return err
		}, errcode.UnsupportedAlg},
		"empty window": {func() error {
			_, err := IssueWIC(ca.key, ca.der, pub, id, t0, t0)
			return err
		}, errcode.InvalidRequest},
		"nil CA key": {func() error {
			_, err := NewCA(nil, t0, t0.Add(time.Hour))
			return err
		}, errcode.InvalidKey},
	} {
		t.Run(name, func(t *testing.T) { wantCode(t, c.err(), c.want) })
	}
}

func TestIssue_DeterministicAndTimeEncoding(t *testing.T) {
	for _, alg := range algs {
		key := newKey(t, alg)
		a, err := NewCA(key, t0, time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewCA(key, t0, time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC))
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: NewCA is not deterministic", alg)
		}
		c, _ := x509.ParseCertificate(a)
		// 2060 needs GeneralizedTime (RFC 5280 4.1.2.5); crypto/x509 parses either.
		if !c.NotAfter.Equal(time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC)) || !bytes.Contains(a, []byte("20600101000000Z")) {
			t.Fatalf("%s: notAfter %v", alg, c.NotAfter)
		}
		if !c.IsCA || c.SubjectKeyId == nil || c.Subject.CommonName != CACommonName {
			t.Fatalf("%s: CA shape %+v", alg, c)
		}
	}
}
