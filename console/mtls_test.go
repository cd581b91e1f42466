package console_test

import (
	"crypto/ecdsa"
	"crypto/tls"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// Issue 26 point 3 (a): a browser presenting an administrator's workload identity
// certificate sees the page and revokes with its form (the CSRF token is bound to the
// certificate); another workload's certificate is not_authorized, another CA's and none
// are refused. Under TLS a login link's cookie is __Host-, Secure, Path=/.
func TestIssue26Point3_MutualTLSAndHostCookie(t *testing.T) {
	now := time.Now()
	w := newTLSAtkWorld(t)
	st, base, logins := w.store, w.base, w.logins
	// Another CA of the same trust domain, which the listener does not trust.
	otherKey, otherDER, _ := testkit.NewTrustDomainCA(t, "a.example", now.Add(-time.Hour), now.Add(time.Hour))
	client := func(certs ...tls.Certificate) *http.Client {
		return &http.Client{Transport: testkit.ClientCertTransport(w.srv, certs...), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	cert := func(ck *ecdsa.PrivateKey, cder []byte, id string) tls.Certificate {
		return testkit.NewWICCert(t, ck, cder, id, now.Add(-time.Hour), now.Add(time.Hour))
	}
	caKey, caDER := w.caKey, w.caDER
	alice := client(cert(caKey, caDER, "wimse://a.example/ops/alice"))
	a := get(t, alice, base+"/admin/dialogs/D1", nil)
	if a.status != 200 || !strings.Contains(a.body, "(client certificate)") || !strings.Contains(a.body, "no audit trail") && !strings.Contains(a.body, `id="notfound"`) {
		t.Fatalf("the administrator's certificate: %d %s", a.status, a.code)
	}
	tok := csrfRE.FindStringSubmatch(a.body)[1]
	if a := post(t, client(cert(caKey, caDER, "wimse://a.example/ops/alice")), base+"/admin/dialogs/D1/revoke", url.Values{"csrf": {tok}, "reason": {"r"}}, map[string]string{"Origin": base}); a.status != 403 || a.code != "csrf_token_invalid" {
		t.Errorf("another certificate of the same administrator with the first one's token: %d %s", a.status, a.code)
	}
	if a := post(t, alice, base+"/admin/dialogs/D1/revoke", url.Values{"csrf": {tok}, "reason": {"r"}}, map[string]string{"Origin": base}); a.status != 303 {
		t.Fatalf("revoke with the certificate: %d %s", a.status, a.code)
	}
	if l, _ := st.List(t.Context()); len(l) != 1 || l[0].ID != "D1" || l[0].By != "wimse://a.example/ops/alice" {
		t.Fatalf("stored %+v", l)
	}
	for name, c := range map[string]struct {
		client *http.Client
		status int
		code   string
	}{
		"another workload": {client(cert(caKey, caDER, "wimse://a.example/agent/a1")), 403, "not_authorized"},
		"another CA":       {client(cert(otherKey, otherDER, "wimse://a.example/ops/alice")), 401, ""},
		"no certificate":   {client(), 401, "missing_credential"},
	} {
		a := get(t, c.client, base+"/admin/", nil)
		if a.status != c.status || c.code != "" && a.code != c.code || strings.Contains(a.body, `name="csrf"`) {
			t.Errorf("%s: %d %s", name, a.status, a.code)
		}
	}
	// A login link under TLS: a __Host- cookie.
	s, err := logins.NewLogin(identifier.MustParse("wimse://a.example/ops/alice"))
	if err != nil {
		t.Fatal(err)
	}
	a = openLink(t, client(), s.LoginURL, nil)
	cks := (&http.Response{Header: a.header}).Cookies()
	if len(cks) != 1 || cks[0].Name != "__Host-dialogtrust-session" || !cks[0].Secure || !cks[0].HttpOnly || cks[0].Path != "/" || cks[0].Domain != "" || cks[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("the session cookie under TLS: %+v", cks)
	}
}
