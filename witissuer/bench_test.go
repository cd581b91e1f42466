package witissuer_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// BenchmarkIssuanceVsCryptoFloor measures the whole POST /v1/wit handler (body parse,
// proof verification, dev authentication, policy, replay claim in memory, WIT signing,
// JSON answer) and, in the same run, the raw crypto it cannot avoid: one ES256 verify
// (the request proof) and one ES256 sign (the WIT), with crypto/ecdsa directly. The
// "x-floor" metric is handler time / floor time.
func BenchmarkIssuanceVsCryptoFloor(b *testing.B) {
	signing, _ := keys.Generate(keys.ES256)
	rot, err := keys.NewStaticRotator(signing, keys.RotationConfig{Retain: 2 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	dev, _ := witissuer.NewDev(nil, []string{"wimse://example.org/dev/"}, witissuer.DevOptions{})
	srv, err := witissuer.New(witissuer.Config{Issuer: issuerID, Keys: rot, Replay: store.NewMemory(),
		Policy: witissuer.Policy{TrustDomains: []string{td}},
		Routes: []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{dev}}}})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	cnf, _ := keys.Generate(keys.ES256)
	now := time.Now()
	bodies := make([][]byte, b.N)
	for i := range bodies {
		j, err := witissuer.NewRequestJWS(cnf, witissuer.RequestParams{Audience: issuerID, Subject: "wimse://example.org/dev/agent", Now: now, JTI: "j" + strconv.Itoa(i)})
		if err != nil {
			b.Fatal(err)
		}
		bodies[i], _ = json.Marshal(witissuer.RequestBody{Request: j})
	}

	// The floor: one P-256 verify of a request-sized signing input, one P-256 sign.
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	msg := bytes.Repeat([]byte("x"), 400)
	d := sha256.Sum256(msg)
	r0, s0, _ := ecdsa.Sign(rand.Reader, ek, d[:])

	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodPost, witissuer.PathWIT, bytes.NewReader(bodies[i]))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	handler := time.Since(start)
	b.StopTimer()

	start = time.Now()
	for i := 0; i < b.N; i++ {
		dv := sha256.Sum256(msg)
		if !ecdsa.Verify(&ek.PublicKey, dv[:], r0, s0) {
			b.Fatal("floor verify")
		}
		ds := sha256.Sum256(msg)
		if _, _, err := ecdsa.Sign(rand.Reader, ek, ds[:]); err != nil {
			b.Fatal(err)
		}
	}
	floor := time.Since(start)
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(handler)/float64(floor), "x-floor")
}
