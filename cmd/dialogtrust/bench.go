package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/cmd/dialogtrust/internal/loadtest"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// Shared by "bench tts" and "bench verify": the load options, the server's own figures
// (CPU and resident memory, read from its /metrics and /proc) and the report.

type benchFlags struct {
	concurrency      int
	duration, warmup time.Duration
	jsonOut          bool
	metricsURL       string
	noMetrics        bool
	pid              int
	timeout          time.Duration
	cpuProfile       string
	rate             float64
	// progress hears the run's progress lines: the flag set's output, stderr.
	progress io.Writer
}

func addBenchFlags(fs *flag.FlagSet) *benchFlags {
	b := &benchFlags{progress: fs.Output()}
	fs.IntVar(&b.concurrency, "concurrency", 16, "workers, each with one request in flight")
	fs.DurationVar(&b.duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&b.warmup, "warmup", 2*time.Second, "time run before the measured time (caches, connections), not recorded")
	fs.BoolVar(&b.jsonOut, "json", false, "print the report as JSON")
	fs.StringVar(&b.metricsURL, "metrics", "", "the server's Prometheus page (default: URL/metrics); its process_cpu_seconds_total gives CPU per request")
	fs.BoolVar(&b.noMetrics, "no-metrics", false, "do not read the server's /metrics")
	fs.IntVar(&b.pid, "server-pid", 0, "the server's process id on this machine: its VmRSS is sampled from /proc every second")
	fs.DurationVar(&b.timeout, "timeout", 10*time.Second, "time allowed for one request")
	fs.Float64Var(&b.rate, "rate", 0, "open loop: release this many requests per second (at most --concurrency in flight; latency counts from release); 0: closed loop")
	fs.StringVar(&b.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the load generator) during the measured time to FILE")
	return b
}

func (b *benchFlags) check() error {
	switch {
	case b.concurrency <= 0 || b.concurrency > 10000:
		return usageError{"--concurrency must be 1..10000"}
	case b.duration <= 0 || b.duration > time.Hour:
		return usageError{"--duration must be positive and at most 1h"}
	case b.warmup < 0 || b.warmup > 10*time.Minute:
		return usageError{"--warmup must be 0..10m"}
	case b.rate < 0 || b.rate > 1e6:
		return usageError{"--rate must be 0..1000000"}
	}
	return nil
}

