package redisstore

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dialogtrust/dialogtrust/store"
)

// processCPU is this process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is redis-server's user and system CPU time so far, as INFO cpu reports it
// (the server's own getrusage, in microseconds).
func serverCPU(tb testing.TB, client redis.UniversalClient) time.Duration {
	info, err := client.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var total time.Duration
	for line := range strings.SplitSeq(info, "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_sys" && name != "used_cpu_user") {
			continue
		}
		s, err := strconv.ParseFloat(value, 64)
		if err != nil {
			tb.Fatalf("INFO cpu %s: %v", name, err)
		}
		total += time.Duration(s * 1e9)
	}
	return total
}

// warmBenchReplay is a replay store in the Redis of DIALOGTRUST_TEST_REDIS (the
// benchmark is skipped without one) that has made its first claim, and its client.
func warmBenchReplay(b *testing.B) (*Replay, redis.UniversalClient) {
	b.Helper()
	addr := os.Getenv(testRedisEnv)
	if addr == "" {
		b.Skipf("%s is not set", testRedisEnv)
	}
	client, prefix := newTestRedis(b, addr)
	r := NewReplay(client, WithPrefix(prefix))
	if err := r.Claim(context.Background(), "warm", time.Second); err != nil {
		b.Fatal(err)
	}
	return r, client
}

// BenchmarkRedisClaimConcurrent claims from 8 goroutines per GOMAXPROCS (16 on two
// cores, the TTS's load in docs/performance.md) and reports this process's CPU per
// claim, what the TTS pays per token (redis-server's own CPU is not in it).
func BenchmarkRedisClaimConcurrent(b *testing.B) {
	r, client := warmBenchReplay(b)
	var id atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	cpu0, server0 := processCPU(b), serverCPU(b, client)
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
	b.ReportMetric(float64(serverCPU(b, client)-server0)/float64(b.N)/1e3, "redis-cpu-µs/claim")
}

// BenchmarkRedisClaimPaced claims at a fixed mean rate, pacedRate claims a second
// from pacedWorkers goroutines, each waiting an exponentially distributed time before
// its next claim (so that together they are a Poisson stream): the way requests reach
// the TTS at its load in docs/performance.md (~3000 tokens a second). Most claims
// then find no pipeline under way and travel alone, which the closed loop of
// BenchmarkRedisClaimConcurrent never shows. It reports this process's CPU per claim
// (the workers' timer wake-ups included: BenchmarkMemoryClaimPaced is that floor) and
// redis-server's (INFO cpu, which counts all of its work, the other clients' too: use
// a server of its own). Run it with -benchtime of a count: -benchtime=6000x is two
// seconds.
func BenchmarkRedisClaimPaced(b *testing.B) {
	r, client := warmBenchReplay(b)
	var batches atomic.Int64
	r.batchHook = func(int) { batches.Add(1) }
	server0 := serverCPU(b, client)
	claimPaced(b, r)
	b.ReportMetric(float64(serverCPU(b, client)-server0)/float64(b.N)/1e3, "redis-cpu-µs/claim")
	b.ReportMetric(float64(b.N)/float64(batches.Load()), "claims/batch")
}

// BenchmarkMemoryClaimPaced is BenchmarkRedisClaimPaced with the memory store: the CPU
// per claim of the pacing itself (timers, goroutine wake-ups) and of a claim without a
// round trip, the floor under the Redis store's number.
func BenchmarkMemoryClaimPaced(b *testing.B) {
	claimPaced(b, store.NewMemory())
}

// claimPaced runs b.N claims on r at pacedRate from pacedWorkers goroutines and reports
// this process's CPU per claim and the claims' median and 99th percentile latency.
func claimPaced(b *testing.B, r store.Replay) {
	const (
		pacedWorkers = 16
		pacedRate    = 3000
	)
	mean := float64(pacedWorkers * time.Second / pacedRate)
	var (
		id, handed atomic.Int64
		wg         sync.WaitGroup
	)
	latencies := make([]time.Duration, b.N)
	b.ReportAllocs()
	cpu0 := processCPU(b)
	b.ResetTimer()
	start := time.Now()
	for w := range pacedWorkers {
		wg.Go(func() {
			rng := mrand.New(mrand.NewPCG(uint64(w), 1))
			next := start
			for n := handed.Add(1); n <= int64(b.N); n = handed.Add(1) {
				// An absolute schedule, so that slow claims do not lower the rate.
				next = next.Add(time.Duration(rng.ExpFloat64() * mean))
				time.Sleep(time.Until(next))
				t0 := time.Now()
				if err := r.Claim(context.Background(), fmt.Sprintf("bench-jti-%d", id.Add(1)), 2*time.Second); err != nil {
					b.Error(err)
					return
				}
				latencies[n-1] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N)/1e3, "cpu-µs/claim")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "claims/s")
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(latencies[len(latencies)*99/100])/1e3, "p99-µs")
}
