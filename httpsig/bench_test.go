package httpsig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"io"
	"math/big"
	"net/http"
	"testing"

	"github.com/dialogtrust/dialogtrust/keys"
)

// The verification budget: WIT + proof verification at most 1.3x the two raw signature
// verifications it needs (the issuer's over the WIT and the workload's over the base).
// Compare BenchmarkVerifyRequest* with 2x BenchmarkRawVerify* of the same run; the
// fixtures use one algorithm for issuer and workload.

const benchBody = `{"amount":100,"currency":"EUR","to":"DE89370400440532013000"}`

func benchSignedRequest(b *testing.B, alg string) (*fixture, *http.Request, []byte) {
	f := newFixture(b, alg)
	req := newRequest(b, http.MethodPost, testURL+"?id=42", benchBody)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Txn-Token", "eyJhbGciOiJFUzI1NiJ9.eyJ0eG4iOiIxIn0.c2ln")
	if _, err := f.client.signer.SignRequest(req, testAudience); err != nil {
		b.Fatal(err)
	}
	srv := onTheWire(b, req)
	body, _ := io.ReadAll(srv.Body)
	return f, srv, body
}

func benchSign(b *testing.B, alg string) {
	f := newFixture(b, alg)
	body := []byte(benchBody)
	req := newRequest(b, http.MethodPost, testURL+"?id=42", "")
	req.Header.Set("Content-Type", "application/json")
	eachWithBody(b, req, body, func() {
		req.GetBody = nil
		if _, err := f.client.signer.SignRequest(req, testAudience); err != nil {
			b.Fatal(err)
		}
	})
}

func benchVerify(b *testing.B, alg string) {
	f, req, body := benchSignedRequest(b, alg)
	v := f.verifier()
	eachWithBody(b, req, body, func() {
		if _, err := v.VerifyRequest(ctx, req); err != nil {
			b.Fatal(err)
		}
	})
}

// eachWithBody runs op once an iteration, timed from here, with req's body a fresh
// reader over body each time.
func eachWithBody(b *testing.B, req *http.Request, body []byte, op func()) {
	rd := bytes.NewReader(body)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		op()
	}
}

func BenchmarkSignRequestES256(b *testing.B)     { benchSign(b, keys.ES256) }
func BenchmarkSignRequestEd25519(b *testing.B)   { benchSign(b, keys.EdDSA) }
func BenchmarkVerifyRequestES256(b *testing.B)   { benchVerify(b, keys.ES256) }
func BenchmarkVerifyRequestEd25519(b *testing.B) { benchVerify(b, keys.EdDSA) }

// benchBase is a message of the size of a real signature base.
var benchBase = bytes.Repeat([]byte("a"), 700)

func BenchmarkRawVerifyES256(b *testing.B) {
	k, _ := keys.Generate(keys.ES256)
	sig, _ := k.Sign(benchBase)
	pub := k.Public().Crypto().(*ecdsa.PublicKey)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h := sha256.Sum256(benchBase)
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if !ecdsa.Verify(pub, h[:], r, s) {
			b.Fatal("verify")
		}
	}
}

func BenchmarkRawVerifyEd25519(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	sig := ed25519.Sign(priv, benchBase)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if !ed25519.Verify(pub, benchBase, sig) {
			b.Fatal("verify")
		}
	}
}
