package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Snapshot is a Prometheus text exposition reduced to one number per metric name: the
// sum of its samples over every label set (a counter's total, a gauge's value when it
// has no labels). Histograms appear as their _sum, _count and _bucket series.
type Snapshot map[string]float64

// Metric names read from the Prometheus process collector.
const (
	ProcessCPU = "process_cpu_seconds_total"
	ProcessRSS = "process_resident_memory_bytes"
)

// Get returns the value of name and whether the page had it.
func (s Snapshot) Get(name string) (float64, bool) {
	v, ok := s[name]
	return v, ok
}

// Scrape reads a Prometheus /metrics page in the text format.
func Scrape(ctx context.Context, hc *http.Client, metricsURL string) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	// The plain text format: the only one parsed here.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", metricsURL, res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	return ParseText(b), nil
}

// ParseText reads a Prometheus text exposition.
func ParseText(b []byte) Snapshot {
	s := Snapshot{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		var name, rest string
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			name, rest = line[:i], line[j+1:]
		} else {
			var ok bool
			if name, rest, ok = strings.Cut(line, " "); !ok {
				continue
			}
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s[name] += v
	}
	return s
}

// ReadRSS returns VmRSS and VmHWM (peak resident set) of process pid from
// /proc/PID/status, in bytes.
func ReadRSS(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if name == "VmRSS" {
			rss = n << 10
		} else {
			hwm = n << 10
		}
	}
	if rss == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
	}
	return rss, hwm, nil
}

// RSSWatch keeps the highest resident memory seen of a server during a run, from
// /proc/PID/status when Pid is set (VmRSS, and VmHWM at the end), else from its
// /metrics page.
type RSSWatch struct {
	Pid        int
	MetricsURL string
	Client     *http.Client

	mu      sync.Mutex
	samples int
	max     int64
	last    int64
	source  string
	errText string
}

// Sample reads the resident memory once.
func (w *RSSWatch) Sample() {
	var (
		rss int64
		src string
		err error
	)
	switch {
	case w.Pid > 0:
		rss, _, err = ReadRSS(w.Pid)
		src = fmt.Sprintf("/proc/%d/status VmRSS", w.Pid)
	case w.MetricsURL != "":
		var snap Snapshot
		snap, err = Scrape(context.Background(), w.Client, w.MetricsURL)
		v, ok := snap.Get(ProcessRSS)
		if err == nil && !ok {
			err = fmt.Errorf("%s has no %s", w.MetricsURL, ProcessRSS)
		}
		rss, src = int64(v), ProcessRSS
	default:
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.errText = err.Error()
		return
	}
	w.samples++
	w.source, w.last = src, rss
	w.max = max(w.max, rss)
}

// Memory is what an RSSWatch saw.
type Memory struct {
	Source     string  `json:"source,omitempty"`
	Samples    int     `json:"samples"`
	MaxRSSMB   float64 `json:"max_rss_mb"`
	LastRSSMB  float64 `json:"last_rss_mb"`
	PeakHWMMB  float64 `json:"peak_hwm_mb,omitempty"`
	Error      string  `json:"error,omitempty"`
	ServerPid  int     `json:"server_pid,omitempty"`
	MetricsURL string  `json:"metrics_url,omitempty"`
}

// Result returns what was seen, with VmHWM (the peak over the process's life) when Pid
// is set.
func (w *RSSWatch) Result() Memory {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := Memory{Source: w.source, Samples: w.samples, MaxRSSMB: mb(w.max), LastRSSMB: mb(w.last), Error: w.errText, ServerPid: w.Pid}
	if w.Pid > 0 {
		if _, hwm, err := ReadRSS(w.Pid); err == nil {
			m.PeakHWMMB = mb(hwm)
		}
	} else {
		m.MetricsURL = w.MetricsURL
	}
	return m
}

func mb(b int64) float64 { return float64(b*100/(1<<20)) / 100 }

// CPUTimes is the machine's CPU time from /proc/stat (every CPU together).
type CPUTimes struct {
	Busy, Total time.Duration
}

// MachineCPU reads /proc/stat; zero when it cannot.
func MachineCPU() CPUTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return CPUTimes{}
	}
	// user nice system idle iowait irq softirq steal ...; USER_HZ is 100 on Linux.
	var t CPUTimes
	for i, s := range f[1:] {
		if i >= 8 {
			break
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return CPUTimes{}
		}
		d := time.Duration(n) * 10 * time.Millisecond
		t.Total += d
		if i != 3 && i != 4 { // idle, iowait
			t.Busy += d
		}
	}
	return t
}
