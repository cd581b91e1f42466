package tts

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
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
// audit-cpu-% = 100 × with / without from the serving thread's CPU time (testkit.ThreadCPU)
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
			var without, with benchSide
			without.mint, without.prepare, without.serve = auditIssuerParts(b, bc, false)
			with.mint, with.prepare, with.serve = auditIssuerParts(b, bc, true)
			interleavedRatio(b, "audit", without, with)
		})
	}
}