// benchTransport keeps one connection per worker alive: the default of two idle
// connections per host would make most requests open a new one.
func benchTransport(concurrency int) *http.Transport {
	return &http.Transport{
		Proxy:               nil, // loopback load: never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * concurrency,
		MaxIdleConnsPerHost: 2 * concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
}

// benchReport is what "bench tts" and "bench verify" print.
type benchReport struct {
	Bench       string `json:"bench"`
	URL         string `json:"url"`
	Proof       string `json:"proof"`
	WorkloadAlg string `json:"workload_key_alg"`
	// ServerAlg is the algorithm the server signs with (the TTS's Txn-Tokens), or
	// the WIT issuer's for bench verify.
	ServerAlg string `json:"server_signing_alg,omitempty"`
	Workloads int    `json:"workloads"`
	Details   string `json:"details,omitempty"`
	// ClientProcs is GOMAXPROCS of this process; CPUs the machine's count.
	ClientProcs   int     `json:"client_gomaxprocs"`
	CPUs          int     `json:"cpus"`
	WarmupSeconds float64 `json:"warmup_seconds"`
	*loadtest.Result
	ClientCPUPerRequestUS float64     `json:"client_cpu_per_request_us"`
	Server                serverStats `json:"server"`
}

type serverStats struct {
	MetricsURL string `json:"metrics_url,omitempty"`
	// CPUSeconds is process_cpu_seconds_total at the end minus at the start of the
	// measured time; CPUPerRequestUS divides it by the requests answered.
	CPUSeconds      float64 `json:"cpu_seconds,omitempty"`
	CPUPerRequestUS float64 `json:"cpu_per_request_us,omitempty"`
	Cores           float64 `json:"cores,omitempty"`
	// Counters is the change of the server's dialogtrust_* counters (issued, refused)
	// during the measured time, summed over their labels.
	Counters map[string]float64 `json:"counters,omitempty"`
	Memory   *loadtest.Memory   `json:"memory,omitempty"`
	Note     string             `json:"note,omitempty"`
	// MachineBusyCores is the whole machine's busy CPU (from /proc/stat) during the
	// measured time: what is left after this process and the server ran elsewhere
	// (other processes on the machine, the kernel's share of the network).
	MachineBusyCores float64 `json:"machine_busy_cores,omitempty"`
}

// serverWatch reads the server's CPU counter at the start and end of the measured time
// and samples its resident memory meanwhile.
type serverWatch struct {
	hc         *http.Client
	metricsURL string
	counters   []string
	rss        *loadtest.RSSWatch
	before     loadtest.Snapshot
	after      loadtest.Snapshot
	machine0   loadtest.CPUTimes
	machine1   loadtest.CPUTimes
	errs       []string
}

func newServerWatch(hc *http.Client, bf *benchFlags, baseURL string, counters ...string) *serverWatch {
	w := &serverWatch{hc: hc, counters: counters}
	if !bf.noMetrics {
		w.metricsURL = bf.metricsURL
		if w.metricsURL == "" && baseURL != "" {
			w.metricsURL = strings.TrimSuffix(baseURL, "/") + "/metrics"
		}
	}
	if bf.pid > 0 || w.metricsURL != "" {
		w.rss = &loadtest.RSSWatch{Pid: bf.pid, MetricsURL: w.metricsURL, Client: hc}
	}
	return w
}

func (w *serverWatch) scrape() loadtest.Snapshot {
	if w.metricsURL == "" {
		return nil
	}
	s, err := loadtest.Scrape(context.Background(), w.hc, w.metricsURL)
	if err != nil {
		w.errs = append(w.errs, err.Error())
		return nil
	}
	return s
}

func (w *serverWatch) config(cfg *loadtest.Config, bf *benchFlags) {
	var prof *os.File
	cfg.Begin = func() {
		w.before = w.scrape()
		w.machine0 = loadtest.MachineCPU()
		if bf.cpuProfile != "" {
			if f, err := os.Create(bf.cpuProfile); err == nil && pprof.StartCPUProfile(f) == nil {
				prof = f
			}
		}
	}
	cfg.End = func() {
		if prof != nil {
			pprof.StopCPUProfile()
			_ = prof.Close()
		}
		w.machine1 = loadtest.MachineCPU()
		w.after = w.scrape()
	}
	if w.rss != nil {
		cfg.Sample, cfg.SampleEvery = w.rss.Sample, time.Second
	}
}

func (w *serverWatch) stats(res *loadtest.Result) serverStats {
	st := serverStats{MetricsURL: w.metricsURL}
	if busy := w.machine1.Busy - w.machine0.Busy; busy > 0 && res.Seconds > 0 {
		st.MachineBusyCores = round(busy.Seconds()/res.Seconds, 2)
	}
	if w.rss != nil {
		m := w.rss.Result()
		st.Memory = &m
	}
	switch {
	case w.metricsURL == "":
		st.Note = "server /metrics not read"
	case w.before == nil || w.after == nil:
		st.Note = "server /metrics unreadable: " + strings.Join(w.errs, "; ")
	default:
		c0, ok0 := w.before.Get(loadtest.ProcessCPU)
		c1, ok1 := w.after.Get(loadtest.ProcessCPU)
		if !ok0 || !ok1 {
			st.Note = "the server does not expose " + loadtest.ProcessCPU
			break
		}
		st.CPUSeconds = round(c1-c0, 3)
		st.Cores = round((c1-c0)/res.Seconds, 2)
		if res.Requests > 0 {
			st.CPUPerRequestUS = round((c1-c0)/float64(res.Requests)*1e6, 1)
		}
		st.Counters = map[string]float64{}
		for _, name := range w.counters {
			a, okA := w.after.Get(name)
			b, _ := w.before.Get(name)
			if okA {
				st.Counters[name] = a - b
			}
		}
	}
	return st
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func (r *benchReport) finish(res *loadtest.Result, srv serverStats, warmup time.Duration) {
	r.Result, r.Server = res, srv
	r.ClientProcs, r.CPUs = runtime.GOMAXPROCS(0), runtime.NumCPU()
	r.WarmupSeconds = warmup.Seconds()
	r.Throughput = round(r.Throughput, 1)
	r.Seconds = round(r.Seconds, 3)
	r.ClientCPUSeconds = round(r.ClientCPUSeconds, 3)
	if res.Requests > 0 {
		r.ClientCPUPerRequestUS = round(res.ClientCPUSeconds/float64(res.Requests)*1e6, 1)
	}
}

func (r *benchReport) write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("bench %s  %s\n", r.Bench, r.URL)
	p("  %-14s %s proof, workload keys %s", "setup", r.Proof, r.WorkloadAlg)
	if r.ServerAlg != "" && r.Bench == "tts" {
		p(", TTS signs %s", r.ServerAlg)
	} else if r.ServerAlg != "" {
		p(", WITs signed with %s", r.ServerAlg)
	}
	p(", %d workload(s), %d workers, %.1fs measured after %.1fs warm-up, client GOMAXPROCS %d of %d CPUs\n",
		r.Workloads, r.Concurrency, r.Seconds, r.WarmupSeconds, r.ClientProcs, r.CPUs)
	if r.Details != "" {
		p("  %-14s %s\n", "", r.Details)
	}
	if r.Rate > 0 {
		p("  %-14s open loop, %.0f requests/s offered, at most %d in flight; latency from release; backlog at end %d\n", "load", r.Rate, r.Concurrency, r.Backlog)
	} else {
		p("  %-14s closed loop, %d workers each with one request in flight\n", "load", r.Concurrency)
	}
	p("  %-14s %d (ok %d, failed %d)\n", "requests", r.Requests, r.OK, r.Failed)
	p("  %-14s %.1f /s\n", "throughput", r.Throughput)
	l := r.Latency
	p("  %-14s p50 %.3f  p90 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f  (%d samples)\n",
		"latency ms", l.P50MS, l.P90MS, l.P95MS, l.P99MS, l.P999MS, l.MaxMS, l.MeanMS, l.Samples)
	if len(r.Errors) == 0 {
		p("  %-14s none\n", "errors")
	} else {
		codes := make([]string, 0, len(r.Errors))
		for c := range r.Errors {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		for i, c := range codes {
			label := ""
			if i == 0 {
				label = "errors"
			}
			p("  %-14s %-28s %d\n", label, c, r.Errors[c])
		}
	}
	s := r.Server
	if s.CPUPerRequestUS > 0 {
		p("  %-14s %.1f µs/request (%.3f s over %.1fs: %.2f cores, from %s)\n", "server CPU", s.CPUPerRequestUS, s.CPUSeconds, r.Seconds, s.Cores, loadtest.ProcessCPU)
	} else {
		p("  %-14s n/a (%s)\n", "server CPU", s.Note)
	}
	if m := s.Memory; m != nil {
		if m.Samples > 0 {
			p("  %-14s max %.1f MB, last %.1f MB (%d samples of %s)", "server RSS", m.MaxRSSMB, m.LastRSSMB, m.Samples, m.Source)
			if m.PeakHWMMB > 0 {
				p(", VmHWM %.1f MB", m.PeakHWMMB)
			}
			p("\n")
		} else {
			p("  %-14s n/a (%s)\n", "server RSS", m.Error)
		}
	}
	for name, v := range s.Counters {
		p("  %-14s %s +%.0f\n", "server counter", name, v)
	}
	p("  %-14s %.1f µs/request (%.2f cores, this process)\n", "client CPU", r.ClientCPUPerRequestUS, r.ClientCPUSeconds/math.Max(r.Seconds, 1e-9))
	if s.MachineBusyCores > 0 {
		p("  %-14s %.2f of %d cores busy (all processes, /proc/stat)\n", "machine", s.MachineBusyCores, r.CPUs)
	}
	return nil
}

// loadCredential reads --wit and --key: the WIT (value, @file or -, or a plain file
// name) and its private key.
func loadCredential(witArg, keyFile string, stdin io.Reader) (*wit.Credential, error) {
	key, err := loadPrivateKey(keyFile, stdin)
	if err != nil {
		return nil, err
	}
	raw := witArg
	if !strings.HasPrefix(raw, "@") && raw != "-" && strings.Count(raw, ".") != 2 {
		if b, err := os.ReadFile(raw); err == nil {
			raw = strings.TrimSpace(string(b))
		}
	}
	if raw, err = readValue(raw, stdin); err != nil {
		return nil, err
	}
	exp, err := witExpiry(raw)
	if err != nil {
		return nil, err
	}
	return &wit.Credential{WIT: raw, Key: key, Expiry: exp}, nil
}

// checkAlg accepts the workload key algorithms.
func checkAlg(alg string) error {
	switch alg {
	case keys.ES256, keys.EdDSA, "Ed25519":
		return nil
	}
	return usageError{"--alg must be ES256 or EdDSA"}
}

// workloadCount is --workloads: by default one workload per worker, at most 64.
func workloadCount(n, concurrency int) (int, error) {
	if n <= 0 {
		n = min(concurrency, 64)
	}
	if n > 10000 {
		return 0, usageError{"--workloads must be at most 10000"}
	}
	return n, nil
}

// requestWITs asks the WIT issuer of wc for the WITs of n workloads, prefix plus w1,
// w2, ..., each for a fresh key of alg.
func requestWITs(ctx context.Context, wc *witissuer.Client, prefix, alg string, n int) ([]*wit.Credential, error) {
	var creds []*wit.Credential
	for i := range n {
		c := *wc
		c.Subject = prefix + "w" + strconv.Itoa(i+1)
		key, err := keys.Generate(alg)
		if err != nil {
			return nil, err
		}
		res, err := c.Request(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("WIT for %s: %w", c.Subject, err)
		}
		creds = append(creds, &wit.Credential{WIT: res.WIT, Key: key, Expiry: time.Unix(res.ExpiresAt, 0)})
	}
	return creds, nil
}

// checkOutlast refuses WITs that would expire before the run ends (with a margin): a
// run would otherwise measure the rejections of expired credentials.
func checkOutlast(creds []*wit.Credential, bf *benchFlags) error {
	end := time.Now().Add(bf.warmup + bf.duration + 30*time.Second)
	for _, c := range creds {
		if c.Expiry.Before(end) {
			return errcode.New(errcode.Expired, "a WIT expires at %s, before the run ends", c.Expiry.Format(time.RFC3339))
		}
	}
	return nil
}

// runBenchLoad runs op under the load options and watches the server at baseURL
// meanwhile (its /metrics and the counters named, its memory).
func runBenchLoad(ctx context.Context, hc *http.Client, bf *benchFlags, baseURL string, op loadtest.Op, counters ...string) (*loadtest.Result, serverStats, error) {
	watch := newServerWatch(hc, bf, baseURL, counters...)
	cfg := loadtest.Config{Concurrency: bf.concurrency, Duration: bf.duration, Warmup: bf.warmup, Rate: bf.rate}
	watch.config(&cfg, bf)
	cfg.Progress = benchProgress(bf.progress)
	res, err := loadtest.Run(ctx, cfg, op)
	if err != nil {
		return nil, serverStats{}, err
	}
	return res, watch.stats(res), nil
}

// benchProgress prints a run's progress, one line a second, on w (stderr).
func benchProgress(w io.Writer) func(loadtest.Progress) {
	return func(p loadtest.Progress) {
		if p.Warmup {
			fmt.Fprintf(w, "bench: warming up, then measuring for %s\n", p.Duration)
			return
		}
		fmt.Fprintf(w, "bench: %s of %s, %d requests answered, %d failed\n",
			p.Elapsed.Round(100*time.Millisecond), p.Duration, p.Requests, p.Failed)
	}
}

// writeBenchReport completes rep with the results and prints it; a run in which no
// request succeeded fails (status 1) after its report.
func writeBenchReport(stdout io.Writer, rep *benchReport, res *loadtest.Result, srv serverStats, bf *benchFlags) error {
	rep.finish(res, srv, bf.warmup)
	if err := rep.write(stdout, bf.jsonOut); err != nil {
		return err
	}
	if res.OK == 0 {
		return silentFailure{"no request succeeded"}
	}
	return nil
}
