package wic

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
)

// The wimsey mtls vectors, in the conformance runner's testdata. The conformance
// runner (cmd/dialogtrust/internal/conformance/mtls.go) is the authority; this copy
// keeps the package's own tests honest about byte equality when run alone.
func mtlsVectors(t testing.TB) map[string][]byte {
	t.Helper()
	dir, _ := filepath.Abs("../cmd/dialogtrust/internal/conformance/testdata/wimsey/mtls")
	out := map[string][]byte{}
	for _, f := range []string{"wic-es256.json", "wic-eddsa.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("vectors not found: %v", err)
		}
		out[f] = b
	}
	return out
}

type vec struct {
	CASigningKey       json.RawMessage `json:"ca_signing_key"`
	CANotBefore        int64           `json:"ca_not_before"`
	CANotAfter         int64           `json:"ca_not_after"`
	WorkloadSigningKey json.RawMessage `json:"workload_signing_key"`
	Identifier         string          `json:"identifier"`
	NotBefore          int64           `json:"not_before"`
	NotAfter           int64           `json:"not_after"`
	CA                 string          `json:"ca_certificate_der_b64u"`
	WIC                string          `json:"wic_der_b64u"`
	VerifyNow          int64           `json:"verify_now"`
	Negative           []struct {
		ID, Expect string
		CA         string `json:"ca_certificate_der_b64u"`
		WIC        string `json:"wic_der_b64u"`
		VerifyNow  int64  `json:"verify_now"`
	}
}

func unb64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMutualTLS02Sec3_VectorsByteExact(t *testing.T) {
	for name, raw := range mtlsVectors(t) {
		t.Run(name, func(t *testing.T) {
			var v vec
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			caKey, err := keys.ParsePrivateJWK(v.CASigningKey)
			if err != nil {
				t.Fatal(err)
			}
			wlKey, err := keys.ParsePrivateJWK(v.WorkloadSigningKey)
			if err != nil {
				t.Fatal(err)
			}
			caDER, err := NewCA(caKey.Signer(), time.Unix(v.CANotBefore, 0), time.Unix(v.CANotAfter, 0))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(caDER, unb64(t, v.CA)) {
				t.Fatalf("CA differs:\n got %x\nwant %x", caDER, unb64(t, v.CA))
			}
			wicDER, err := IssueWIC(caKey.Signer(), caDER, wlKey.Public().Crypto(), identifier.MustParse(v.Identifier),
				time.Unix(v.NotBefore, 0), time.Unix(v.NotAfter, 0))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(wicDER, unb64(t, v.WIC)) {
				t.Fatalf("WIC differs:\n got %x\nwant %x", wicDER, unb64(t, v.WIC))
			}
			ca, _ := x509.ParseCertificate(caDER)
			id, err := Verify(wicDER, nil, []*x509.Certificate{ca}, time.Unix(v.VerifyNow, 0))
			if err != nil || id.String() != v.Identifier {
				t.Fatalf("verify: %v %v", id, err)
			}
			for _, n := range v.Negative {
				caB, wicB, now := v.CA, v.WIC, v.VerifyNow
				if n.CA != "" {
					caB = n.CA
				}
				if n.WIC != "" {
					wicB = n.WIC
				}
				if n.VerifyNow != 0 {
					now = n.VerifyNow
				}
				root, err := x509.ParseCertificate(unb64(t, caB))
				if err != nil {
					t.Fatal(err)
				}
				_, err = Verify(unb64(t, wicB), nil, []*x509.Certificate{root}, time.Unix(now, 0))
				if got := errcode.CodeOf(err); string(got) != n.Expect {
					t.Errorf("%s: %v, want %s", n.ID, err, n.Expect)
				}
			}
		})
	}
}
