package wic

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

var algs = []string{"ES256", "EdDSA"}

// t0 is a fixed verification instant; nothing in these tests reads the wall clock except
// the TLS handshake, which crypto/tls runs at time.Now.
var t0 = time.Unix(1700000000, 0)

func newKey(t testing.TB, alg string) crypto.Signer {
	t.Helper()
	switch alg {
	case "ES256":
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	case "EdDSA":
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	t.Fatalf("unknown alg %s", alg)
	return nil
}

type testCA struct {
	key  crypto.Signer
	der  []byte
	cert *x509.Certificate
}

func newTestCA(t testing.TB, alg string, notBefore, notAfter time.Time) testCA {
	t.Helper()
	key := newKey(t, alg)
	der, err := NewCA(key, notBefore, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{key, der, cert}
}

func (ca testCA) roots() []*x509.Certificate { return []*x509.Certificate{ca.cert} }

// issue makes a WIC in the conformance layout for a fresh key of alg.
func (ca testCA) issue(t testing.TB, alg, id string, notBefore, notAfter time.Time) ([]byte, crypto.Signer) {
	t.Helper()
	key := newKey(t, alg)
	der, err := IssueWIC(ca.key, ca.der, key.Public(), identifier.MustParse(id), notBefore, notAfter)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// custom issues a certificate from tmpl with crypto/x509, for shapes IssueWIC refuses to
// make (several URI SANs, raw non-canonical SANs, CA leaves, intermediates).
func (ca testCA) custom(t testing.TB, tmpl *x509.Certificate, pub crypto.PublicKey) []byte {
	t.Helper()
	if tmpl.SerialNumber == nil {
		tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	}
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore, tmpl.NotAfter = t0.Add(-time.Hour), t0.Add(time.Hour)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// rawSAN builds a subjectAltName extension from exact URI and DNS strings, so a test can
// put a spelling into a certificate that url.URL would never produce.
func rawSAN(uris []string, dns ...string) pkix.Extension {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		for _, d := range dns {
			b.AddASN1(cbasn1.Tag(2).ContextSpecific(), func(b *cryptobyte.Builder) { b.AddBytes([]byte(d)) })
		}
		for _, u := range uris {
			b.AddASN1(cbasn1.Tag(6).ContextSpecific(), func(b *cryptobyte.Builder) { b.AddBytes([]byte(u)) })
		}
	})
	return pkix.Extension{Id: oidSubjectAltName, Value: b.BytesOrPanic()}
}

func wantCode(t testing.TB, err error, want errcode.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want %s", want)
	}
	var e *errcode.Error
	if !errorsAs(err, &e) {
		t.Fatalf("error %v is not an *errcode.Error", err)
	}
	if e.Code != want {
		t.Fatalf("code %s, want %s (%v)", e.Code, want, err)
	}
}

func errorsAs(err error, target **errcode.Error) bool {
	e, ok := err.(*errcode.Error)
	if ok {
		*target = e
	}
	return ok
}
