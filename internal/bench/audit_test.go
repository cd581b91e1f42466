package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// BenchmarkReceiverAuditRatio is issue 26's question for receivers: what does
// dialog.WithAuditor (one record per request, to a file sink: one write(2) per
// record, a signed checkpoint every second) add to a receiver's verify? Each iteration
// runs the same HTTP-signed request through two receivers alike but for the auditor,
// one after the other, the order alternating, and measures each Middleware call (the
// request verified, the record written, an empty handler) with the serving thread's
// CPU clock (testkit.ThreadCPU: user and system time, so the write(2) counts; wall time where
// it cannot be read), as the TTS's audit ratio does. "signature" is the cheapest real
// path (the WIT cached, a Dialog-Context, no Txn-Token), where the record weighs most;
// "signature+txn" adds a Txn-Token the receiver verifies and the record names (its
// claims and SHA-256). ratio-x is the audited receiver's time over the other's.
func BenchmarkReceiverAuditRatio(b *testing.B) {
	for _, alg := range []string{keys.ES256, keys.EdDSA} {
		for _, withTxn := range []bool{false, true} {
			name := algName(alg) + "/signature"
			if withTxn {
				name += "+txn"
			}
			b.Run(name, func(b *testing.B) { benchReceiverAudit(b, alg, withTxn) })
		}
	}
}

func benchReceiverAudit(b *testing.B, alg string, withTxn bool) {
	clock := testkit.NewClock(testkit.Epoch)
	d := testkit.NewDomain(b, "a.example", alg, clock)
	w := d.Workload(b, "/agent/a1", alg)
	self := d.Workload(b, "/tool/t1", alg)
	ttsKey, err := keys.Generate(alg)
	if err != nil {
		b.Fatal(err)
	}
	const aud = "https://tool.a.example/invoke"
	body := []byte(`{"task":"book","amount":100}`)
	req := httptest.NewRequest("POST", aud, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Dialog-Context", `dlg="D1", initiator="wimse://a.example/agent/a1"`)
	if withTxn {
		now := clock.Now().Unix()
		tok, err := jose.SignClaims(txntoken.Type, ttsKey, true, map[string]any{"iss": "https://tts.a.example", "iat": now,
			"exp": now + 300, "aud": "a.example", "txn": "97053963-771d-49cc-a4e3-20aad399c312", "sub": "user@a.example",
			"scope": "trip.book", "req_wl": w.ID.String(), "tctx": map[string]any{"dlg": "D1"}})
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set(txntoken.HeaderName, tok)
	}
	if _, err := httpsig.NewSigner(w.Key, w.WIT, httpsig.WithClock(clock.Now)).SignRequest(req, aud); err != nil {
		b.Fatal(err)
	}
	ttsKeys, _ := keys.NewStaticSet(ttsKey.Public())
	receiver := func(more ...dialog.ReceiverOption) http.Handler {
		rc, err := dialog.NewReceiver(append([]dialog.ReceiverOption{
			dialog.WithHTTPSignatures(httpsig.NewVerifier(d.Validator(wit.WithCache(1024, time.Minute)), httpsig.WithAudiences(aud), httpsig.WithClock(clock.Now))),
			dialog.WithTxnTokens(txntoken.NewVerifier(ttsKeys, "a.example", txntoken.WithClock(clock.Now))),
		}, more...)...)
		if err != nil {
			b.Fatal(err)
		}
		return rc.Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	}
	sink, err := audit.OpenFile(filepath.Join(b.TempDir(), "audit.log"), 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	l, err := audit.New(sink, audit.FixedKey(self.Key), audit.WithWriter("t1"), audit.WithCheckpointInterval(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	plain, audited := receiver(), receiver(dialog.WithAuditor(l, self.ID))
	ctx := context.Background()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	run := func(h http.Handler) time.Duration {
		r := req.Clone(ctx)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		c0, cpu := testkit.ThreadCPU()
		t0 := time.Now()
		h.ServeHTTP(rec, r)
		el := time.Since(t0)
		if c1, ok := testkit.ThreadCPU(); cpu && ok {
			el = c1 - c0
		}
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		return el
	}
	run(plain)
	run(audited) // caches warm, as a running receiver's are
	var without, with time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			without += run(plain)
			with += run(audited)
		} else {
			with += run(audited)
			without += run(plain)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(without.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(with.Nanoseconds())/float64(b.N), "audited-cpu-ns/op")
	b.ReportMetric(float64(with)/float64(without), "ratio-x")
}
