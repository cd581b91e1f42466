package revokeapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// caWithURIs is a CA whose URI SANs are uris (none, a path, several: what an anchor of
// client certificates must not be).
func caWithURIs(t *testing.T, uris ...string) *x509.Certificate {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	for _, u := range uris {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, p)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// Issue 26 (attack suite: another domain's CA names our administrator): an anchor of
// administrators' client certificates names its trust domain, one this TTS serves, or
// the configuration is refused.
func TestCertBundles_AnchorNamesAServedTrustDomain(t *testing.T) {
	now := time.Now()
	_, _, a := testkit.NewTrustDomainCA(t, "a.example", now.Add(-time.Hour), now.Add(time.Hour))
	_, _, c := testkit.NewTrustDomainCA(t, "c.example", now.Add(-time.Hour), now.Add(time.Hour))
	_, noName := testkit.NewCANamingNoTrustDomain(t, now.Add(-time.Hour), now.Add(time.Hour))
	served := []string{"a.example", "b.example"}
	for name, roots := range map[string][]*x509.Certificate{
		"no URI SAN":               {a, noName},
		"a trust domain not ours":  {a, c},
		"a workload, not a domain": {caWithURIs(t, "spiffe://a.example/ops")},
		"two trust domains":        {caWithURIs(t, "spiffe://a.example", "spiffe://b.example")},
		"an https URI":             {caWithURIs(t, "https://a.example")},
	} {
		if _, err := revokeapi.CertBundles(roots, served); !errcode.Is(err, errcode.InvalidRequest) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := revokeapi.New(revokeapi.Config{Store: revoke.NewMemory(), CertRoots: roots, TrustDomains: served,
			Admins: []identifier.ID{identifier.MustParse("wimse://a.example/ops/alice")}, DefaultTTL: time.Hour}); err == nil {
			t.Errorf("%s: the API started", name)
		}
	}
	set, err := revokeapi.CertBundles([]*x509.Certificate{a, caWithURIs(t, "wimse://b.example"), caWithURIs(t, "spiffe://a.example")}, served)
	if err != nil || set.Len() != 2 {
		t.Fatalf("a.example (two CAs) and b.example: %v", err)
	}
}

// Issue 26 (attack suite): a TTS serving a.example and b.example trusts both domains'
// CAs, each for its own domain only: b.example's CA cannot name a.example's
// administrator (workload-creds-02 section 9.3), though it names b.example's.
func TestAdminMutualTLS_ACAVouchesForItsOwnTrustDomainOnly(t *testing.T) {
	now := time.Now()
	aKey, aDER, aCA := testkit.NewTrustDomainCA(t, "a.example", now.Add(-time.Hour), now.Add(time.Hour))
	bKey, bDER, bCA := testkit.NewTrustDomainCA(t, "b.example", now.Add(-time.Hour), now.Add(time.Hour))
	st := revoke.NewMemory()
	h, err := revokeapi.New(revokeapi.Config{Store: st, CertRoots: []*x509.Certificate{aCA, bCA}, TrustDomains: []string{"a.example", "b.example"},
		Admins: []identifier.ID{identifier.MustParse("wimse://a.example/ops/alice"), identifier.MustParse("wimse://b.example/ops/bob")}, DefaultTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	client := mtlsAPI(t, h)
	ctx := context.Background()
	if _, err := client(wicCert(t, aKey, aDER, "wimse://a.example/ops/alice")).Revoke(ctx, revokeapi.Request{Kind: revoke.Txn, ID: "a", Reason: "x"}); err != nil {
		t.Fatalf("a.example's CA for a.example's administrator: %v", err)
	}
	if _, err := client(wicCert(t, bKey, bDER, "wimse://b.example/ops/bob")).Revoke(ctx, revokeapi.Request{Kind: revoke.Txn, ID: "b", Reason: "x"}); err != nil {
		t.Fatalf("b.example's CA for b.example's administrator: %v", err)
	}
	_, err = client(wicCert(t, bKey, bDER, "wimse://a.example/ops/alice")).Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1", Reason: "b.example says so"})
	if err == nil || errcode.KindOf(err) != errcode.Failed {
		t.Errorf("b.example's CA for a.example's administrator: %v", err)
	}
	if l, _ := st.List(ctx); len(l) != 2 {
		t.Errorf("stored %+v", l)
	}
}
