package tts

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// The audit trail's cost at the TTS (issue 26: audit records cost at most 10% more
// server CPU per token), measured in one run:
//
//	go test -run '^$' -bench 'IssueAuditRatio' -benchtime 3000x -count 3 ./tts/
//
// BenchmarkIssueAuditRatio runs the whole handler (as BenchmarkIssueTxnToken, warm WIT
// and subject caches) without and with an audit.Log on a file (one write(2) per record,
// a signed checkpoint every second), interleaved one request each in turn, and reports
// audit-cpu-% = 100 × with / without from the serving thread's CPU time (threadCPU)
// and its median per request (audit-cpu-median-%), as the AuthZEN ratio does.

// benchAudit, when set, makes benchEnv's TTS write an audit trail.
var benchAudit func(b *testing.B, ring *keys.Ring) oauth.Auditor

func fileAuditor(b *testing.B, ring *keys.Ring) oauth.Auditor {
	sink, err := audit.OpenFile(filepath.Join(b.TempDir(), "audit.log"), 64<<20, nil)
	if err != nil {
		b.Fatal(err)
	}
	l, err := audit.New(sink, ring, audit.WithCheckpointInterval(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return l
}

func auditIssuerParts(b *testing.B, bc benchCase, with bool) (mint func() string,
	prepare func(string) (*http.Request, *httptest.ResponseRecorder), serve func(*http.Request, *httptest.ResponseRecorder)) {
	saved := benchAudit
	benchAudit = nil
	if with {
		benchAudit = fileAuditor
	}
	defer func() { benchAudit = saved }()
	_, mint, prepare, serve = issuerParts(b, bc, true)
	return mint, prepare, serve
}

func BenchmarkIssueAuditRatio(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			mint0, prepare0, serve0 := auditIssuerParts(b, bc, false)
			mint1, prepare1, serve1 := auditIssuerParts(b, bc, true)
			p0, p1 := make([]string, b.N), make([]string, b.N)
			for i := range p0 {
				p0[i], p1[i] = mint0(), mint1()
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var without, with, cpuWithout, cpuWith time.Duration
			cw, cwo := make([]time.Duration, b.N), make([]time.Duration, b.N)
			_, cpuOK := threadCPU()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k := range 2 {
					if (i+k)%2 == 0 {
						req, rec := prepare0(p0[i])
						c0, _ := threadCPU()
						t0 := time.Now()
						serve0(req, rec)
						without += time.Since(t0)
						c1, _ := threadCPU()
						cwo[i] = c1 - c0
						cpuWithout += cwo[i]
					} else {
						req, rec := prepare1(p1[i])
						c0, _ := threadCPU()
						t0 := time.Now()
						serve1(req, rec)
						with += time.Since(t0)
						c1, _ := threadCPU()
						cw[i] = c1 - c0
						cpuWith += cw[i]
					}
				}
			}
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(without.Nanoseconds())/n, "without-ns/op")
			b.ReportMetric(float64(with.Nanoseconds())/n, "with-ns/op")
			b.ReportMetric(100*float64(with)/float64(without), "audit-wall-%")
			if cpuOK {
				b.ReportMetric(float64(cpuWithout.Nanoseconds())/n, "without-cpu-ns/op")
				b.ReportMetric(float64(cpuWith.Nanoseconds())/n, "with-cpu-ns/op")
				b.ReportMetric(100*float64(cpuWith)/float64(cpuWithout), "audit-cpu-%")
				b.ReportMetric(100*float64(median(cw))/float64(median(cwo)), "audit-cpu-median-%")
			}
		})
	}
}
