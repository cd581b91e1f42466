package tts

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/authzen"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// The AuthZEN path's cost at the TTS (issue 25: with a warm decision cache at most 10%
// more server CPU per token than without), measured in one run:
//
//	go test -run '^$' -bench 'IssueAuthZEN' -benchmem -count 6 ./tts/ > new.txt
//	benchstat -col /decider new.txt
//
// BenchmarkIssueAuthZEN/decider=none and /decider=authzen are the whole handler (as in
// BenchmarkIssueTxnToken, warm WIT and subject caches) without and with an
// authzen.Client whose cache holds the decision (the PDP, an httptest server, is asked
// once before the clock starts). BenchmarkIssueAuthZENRatio runs the two interleaved,
// one request each in turn, and reports authzen-cpu-% = 100 × with / without, from the
// serving thread's CPU time (testkit.ThreadCPU; authzen-wall-% from wall time): the number the
// 10% budget is about, unaffected by what else the machine runs.

// allowPDP is an httptest PDP that allows everything and counts what it is asked.
func allowPDP(b *testing.B) (*authzen.Client, *int) {
	n := new(int)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /access/v1/evaluation", func(w http.ResponseWriter, r *http.Request) {
		*n++
		_, _ = w.Write([]byte(`{"decision":true}`))
	})
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	c, err := authzen.New(srv.URL, authzen.WithEvaluationEndpoint(srv.URL+"/access/v1/evaluation"), authzen.WithCache(10000, time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	return c, n
}

// zenIssuerParts is issuerParts with the decider set (nil: none).
func zenIssuerParts(b *testing.B, bc benchCase, d IssuanceDecider) (mint func() string,
	prepare func(string) (*http.Request, *httptest.ResponseRecorder), serve func(*http.Request, *httptest.ResponseRecorder)) {
	saved := benchDecider
	benchDecider = d
	defer func() { benchDecider = saved }()
	_, mint, prepare, serve = issuerParts(b, bc, true)
	return mint, prepare, serve
}

// BenchmarkIssueAuthZEN: the handler without and with a decision point (warm cache).
func BenchmarkIssueAuthZEN(b *testing.B) {
	for _, decider := range []string{"none", "authzen"} {
		for _, bc := range benchCases {
			b.Run("decider="+decider+"/"+bc.name, func(b *testing.B) {
				var d IssuanceDecider
				var asked *int
				if decider == "authzen" {
					var c *authzen.Client
					c, asked = allowPDP(b)
					d = c
				}
				mint, prepare, serve := zenIssuerParts(b, bc, d)
				proofs := mintAll(b.N, mint)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					serve(prepare(proofs[i]))
				}
				b.StopTimer()
				if asked != nil && *asked != 1 {
					b.Fatalf("the PDP was asked %d times: the cache was not warm", *asked)
				}
			})
		}
	}
}

// serveTimed serves one request with proof, prepared outside the clocks, and returns
// the wall time and the thread's CPU time it took.
func serveTimed(prepare func(string) (*http.Request, *httptest.ResponseRecorder), serve func(*http.Request, *httptest.ResponseRecorder), proof string) (wall, cpu time.Duration) {
	req, rec := prepare(proof)
	c0, _ := testkit.ThreadCPU()
	t0 := time.Now()
	serve(req, rec)
	wall = time.Since(t0)
	c1, _ := testkit.ThreadCPU()
	return wall, c1 - c0
}

// BenchmarkIssueAuthZENRatio: both handlers interleaved on the same machine and moment.
func BenchmarkIssueAuthZENRatio(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			c, asked := allowPDP(b)
			var without, with benchSide
			without.mint, without.prepare, without.serve = zenIssuerParts(b, bc, nil)
			with.mint, with.prepare, with.serve = zenIssuerParts(b, bc, c)
			interleavedRatio(b, "authzen", without, with)
			if *asked != 1 {
				b.Fatalf("the PDP was asked %d times: the cache was not warm", *asked)
			}
		})
	}
}

// benchSide is one side of an interleaved comparison: the issuer parts of
// issuerParts without its send.
type benchSide struct {
	mint    func() string
	prepare func(string) (*http.Request, *httptest.ResponseRecorder)
	serve   func(*http.Request, *httptest.ResponseRecorder)
}

// interleavedRatio serves b.N tokens at each side on the same machine and moment, the
// two alternating which goes first so that neither always follows the other's garbage,
// and reports each side's wall and thread CPU per token and their ratios (name-wall-%,
// name-cpu-%, name-cpu-median-%). The handler runs on this goroutine (httptest
// recorder), locked to its thread, so the thread's CPU time around serve is the server
// CPU of one token. The medians too: on a shared machine a few requests pay for a GC
// cycle or a descheduled sibling thread, and the mean carries that noise into the
// ratio; the median does not.
func interleavedRatio(b *testing.B, name string, s0, s1 benchSide) {
	p0, p1 := make([]string, b.N), make([]string, b.N)
	for i := range p0 {
		p0[i], p1[i] = s0.mint(), s1.mint()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var without, with, cpuWithout, cpuWith time.Duration
	cw, cwo := make([]time.Duration, b.N), make([]time.Duration, b.N)
	_, cpuOK := testkit.ThreadCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			if (i+k)%2 == 0 {
				wall, cpu := serveTimed(s0.prepare, s0.serve, p0[i])
				without, cwo[i], cpuWithout = without+wall, cpu, cpuWithout+cpu
			} else {
				wall, cpu := serveTimed(s1.prepare, s1.serve, p1[i])
				with, cw[i], cpuWith = with+wall, cpu, cpuWith+cpu
			}
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(without.Nanoseconds())/n, "without-ns/op")
	b.ReportMetric(float64(with.Nanoseconds())/n, "with-ns/op")
	b.ReportMetric(100*float64(with)/float64(without), name+"-wall-%")
	if cpuOK {
		b.ReportMetric(float64(cpuWithout.Nanoseconds())/n, "without-cpu-ns/op")
		b.ReportMetric(float64(cpuWith.Nanoseconds())/n, "with-cpu-ns/op")
		b.ReportMetric(100*float64(cpuWith)/float64(cpuWithout), name+"-cpu-%")
		b.ReportMetric(100*float64(median(cw))/float64(median(cwo)), name+"-cpu-median-%")
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
