package wic

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// FuzzIdentifierFromCertDER feeds arbitrary DER to the parser, IdentifierFromCert and
// Verify. None may panic, and every rejection must carry a code (never unmapped).
func FuzzIdentifierFromCertDER(f *testing.F) {
	ca := newTestCA(f, "ES256", t0.Add(-time.Hour), t0.Add(time.Hour))
	good, _ := ca.issue(f, "ES256", wl, t0, t0.Add(time.Hour))
	two := ca.custom(f, &x509.Certificate{ExtraExtensions: []pkix.Extension{rawSAN([]string{wl, wl}, "x.example")}}, newKey(f, "EdDSA").Public())
	for _, s := range [][]byte{good, two, ca.der, []byte("not a certificate"), {0x30, 0x80}, {}} {
		f.Add(s)
	}
	dir, _ := filepath.Abs("../cmd/dialogtrust/internal/conformance/testdata/wimsey/mtls")
	for _, name := range []string{"wic-es256.json", "wic-eddsa.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var v struct {
			WIC string `json:"wic_der_b64u"`
			CA  string `json:"ca_certificate_der_b64u"`
		}
		_ = json.Unmarshal(raw, &v)
		for _, s := range []string{v.WIC, v.CA} {
			if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
				f.Add(b)
			}
		}
	}
	roots := ca.roots()
	f.Fuzz(func(t *testing.T, der []byte) {
		if len(der) > 8<<10 {
			return
		}
		if cert, err := x509.ParseCertificate(der); err == nil {
			id, err := IdentifierFromCert(cert)
			if err == nil && id.IsZero() {
				t.Fatal("IdentifierFromCert returned a zero identifier without an error")
			}
			if err != nil && errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("unmapped rejection: %v", err)
			}
		}
		id, err := Verify(der, [][]byte{der}, roots, t0, WithTrustDomain("example.org"))
		if err == nil && !id.MemberOf("example.org") {
			t.Fatalf("accepted %s outside the trust domain", id)
		}
		if err != nil && errcode.CodeOf(err) == errcode.Unmapped {
			t.Fatalf("unmapped rejection: %v", err)
		}
	})
}
