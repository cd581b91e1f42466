package bench

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

var msg = []byte("eyJ0eXAiOiJ3aXQrand0IiwiYWxnIjoiRVMyNTYiLCJraWQiOiJpc3N1ZXIta2V5LTEifQ.eyJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIiwic3ViIjoic3BpZmZlOi8vZXhhbXBsZS5vcmcvd29ya2xvYWQvYXBpIiwiaWF0IjoxNzAwMDAwMDAwLCJleHAiOjE3MDAwMDM2MDAsImp0aSI6ImExYjJjMyJ9")

func BenchmarkRawES256Sign(b *testing.B) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	b.ReportAllocs()
	for b.Loop() {
		h := sha256.Sum256(msg)
		if _, err := ecdsa.SignASN1(rand.Reader, k, h[:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawES256Verify(b *testing.B) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	h := sha256.Sum256(msg)
	sig, _ := ecdsa.SignASN1(rand.Reader, k, h[:])
	b.ReportAllocs()
	for b.Loop() {
		h := sha256.Sum256(msg)
		if !ecdsa.VerifyASN1(&k.PublicKey, h[:], sig) {
			b.Fatal("verify")
		}
	}
}

func BenchmarkRawEd25519Sign(b *testing.B) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	b.ReportAllocs()
	for b.Loop() {
		ed25519.Sign(k, msg)
	}
}

func BenchmarkRawEd25519Verify(b *testing.B) {
	pub, k, _ := ed25519.GenerateKey(rand.Reader)
	sig := ed25519.Sign(k, msg)
	b.ReportAllocs()
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("verify")
		}
	}
}

func algName(alg string) string {
	if alg == keys.ES256 {
		return "ES256"
	}
	return "Ed25519"
}

// perAlg runs f as one sub-benchmark per algorithm (named by algName, then suffix) with
// the workload /agent/a1 of a.example, its clock at testkit.Epoch.
func perAlg(b *testing.B, suffix string, f func(b *testing.B, clock *testkit.Clock, d *testkit.Domain, w *testkit.Workload)) {
	for _, alg := range []string{keys.ES256, keys.EdDSA} {
		b.Run(algName(alg)+suffix, func(b *testing.B) {
			clock := testkit.NewClock(testkit.Epoch)
			d := testkit.NewDomain(b, "a.example", alg, clock)
			f(b, clock, d, d.Workload(b, "/agent/a1", alg))
		})
	}
}

// validatorOpts: a validated-WIT cache when cached, else none.
func validatorOpts(cached bool) []wit.ValidatorOption {
	if cached {
		return []wit.ValidatorOption{wit.WithCache(1024, time.Minute)}
	}
	return nil
}

