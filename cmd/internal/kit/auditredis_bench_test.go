package kit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// BenchmarkAuditSinkCPU: the process CPU (user and system, every thread: go-redis's
// goroutines count) of one record appended to each sink, interleaved in one run:
//
//	DIALOGTRUST_TEST_REDIS=127.0.0.1:6379 go test -run '^$' -bench AuditSinkCPU -benchtime 5000x ./cmd/internal/kit/
//
// It reports file-cpu-ns/record, redis-cpu-ns/record and their ratio; the TTS's own
// cost per token is BenchmarkIssueAuditRatio's (package tts, docs/performance.md).
func BenchmarkAuditSinkCPU(b *testing.B) {
	addr := testkit.RedisAddr(b)
	k, _ := keys.Generate(keys.ES256)
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{addr}, Prefix: fmt.Sprintf("audit-bench-%d:", time.Now().UnixNano())}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{}
	defer s.Close()
	s.OnClose(func() { st.client.Del(context.Background(), st.sc.Redis.Prefix+"audit"); st.Close() })
	rl, err := OpenAudit(context.Background(), s, &AuditConfig{Sink: AuditSinkRedis}, st, ringKey{k}, nil, logger)
	if err != nil {
		b.Fatal(err)
	}
	fl, err := OpenAudit(context.Background(), s, &AuditConfig{Sink: AuditSinkFile, Path: filepath.Join(b.TempDir(), "a.log")}, nil, ringKey{k}, nil, logger)
	if err != nil {
		b.Fatal(err)
	}
	entry := func() *audit.Entry {
		return &audit.Entry{Decision: audit.Issued, Handler: "tts", RequestID: "0123456789abcdef", Rule: "agents", Grant: "token_exchange",
			Txn: "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", Dialog: "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", ReqWL: "wimse://a.example/agent/a1",
			Requester: "wimse://a.example/agent/a1", SubjectSHA256: "HEFFdhfH1ZJsS0KLH-vlpFPEKlrKyEfw3ZfW0pYw9mY", IssuedSHA256: "HEFFdhfH1ZJsS0KLH-vlpFPEKlrKyEfw3ZfW0pYw9mY",
			Subject: "alice", Scopes: []string{"trip.read"}, Audience: []string{"a.example"}, KID: "k1"}
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var cf, cr time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c0 := cpu()
		if err := fl.Append(entry()); err != nil {
			b.Fatal(err)
		}
		c1 := cpu()
		if err := rl.Append(entry()); err != nil {
			b.Fatal(err)
		}
		c2 := cpu()
		cf, cr = cf+c1-c0, cr+c2-c1
	}
	b.StopTimer()
	b.ReportMetric(float64(cf.Nanoseconds())/float64(b.N), "file-cpu-ns/record")
	b.ReportMetric(float64(cr.Nanoseconds())/float64(b.N), "redis-cpu-ns/record")
	b.ReportMetric(float64(cr)/float64(cf), "redis/file")
}
