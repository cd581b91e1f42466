package revokeapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// Mutual TLS with the anchors of two trust domains in client_ca_file (a federation
// bundle, each CA naming its trust domain in its URI SAN as SPIFFE CAs do): b.example's
// CA issues a certificate naming a.example's administrator. A CA of one trust domain
// cannot vouch for an identifier of another (workload-creds-02 section 9.3; wic's
// VerifyWithBundles): either the configuration is refused, or the certificate is; no
// revocation is made either way.
func TestAttackAPI_MTLSAnotherDomainsCACannotNameOurAdministrator(t *testing.T) {
	now := time.Now()
	newCA := func(td string) (*ecdsa.PrivateKey, []byte, *x509.Certificate) {
		return testkit.NewTrustDomainCA(t, td, now.Add(-time.Hour), now.Add(time.Hour))
	}
	aKey, aDER, aCert := newCA("a.example")
	bKey, bDER, bCert := newCA("b.example")
	st := revoke.NewMemory()
	h, err := revokeapi.New(revokeapi.Config{Store: st, CertRoots: []*x509.Certificate{aCert, bCert},
		Admins: []identifier.ID{identifier.MustParse("wimse://a.example/ops/alice")}, TrustDomains: []string{"a.example"}, DefaultTTL: time.Hour})
	if err != nil {
		return // the configuration is refused: nothing to attack
	}
	client := mtlsAPI(t, h)
	ctx := context.Background()
	if _, err := client(wicCert(t, aKey, aDER, "wimse://a.example/ops/alice")).Revoke(ctx, revokeapi.Request{Kind: revoke.Txn, ID: "ours", Reason: "x"}); err != nil {
		t.Fatalf("our own CA's administrator: %v", err)
	}
	if _, err := client(wicCert(t, bKey, bDER, "wimse://a.example/ops/alice")).Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D1", Reason: "b.example says so"}); err == nil {
		t.Error("b.example's CA vouched for a.example's administrator: a dialog of a.example was revoked")
	}
	if l, _ := st.List(ctx); len(l) != 1 {
		t.Errorf("stored %+v", l)
	}
}
