package wic

import (
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
)

// A WIC for a spiffe:// identifier is an X509-SVID as far as go-spiffe's peer
// verification goes: x509svid.Verify (what spiffetls/tlsconfig runs on a peer) accepts it
// with a bundle for its trust domain, and agrees with IdentifierFromCert.
func TestGoSPIFFEInterop_X509SVIDVerify(t *testing.T) {
	for _, alg := range algs {
		t.Run(alg, func(t *testing.T) {
			ca := newTestCA(t, alg, t0.Add(-time.Hour), t0.Add(time.Hour))
			der, _ := ca.issue(t, alg, wl, t0, t0.Add(time.Hour))
			leaf, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			td := spiffeid.RequireTrustDomainFromString("example.org")
			bundle := x509bundle.FromX509Authorities(td, ca.roots())

			id, chains, err := x509svid.Verify([]*x509.Certificate{leaf}, bundle, x509svid.WithTime(t0))
			if err != nil {
				t.Fatalf("x509svid.Verify: %v", err)
			}
			if id.String() != wl || len(chains) == 0 {
				t.Fatalf("go-spiffe saw %s with %d chains", id, len(chains))
			}
			ours, err := IdentifierFromCert(leaf)
			if err != nil || ours.String() != id.String() {
				t.Fatalf("IdentifierFromCert %v %v, go-spiffe %s", ours, err, id)
			}
			theirs, err := x509svid.IDFromCert(leaf)
			if err != nil || theirs != id {
				t.Fatalf("x509svid.IDFromCert: %v %v", theirs, err)
			}

			// Both reject it outside its validity window and under another CA.
			if _, _, err := x509svid.Verify([]*x509.Certificate{leaf}, bundle, x509svid.WithTime(t0.Add(2*time.Hour))); err == nil {
				t.Fatal("go-spiffe accepted an expired WIC")
			}
			other := newTestCA(t, alg, t0.Add(-time.Hour), t0.Add(time.Hour))
			if _, _, err := x509svid.Verify([]*x509.Certificate{leaf}, x509bundle.FromX509Authorities(td, other.roots()), x509svid.WithTime(t0)); err == nil {
				t.Fatal("go-spiffe accepted a WIC under another CA")
			}
		})
	}
}

// Where the conformance layout and go-spiffe part ways. The layout is fixed by the
// vectors, so these are recorded, not fixed:
//   - x509svid.Parse/ParseRaw/Load (holding an SVID as one's own identity) require
//     keyUsage digitalSignature on the leaf; the WIC layout has no keyUsage extension.
//   - a wimse:// identifier is not a SPIFFE ID, so go-spiffe refuses it everywhere.
func TestGoSPIFFEInterop_KnownDifferences(t *testing.T) {
	ca := newTestCA(t, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	der, key := ca.issue(t, "ES256", wl, t0, t0.Add(time.Hour))
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	_, err = x509svid.ParseRaw(der, keyDER)
	if err == nil || !strings.Contains(err.Error(), "digitalSignature") {
		t.Fatalf("x509svid.ParseRaw: %v (expected the digitalSignature key usage rule)", err)
	}
	t.Logf("x509svid.ParseRaw on a WIC: %v", err)

	wimseDER, _ := ca.issue(t, "ES256", "wimse://example.org/workload/api", t0, t0.Add(time.Hour))
	leaf, _ := x509.ParseCertificate(wimseDER)
	bundle := x509bundle.FromX509Authorities(spiffeid.RequireTrustDomainFromString("example.org"), ca.roots())
	if _, _, err := x509svid.Verify([]*x509.Certificate{leaf}, bundle, x509svid.WithTime(t0)); err == nil {
		t.Fatal("go-spiffe accepted a wimse:// identifier")
	}
	if id, err := Verify(wimseDER, nil, ca.roots(), t0); err != nil || id.Scheme() != "wimse" {
		t.Fatalf("wic.Verify on a wimse:// WIC: %v %v", id, err)
	}
	if _, err := VerifyWithBundles(wimseDER, nil, bundle, t0); errcode.CodeOf(err) != "" {
		t.Fatalf("VerifyWithBundles on a wimse:// WIC: %v", err)
	}
}
