package revokeapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// Issue 26: an administrator authenticates with a workload identity certificate
// (mutual TLS, no signature); another workload's certificate, a certificate of
// another CA, and no certificate are refused.
func TestIssue26_AdminMutualTLS(t *testing.T) {
	now := time.Now()
	// The anchors of client certificates name their trust domain (revokeapi.CertBundles).
	newCA := func() (*ecdsa.PrivateKey, []byte, *x509.Certificate) {
		return testkit.NewTrustDomainCA(t, "a.example", now.Add(-time.Hour), now.Add(time.Hour))
	}
	caKey, caDER, caCert := newCA()
	otherKey, otherDER, _ := newCA()
	st := revoke.NewMemory()
	h, err := revokeapi.New(revokeapi.Config{Store: st, CertRoots: []*x509.Certificate{caCert},
		Admins: []identifier.ID{identifier.MustParse("wimse://a.example/ops/alice")}, TrustDomains: []string{"a.example"}, DefaultTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	client := mtlsAPI(t, h)
	ctx := context.Background()
	if _, err := client(wicCert(t, caKey, caDER, "wimse://a.example/ops/alice")).Revoke(ctx, revokeapi.Request{Kind: revoke.Txn, ID: "t1", Reason: "x"}); err != nil {
		t.Fatalf("administrator's certificate: %v", err)
	}
	if _, err := client(wicCert(t, caKey, caDER, "wimse://a.example/agent/a1")).Revoke(ctx, revokeapi.Request{Kind: revoke.Txn, ID: "t2", Reason: "x"}); !errcode.Is(err, errcode.NotAuthorized) {
		t.Fatalf("another workload's certificate: %v", err)
	}
	if _, err := client(wicCert(t, otherKey, otherDER, "wimse://a.example/ops/alice")).Revoke(ctx, revokeapi.Request{Kind: revoke.Txn, ID: "t3", Reason: "x"}); err == nil || errcode.KindOf(err) != errcode.Failed {
		t.Fatalf("a certificate of another CA: %v", err)
	}
	if _, err := client().Revoke(ctx, revokeapi.Request{Kind: revoke.Txn, ID: "t4", Reason: "x"}); !errcode.Is(err, errcode.MissingCredential) {
		t.Fatalf("no certificate: %v", err)
	}
	if l, _ := st.List(ctx); len(l) != 1 || l[0].ID != "t1" || l[0].By != "wimse://a.example/ops/alice" {
		t.Fatalf("stored %+v", l)
	}
}

// wicCert is a client certificate for id, issued by the CA (ck, cder), valid for the
// hour around now.
func wicCert(t *testing.T, ck *ecdsa.PrivateKey, cder []byte, id string) tls.Certificate {
	now := time.Now()
	return testkit.NewWICCert(t, ck, cder, id, now.Add(-time.Hour), now.Add(time.Hour))
}

// mtlsAPI serves h under TLS, asking for client certificates as the admin listener
// does; its clients present certs.
func mtlsAPI(t *testing.T, h http.Handler) func(certs ...tls.Certificate) *revokeapi.Client {
	srv := httptest.NewUnstartedServer(h)
	testkit.StartClientCertTLS(t, srv)
	return func(certs ...tls.Certificate) *revokeapi.Client {
		return &revokeapi.Client{URL: srv.URL + revokeapi.Path, HTTP: &http.Client{Transport: testkit.ClientCertTransport(srv, certs...)}}
	}
}
