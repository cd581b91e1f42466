package loadtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

func TestQuantileNearestRank(t *testing.T) {
	d := make([]time.Duration, 100)
	for i := range d {
		d[i] = time.Duration(100-i) * time.Millisecond
	}
	p := Summarize(d)
	if p.Min != time.Millisecond || p.Max != 100*time.Millisecond || p.P50 != 50*time.Millisecond ||
		p.P99 != 99*time.Millisecond || p.P95 != 95*time.Millisecond || p.P999 != 100*time.Millisecond {
		t.Fatalf("%+v", p)
	}
	if p.Mean != 50500*time.Microsecond || p.P99MS != 99 {
		t.Fatalf("mean %v p99 ms %v", p.Mean, p.P99MS)
	}
	if Quantile(nil, 0.5) != 0 || Summarize(nil).Samples != 0 {
		t.Fatal("empty")
	}
}

func TestRunCountsByCode(t *testing.T) {
	var n atomic.Int64
	res, err := Run(context.Background(), Config{Concurrency: 3, Duration: 100 * time.Millisecond}, func(ctx context.Context, w int) error {
		i := n.Add(1)
		time.Sleep(100 * time.Microsecond)
		switch i % 4 {
		case 1:
			return errcode.New(errcode.Replayed, "x")
		case 2:
			return errcode.Unavailable(errcode.StoreUnavailable, nil, "x")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Requests != res.OK+res.Failed || res.Errors["replayed"] == 0 || res.Errors["store_unavailable"] == 0 ||
		res.Failed != res.Errors["replayed"]+res.Errors["store_unavailable"] || res.Latency.Samples != int(res.Requests) {
		t.Fatalf("%+v", res)
	}
}

// Open loop: about Rate requests per second are made, not as many as the workers could.
func TestRunOpenLoop(t *testing.T) {
	var n atomic.Int64
	res, err := Run(context.Background(), Config{Concurrency: 4, Duration: 300 * time.Millisecond, Rate: 200}, func(context.Context, int) error {
		n.Add(1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests < 30 || res.Requests > 90 || res.Rate != 200 {
		t.Fatalf("%d requests at 200/s over 300ms: %+v", res.Requests, res)
	}
}

func TestParseText(t *testing.T) {
	s := ParseText([]byte(`# HELP process_cpu_seconds_total x
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
process_resident_memory_bytes 3.2e+07
dialogtrust_tts_issued_total{grant="token_exchange",method="wit_wpt",subject_token_type="self_signed"} 10
dialogtrust_tts_issued_total{grant="replacement",method="wit_wpt",subject_token_type="txn_token"} 5
odd{a="}"} 1
`))
	if v, ok := s.Get(ProcessCPU); !ok || v != 12.5 {
		t.Fatal(v)
	}
	if v, _ := s.Get(ProcessRSS); v != 32e6 {
		t.Fatal(v)
	}
	if v, _ := s.Get("dialogtrust_tts_issued_total"); v != 15 {
		t.Fatal(v)
	}
	if _, ok := s.Get("absent"); ok {
		t.Fatal("absent metric")
	}
}

func TestMachineAndRSS(t *testing.T) {
	if c := MachineCPU(); c.Total <= 0 {
		t.Skip("no /proc/stat")
	}
	rss, hwm, err := ReadRSS(os.Getpid())
	if err != nil {
		t.Skip(err)
	}
	if rss <= 0 || hwm < rss {
		t.Fatalf("rss %d hwm %d", rss, hwm)
	}
}

// Progress: once for the warmup, then every ProgressEvery of the measured time, with
// counts that only grow and never exceed the result's.
func TestRunProgress(t *testing.T) {
	var (
		mu    sync.Mutex
		calls []Progress
	)
	var n atomic.Int64
	cfg := Config{Concurrency: 2, Duration: 300 * time.Millisecond, Warmup: 20 * time.Millisecond, ProgressEvery: 50 * time.Millisecond,
		Progress: func(p Progress) {
			mu.Lock()
			calls = append(calls, p)
			mu.Unlock()
		}}
	res, err := Run(context.Background(), cfg, func(context.Context, int) error {
		time.Sleep(100 * time.Microsecond)
		if n.Add(1)%5 == 0 {
			return errcode.New(errcode.Replayed, "x")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) < 3 || !calls[0].Warmup || calls[0].Duration != cfg.Duration {
		t.Fatalf("progress calls %+v", calls)
	}
	var last Progress
	for _, p := range calls[1:] {
		if p.Warmup || p.Elapsed <= last.Elapsed || p.Requests < last.Requests || p.Failed < last.Failed || p.Requests > res.Requests+int64(cfg.Concurrency) {
			t.Fatalf("progress %+v after %+v (result %d requests)", p, last, res.Requests)
		}
		last = p
	}
	if last.Requests == 0 || last.Failed == 0 {
		t.Fatalf("last progress counted nothing: %+v", last)
	}
}

// The error counts name every error by a code a user can read: never "unmapped".
func TestCodeOf(t *testing.T) {
	_, dialErr := net.Dial("tcp", "127.0.0.1:1")
	for err, want := range map[error]string{
		errcode.New(errcode.Replayed, "x"):            "replayed",
		fmt.Errorf("w: %w", context.DeadlineExceeded): "timeout",
		dialErr:                 "connection_failed",
		errors.New("something"): "uncoded_error",
		errcode.Unavailable(errcode.Unmapped, nil, "x"): "uncoded_error",
	} {
		if got := codeOf(err); got != want {
			t.Errorf("%v: %q, want %q", err, got, want)
		}
	}
}
