package redisstore

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// processCPU is this process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRedisClaimConcurrent claims from 8 goroutines per GOMAXPROCS (16 on two
// cores, the TTS's load in docs/performance.md) and reports this process's CPU per
// claim, what the TTS pays per token (redis-server's own CPU is not in it).
func BenchmarkRedisClaimConcurrent(b *testing.B) {
	addr := os.Getenv(testRedisEnv)
	if addr == "" {
		b.Skipf("%s is not set", testRedisEnv)
	}
	client, prefix := newTestRedis(b, addr)
	r := NewReplay(client, WithPrefix(prefix))
	if err := r.Claim(context.Background(), "warm", time.Second); err != nil {
		b.Fatal(err)
	}
	var id atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	cpu0 := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := r.Claim(context.Background(), fmt.Sprintf("bench-jti-%d", id.Add(1)), 2*time.Second); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N)/1e3, "cpu-µs/claim")
}
