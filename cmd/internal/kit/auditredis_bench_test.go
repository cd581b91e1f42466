package kit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// BenchmarkAuditSinkCPU: the process CPU (user and system, every thread: go-redis's
// and the runtime's threads count, and the kernel's loopback work done for this
// process) of one record appended to each sink, with `conc` goroutines appending at
// once (1: one request at a time; 4, 16, 64: a loaded TTS), file and Redis rounds
// interleaved in one run:
//
//	DIALOGTRUST_TEST_REDIS=127.0.0.1:6379 go test -run '^$' -bench AuditSinkCPU -benchtime 400x -count 3 ./cmd/internal/kit/
//
// Each iteration is a file round and a Redis round (their order alternating) of conc
// goroutines × 16 records each; it reports the mean and the median per record of each
// side (file-cpu-ns/record, redis-cpu-ns/record, ...-median), redis/file, and the
// records per XADD (redis-records/xadd: the group commit). With conc=1 it also measures
// the floor of a round trip in the same run: one bare XADD of the same line through the
// same go-redis client (floor-xadd-cpu-ns) and one PING on a plain TCP connection
// (floor-ping-cpu-ns). The TTS's own cost per token is BenchmarkIssueAuditRatio's
// (package tts, docs/performance.md).
func BenchmarkAuditSinkCPU(b *testing.B) {
	for _, conc := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) { benchAuditSinks(b, conc) })
	}
}

// countingBatchSink counts the writes of the Redis sink.
type countingBatchSink struct {
	audit.BatchSink
	writes, records atomic.Int64
}

func (c *countingBatchSink) WriteBatch(lines [][]byte) error {
	c.writes.Add(1)
	c.records.Add(int64(len(lines)))
	return c.BatchSink.WriteBatch(lines)
}

func benchEntry() *audit.Entry {
	return &audit.Entry{Decision: audit.Issued, Handler: "tts", RequestID: "0123456789abcdef", Rule: "agents", Grant: "token_exchange",
		Txn: "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", Dialog: "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", ReqWL: "wimse://a.example/agent/a1",
		Requester: "wimse://a.example/agent/a1", SubjectSHA256: "HEFFdhfH1ZJsS0KLH-vlpFPEKlrKyEfw3ZfW0pYw9mY", IssuedSHA256: "HEFFdhfH1ZJsS0KLH-vlpFPEKlrKyEfw3ZfW0pYw9mY",
		Subject: "alice", Scopes: []string{"trip.read"}, Audience: []string{"a.example"}, KID: "k1"}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchAuditSinks(b *testing.B, conc int) {
	const perWorker = 16
	addr := testkit.RedisAddr(b)
	k, _ := keys.Generate(keys.ES256)
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{addr}, Prefix: fmt.Sprintf("audit-bench-%d:", time.Now().UnixNano())}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{}
	defer s.Close()
	floorKey := st.sc.Redis.Prefix + "floor"
	s.OnClose(func() { st.client.Del(context.Background(), st.sc.Redis.Prefix+"audit", floorKey); st.Close() })
	rs, err := newRedisStreamSink(st, "")
	if err != nil {
		b.Fatal(err)
	}
	counted := &countingBatchSink{BatchSink: rs}
	rl, err := audit.New(counted, audit.FixedKey(k), audit.WithCheckpointInterval(time.Second), audit.WithLogger(logger))
	if err != nil {
		b.Fatal(err)
	}
	s.OnClose(func() { _ = rl.Close() })
	fl, err := OpenAudit(context.Background(), s, &AuditConfig{Sink: AuditSinkFile, Path: filepath.Join(b.TempDir(), "a.log"), CheckpointInterval: time.Second}, nil, audit.FixedKey(k), nil, logger)
	if err != nil {
		b.Fatal(err)
	}
	round := func(l *audit.Log) time.Duration {
		var wg sync.WaitGroup
		c0 := processCPU()
		for range conc {
			wg.Go(func() {
				for range perWorker {
					if err := l.Append(benchEntry()); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
		return processCPU() - c0
	}
	var ping net.Conn
	var pingR *bufio.Reader
	line := append(benchEntry().AppendJSON(nil), '\n')
	if conc == 1 {
		if ping, err = net.Dial("tcp", addr); err != nil {
			b.Fatal(err)
		}
		defer ping.Close()
		pingR = bufio.NewReader(ping)
	}
	floor := func() (xadd, pong time.Duration) {
		c0 := processCPU()
		for range perWorker {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := st.client.XAdd(ctx, &redis.XAddArgs{Stream: floorKey, Values: []any{"l", line[:len(line)-1]}}).Err()
			cancel()
			if err != nil {
				b.Fatal(err)
			}
		}
		c1 := processCPU()
		for range perWorker {
			if _, err := ping.Write([]byte("PING\r\n")); err != nil {
				b.Fatal(err)
			}
			if _, err := pingR.ReadString('\n'); err != nil {
				b.Fatal(err)
			}
		}
		return c1 - c0, processCPU() - c1
	}
	per := float64(conc * perWorker)
	cf, cr, cx, cp := make([]time.Duration, b.N), make([]time.Duration, b.N), make([]time.Duration, b.N), make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			cf[i], cr[i] = round(fl), round(rl)
		} else {
			cr[i], cf[i] = round(rl), round(fl)
		}
		if conc == 1 {
			cx[i], cp[i] = floor()
		}
	}
	b.StopTimer()
	sum := func(d []time.Duration) float64 {
		var t time.Duration
		for _, x := range d {
			t += x
		}
		return float64(t.Nanoseconds()) / float64(len(d)) / per
	}
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Nanoseconds()) / per
	}
	b.ReportMetric(sum(cf), "file-cpu-ns/record")
	b.ReportMetric(sum(cr), "redis-cpu-ns/record")
	b.ReportMetric(med(cf), "file-cpu-median-ns/record")
	b.ReportMetric(med(cr), "redis-cpu-median-ns/record")
	b.ReportMetric(sum(cr)/sum(cf), "redis/file")
	b.ReportMetric(float64(counted.records.Load())/float64(counted.writes.Load()), "redis-records/xadd")
	if conc == 1 {
		b.ReportMetric(med(cx), "floor-xadd-cpu-median-ns")
		b.ReportMetric(med(cp), "floor-ping-cpu-median-ns")
	}
	b.ReportMetric(0, "ns/op")
}
