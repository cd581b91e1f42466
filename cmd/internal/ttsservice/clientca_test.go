package ttsservice

import (
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// Issue 26 (attack suite: another domain's CA names our administrator): -check-config
// refuses a revocations.admin.client_ca_file holding a CA that names no trust domain in
// its URI SAN, or one of a trust domain the TTS does not serve, and takes one CA of each
// served domain.
func TestIssue26_AdminClientCAFileNamesServedTrustDomains(t *testing.T) {
	now := time.Now()
	pemOf := func(ders ...[]byte) string {
		var b strings.Builder
		for _, d := range ders {
			_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: d})
		}
		return testkit.WriteTemp(t, "ca.pem", b.String())
	}
	_, aDER, _ := testkit.NewTrustDomainCA(t, "a.example", now.Add(-time.Hour), now.Add(time.Hour))
	_, bDER, _ := testkit.NewTrustDomainCA(t, "b.example", now.Add(-time.Hour), now.Add(time.Hour))
	noNameDER, _ := testkit.NewCANamingNoTrustDomain(t, now.Add(-time.Hour), now.Add(time.Hour))
	da := newWITDomain(t, "a.example")
	check := func(caFile string) error {
		y := revocationsYAML(da, "127.0.0.1:0", "127.0.0.1:0") + "    tls: {cert_file: /nonexistent/admin.crt, key_file: /nonexistent/admin.key}\n    client_ca_file: " + caFile + "\n"
		cfg := &Config{}
		if err := kit.ParseYAML([]byte(y), cfg); err != nil {
			t.Fatal(err)
		}
		applyDefaults(cfg)
		return checkRevocations(cfg)
	}
	for name, file := range map[string]string{
		"a CA naming no trust domain":   pemOf(aDER, noNameDER),
		"another trust domain's CA too": pemOf(aDER, bDER),
	} {
		if err := check(file); err == nil || !strings.Contains(err.Error(), "revocations.admin.client_ca_file") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := check(pemOf(aDER)); err != nil {
		t.Errorf("a.example's CA: %v", err)
	}
}