// BenchmarkWITVerify: one raw verification's worth of work plus parsing and checks.
func BenchmarkWITVerify(b *testing.B) {
	perAlg(b, "", func(b *testing.B, clock *testkit.Clock, d *testkit.Domain, w *testkit.Workload) {
		v := d.Validator()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Validate(ctx, w.WIT); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkWPTMint(b *testing.B) {
	perAlg(b, "", func(b *testing.B, clock *testkit.Clock, d *testkit.Domain, w *testkit.Workload) {
		txn, dc := "txn.token.value", `dlg="D1", initiator="wimse://a.example/agent/a1"`
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wpt.New(w.Key, w.WIT, "https://tool.a.example/invoke", wpt.Bound{TxnToken: &txn, DialogContext: &dc}, wpt.WithClock(clock.Now)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWITPlusWPTVerify is the receiver's proof path: validate the WIT, then the WPT
// made with its key (two raw verifications). Replay claims are measured in store.
func BenchmarkWITPlusWPTVerify(b *testing.B) { benchWITPlusWPT(b, false) }

// BenchmarkWITPlusWPTVerifyCached: the same path with a validated-WIT cache, the
// steady state of a receiver that sees a workload's WIT again: one raw verification
// (the proof) remains.
func BenchmarkWITPlusWPTVerifyCached(b *testing.B) { benchWITPlusWPT(b, true) }

func benchWITPlusWPT(b *testing.B, cached bool) {
	perAlg(b, "", func(b *testing.B, clock *testkit.Clock, d *testkit.Domain, w *testkit.Workload) {
		txn, dc := "txn.token.value", `dlg="D1", initiator="wimse://a.example/agent/a1"`
		bound := wpt.Bound{TxnToken: &txn, DialogContext: &dc}
		p, _ := wpt.New(w.Key, w.WIT, "https://tool.a.example/invoke", bound, wpt.WithClock(clock.Now), wpt.WithTTL(time.Minute))
		v := wpt.NewVerifier(d.Validator(validatorOpts(cached)...), wpt.WithAudiences("https://tool.a.example/invoke"))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(ctx, w.WIT, p, bound); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchBody is the body of the benchmark request.
var benchBody = []byte(`{"task":"book","amount":100}`)

// benchRequest is the benchmark request to the tool, not yet signed.
func benchRequest() *http.Request {
	req := httptest.NewRequest("POST", "https://tool.a.example/invoke", bytes.NewReader(benchBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Txn-Token", "txn.token.value")
	req.Header.Set("Dialog-Context", `dlg="D1", initiator="wimse://a.example/agent/a1"`)
	return req
}

// signedRequest is benchRequest signed by w; it returns the body for each reuse.
func signedRequest(b *testing.B, w *testkit.Workload, clock *testkit.Clock) (*http.Request, []byte) {
	req := benchRequest()
	if _, err := httpsig.NewSigner(w.Key, w.WIT, httpsig.WithClock(clock.Now)).SignRequest(req, "https://tool.a.example/invoke"); err != nil {
		b.Fatal(err)
	}
	return req, benchBody
}

func BenchmarkRequestSign(b *testing.B) {
	perAlg(b, "", func(b *testing.B, clock *testkit.Clock, d *testkit.Domain, w *testkit.Workload) {
		s := httpsig.NewSigner(w.Key, w.WIT, httpsig.WithClock(clock.Now))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.SignRequest(benchRequest(), "https://tool.a.example/invoke"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRequestVerify is the receiver's WIT + HTTP signature path (cold: no WIT
// cache; two raw verifications) and warm (WIT cached; one raw verification).
func BenchmarkRequestVerify(b *testing.B) {
	for _, cached := range []bool{false, true} {
		name := "/cold"
		if cached {
			name = "/cached"
		}
		perAlg(b, name, func(b *testing.B, clock *testkit.Clock, d *testkit.Domain, w *testkit.Workload) {
			req, body := signedRequest(b, w, clock)
			v := httpsig.NewVerifier(d.Validator(validatorOpts(cached)...), httpsig.WithAudiences("https://tool.a.example/invoke"))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				req.Body = io.NopCloser(bytes.NewReader(body))
				if _, err := v.VerifyRequest(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSignatureBaseCrypto is the signature check alone of BenchmarkRequestVerify
// (cached): one raw verification, but over the real signature base of the benchmark
// request (about 1.1 KB, the WIT included) instead of the short message of the Raw
// benchmarks. The difference from RawVerify is the hashing of the longer message;
// RequestVerify/cached minus this is the non-crypto work of the path.
func BenchmarkSignatureBaseCrypto(b *testing.B) {
	perAlg(b, "", func(b *testing.B, clock *testkit.Clock, d *testkit.Domain, w *testkit.Workload) {
		req, body := signedRequest(b, w, clock)
		v := httpsig.NewVerifier(d.Validator(), httpsig.WithAudiences("https://tool.a.example/invoke"))
		req.Body = io.NopCloser(bytes.NewReader(body))
		res, err := v.VerifyRequest(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if !res.WIT.Key.Verify(res.Base, res.Signature) {
				b.Fatal("verify")
			}
		}
	})
}
