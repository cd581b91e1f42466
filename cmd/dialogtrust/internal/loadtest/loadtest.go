package loadtest

import (
	"context"
	"errors"
	"math"
	"net"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// MaxSamples bounds the latencies kept in one run (8 octets each). Requests beyond it
// are still counted; the percentiles then describe the first MaxSamples.
const MaxSamples = 32 << 20

// Config describes a run.
type Config struct {
	// Concurrency is the number of workers (each with one request in flight).
	Concurrency int
	// Duration is the measured time; Warmup runs before it and is not recorded.
	Duration, Warmup time.Duration
	// Sample, when set, is called about every SampleEvery during the measured time
	// (for example to read the server's resident memory).
	Sample      func()
	SampleEvery time.Duration
	// Rate, when positive, makes the run open-loop: requests are released at Rate per
	// second (by a pacer, in batches of about a millisecond) whether or not earlier
	// ones were answered, and each latency counts from its request's release, so that
	// time spent waiting for a free worker is measured (no coordinated omission).
	// Concurrency then bounds the requests in flight; a request not yet picked up
	// when the run ends is counted in Result.Backlog. Zero: closed loop.
	Rate float64
	// Begin and End, when set, are called as the measured time begins and ends (for
	// example to read the server's CPU counter).
	Begin, End func()
	// Progress, when set, hears how the run is going: once as the warmup begins (if
	// there is one), then about every ProgressEvery (default one second) of the
	// measured time. The command line prints it on stderr, so that a long run is seen
	// to be running.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// Progress is a run so far.
type Progress struct {
	// Warmup is true before the measured time; Elapsed and the counts are then zero.
	Warmup bool
	// Elapsed of the measured Duration.
	Elapsed, Duration time.Duration
	// Requests answered in the measured time so far, and of them Failed.
	Requests, Failed int64
}

// Op is one request made by worker w. It returns nil on success; an error's code (an
// *errcode.Error) names it in the error counts.
type Op func(ctx context.Context, w int) error

// Result is what a run measured.
type Result struct {
	Concurrency int           `json:"concurrency"`
	Duration    time.Duration `json:"-"`
	Seconds     float64       `json:"duration_seconds"`
	Requests    int64         `json:"requests"`
	OK          int64         `json:"ok"`
	Failed      int64         `json:"failed"`
	// Errors counts the failed requests by error code.
	Errors map[string]int64 `json:"errors"`
	// Throughput is successful requests per second of measured time.
	Throughput float64 `json:"throughput_per_second"`
	// Latency of every request of the measured time (successful or not).
	Latency Percentiles `json:"latency"`
	// Rate is the offered rate of an open-loop run (0: closed loop); Backlog the
	// released requests no worker had picked up when it ended.
	Rate    float64 `json:"offered_rate_per_second,omitempty"`
	Backlog int64   `json:"backlog,omitempty"`
	// ClientCPUSeconds is the CPU this process used during the measured time (user and
	// system, every thread): with an in-process server it includes the server's.
	ClientCPUSeconds float64 `json:"client_cpu_seconds"`
}

// Percentiles of the latency, in milliseconds in JSON.
type Percentiles struct {
	Samples int           `json:"samples"`
	Min     time.Duration `json:"-"`
	Mean    time.Duration `json:"-"`
	P50     time.Duration `json:"-"`
	P90     time.Duration `json:"-"`
	P95     time.Duration `json:"-"`
	P99     time.Duration `json:"-"`
	P999    time.Duration `json:"-"`
	Max     time.Duration `json:"-"`
	// Milliseconds, for JSON.
	MinMS  float64 `json:"min_ms"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P95MS  float64 `json:"p95_ms"`
	P99MS  float64 `json:"p99_ms"`
	P999MS float64 `json:"p99_9_ms"`
	MaxMS  float64 `json:"max_ms"`
}

type worker struct {
	lat    []time.Duration
	room   int // samples lat may still take from the budget already granted
	ok     int64
	failed int64
	errs   map[string]int64
}

// run is what one Run shares between its workers and its clock.
type run struct {
	cfg Config
	op  Op
	ctx context.Context
	// measuring is closed when the measured time begins, stop when it ends.
	measuring, stop chan struct{}
	// tickets: open loop, the release times the pacer sends at cfg.Rate; nil: closed loop.
	tickets  chan time.Time
	ws       []*worker
	wg       sync.WaitGroup
	budget   int64 // samples not yet granted to a worker, out of MaxSamples
	budgetMu sync.Mutex
	// answered and failed count the measured requests for Progress while the workers
	// run (their own counts are read only after they stop).
	answered, failed atomic.Int64
}

// Run runs op with cfg.Concurrency workers for cfg.Warmup plus cfg.Duration (or until
// ctx ends) and measures the cfg.Duration part.
func Run(ctx context.Context, cfg Config, op Op) (*Result, error) {
	if cfg.Concurrency <= 0 {
		return nil, errors.New("loadtest: concurrency must be positive")
	}
	if cfg.Duration <= 0 {
		return nil, errors.New("loadtest: duration must be positive")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &run{cfg: cfg, op: op, ctx: ctx, measuring: make(chan struct{}), stop: make(chan struct{}),
		ws: make([]*worker, cfg.Concurrency), budget: int64(MaxSamples)}
	if cfg.Rate > 0 {
		r.tickets = make(chan time.Time, int(cfg.Rate)+cfg.Concurrency)
		go pace(r.tickets, cfg.Rate, r.stop, ctx.Done())
	}
	for i := range r.ws {
		r.ws[i] = &worker{errs: map[string]int64{}}
		r.wg.Add(1)
		go r.work(i, r.ws[i])
	}
	if cfg.Warmup > 0 {
		if cfg.Progress != nil {
			cfg.Progress(Progress{Warmup: true, Duration: cfg.Duration})
		}
		select {
		case <-time.After(cfg.Warmup):
		case <-ctx.Done():
		}
	}
	elapsed, cpu := r.measure()
	cancel() // requests in flight are abandoned; they are not counted
	r.wg.Wait()
	return r.result(elapsed, cpu), nil
}

// take grants a worker room for its next chunk of samples from the shared budget.
func (r *run) take() int {
	r.budgetMu.Lock()
	defer r.budgetMu.Unlock()
	n := int64(1 << 14)
	if n > r.budget {
		n = r.budget
	}
	r.budget -= n
	return int(n)
}

// work is worker w's loop: it sends requests until the run stops, and records those
// of the measured time.
func (r *run) work(w int, st *worker) {
	defer r.wg.Done()
	recording := false
	for {
		select {
		case <-r.stop:
			return
		case <-r.ctx.Done():
			return
		default:
		}
		if !recording {
			select {
			case <-r.measuring:
				recording = true
			default:
			}
		}
		start, ok := r.release()
		if !ok {
			return
		}
		err := r.op(r.ctx, w)
		d := time.Since(start)
		if !recording {
			continue
		}
		// A request answered after the end is not counted: the run is over.
		select {
		case <-r.stop:
			return
		default:
		}
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			st.failed++
			st.errs[codeOf(err)]++
			r.failed.Add(1)
		} else {
			st.ok++
		}
		r.answered.Add(1)
		st.keep(d, r.take)
	}
}

// release is when the next request starts: now in a closed loop; in an open loop the
// release time of the next ticket, once there is one. It is false when the run stops
// first.
func (r *run) release() (time.Time, bool) {
	if r.tickets == nil {
		return time.Now(), true
	}
	select {
	case start := <-r.tickets:
		return start, true
	case <-r.stop:
		return time.Time{}, false
	case <-r.ctx.Done():
		return time.Time{}, false
	}
}

// keep records latency d if the worker still has room, taking more when it has none.
func (st *worker) keep(d time.Duration, take func() int) {
	if st.room == 0 {
		st.room = take()
		if st.room > 0 {
			st.lat = slices.Grow(st.lat, st.room)
		}
	}
	if st.room > 0 {
		st.lat = append(st.lat, d)
		st.room--
	}
}

// measure runs the measured time, with cfg.Begin, cfg.End and cfg.Sample around and
// during it, and stops the workers at its end. It returns how long it lasted and the
// CPU this process used meanwhile.
func (r *run) measure() (elapsed, cpu time.Duration) {
	cfg := r.cfg
	if cfg.Begin != nil {
		cfg.Begin()
	}
	cpu0 := processCPU()
	t0 := time.Now()
	close(r.measuring)
	end := time.NewTimer(cfg.Duration)
	var tick <-chan time.Time
	if cfg.Sample != nil {
		every := cfg.SampleEvery
		if every <= 0 {
			every = time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
		cfg.Sample()
	}
	var progress <-chan time.Time
	if cfg.Progress != nil {
		every := cfg.ProgressEvery
		if every <= 0 {
			every = time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		progress = t.C
	}
loop:
	for {
		select {
		case <-end.C:
			break loop
		case <-r.ctx.Done():
			break loop
		case <-tick:
			cfg.Sample()
		case <-progress:
			cfg.Progress(Progress{Elapsed: time.Since(t0), Duration: cfg.Duration, Requests: r.answered.Load(), Failed: r.failed.Load()})
		}
	}
	elapsed = time.Since(t0)
	close(r.stop)
	cpu1 := processCPU()
	if cfg.End != nil {
		cfg.End()
	}
	return elapsed, cpu1 - cpu0
}

// result adds up what the workers recorded.
func (r *run) result(elapsed, cpu time.Duration) *Result {
	res := &Result{Concurrency: r.cfg.Concurrency, Duration: elapsed, Seconds: elapsed.Seconds(), Errors: map[string]int64{},
		ClientCPUSeconds: cpu.Seconds()}
	var all []time.Duration
	for _, w := range r.ws {
		res.OK += w.ok
		res.Failed += w.failed
		for c, n := range w.errs {
			res.Errors[c] += n
		}
		all = append(all, w.lat...)
		w.lat = nil
	}
	res.Requests = res.OK + res.Failed
	if r.tickets != nil {
		res.Rate, res.Backlog = r.cfg.Rate, int64(len(r.tickets))
	}
	res.Throughput = float64(res.OK) / elapsed.Seconds()
	res.Latency = Summarize(all)
	return res
}

// pace sends the release time of each request into tickets at rate per second, about
// every millisecond, until stop or done. When the channel is full (the workers are that
// far behind) the excess is dropped: it would only measure the backlog's growth.
func pace(tickets chan<- time.Time, rate float64, stop <-chan struct{}, done <-chan struct{}) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	start := time.Now()
	var sent int64
	for {
		select {
		case <-stop:
			return
		case <-done:
			return
		case now := <-t.C:
			due := int64(now.Sub(start).Seconds() * rate)
			for ; sent < due; sent++ {
				select {
				case tickets <- now:
				default:
				}
			}
		}
	}
}

// Summarize computes exact percentiles of d (which it sorts).
func Summarize(d []time.Duration) Percentiles {
	p := Percentiles{Samples: len(d)}
	if len(d) == 0 {
		return p
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	var sum float64
	for _, x := range d {
		sum += float64(x)
	}
	p.Min, p.Max = d[0], d[len(d)-1]
	p.Mean = time.Duration(sum / float64(len(d)))
	p.P50, p.P90, p.P95 = Quantile(d, 0.50), Quantile(d, 0.90), Quantile(d, 0.95)
	p.P99, p.P999 = Quantile(d, 0.99), Quantile(d, 0.999)
	ms := func(x time.Duration) float64 { return math.Round(float64(x)/1e3) / 1e3 }
	p.MinMS, p.MeanMS, p.P50MS, p.P90MS = ms(p.Min), ms(p.Mean), ms(p.P50), ms(p.P90)
	p.P95MS, p.P99MS, p.P999MS, p.MaxMS = ms(p.P95), ms(p.P99), ms(p.P999), ms(p.Max)
	return p
}

// Quantile is the nearest-rank q-quantile of sorted samples: the smallest sample at or
// above which lie at least q of all samples.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// codeOf names an error for the error counts: its errcode code; "timeout" for a run
// deadline; "request_timeout" for a request's own; "connection_failed" when the request did not get through (refused, reset:
// a network error without a code); else "uncoded_error". The internal "unmapped" is
// never shown.
func codeOf(err error) string {
	var ce *errcode.Error
	if errors.As(err, &ce) && ce.Code != errcode.Unmapped {
		return string(ce.Code)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	if ne, ok := errors.AsType[net.Error](err); ok {
		if ne.Timeout() {
			return "request_timeout"
		}
		return "connection_failed"
	}
	return "uncoded_error"
}

// processCPU is the user plus system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Procs is GOMAXPROCS, for reports.
func Procs() int { return runtime.GOMAXPROCS(0) }
