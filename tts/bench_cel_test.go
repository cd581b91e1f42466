package tts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// Issue 25: what CEL rules cost against YAML rules that decide the same, per token, in
// one run (docs/performance.md, "CEL policy"):
//
//	go test -run '^$' -bench 'IssuePolicy' -count 10 ./tts/ | benchstat -col /policy -
//
// yaml: a rule for the workload that lists its subject token types and scopes. cel:
// a rule for the whole trust domain whose when names the workload and the subject
// token types and whose grant_scopes keeps the same scopes, reading the subject's
// claims besides (so the claims are decoded). Both grant trip.read with
// tctx.dlg. BenchmarkIssuePolicyRatio runs the two interleaved, request by request,
// and reports CEL's extra time as a percentage of YAML's.

var (
	yamlRules = []Rule{{Workload: "wimse://a.example/agent/a1", SubjectTokenTypes: []string{TokenTypeAccessToken, TokenTypeSelfSigned},
		Scopes: []string{"trip.read", "trip.book"}}}
	celRules = []Rule{{Name: "agent a1", Workload: "wimse://a.example/",
		When:        when(`requester.workload == "wimse://a.example/agent/a1" && subject.type in ["urn:ietf:params:oauth:token-type:access_token", "urn:ietf:params:oauth:token-type:self_signed"] && subject.claims.sub == "alice"`),
		GrantScopes: when(`request.scopes.filter(s, s in ["trip.read", "trip.book"])`)}}
)

func BenchmarkIssuePolicy(b *testing.B) {
	for _, cached := range []bool{true, false} {
		state := "warm"
		if !cached {
			state = "cold"
		}
		for _, pol := range []struct {
			name  string
			rules []Rule
		}{{"yaml", yamlRules}, {"cel", celRules}} {
			b.Run(state+"/policy="+pol.name, func(b *testing.B) {
				send, mint, _, _ := issuerPartsWith(b, benchCases[0], cached, pol.rules)
				proofs := make([]string, b.N)
				for i := range proofs {
					proofs[i] = mint()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					send(proofs[i])
				}
			})
		}
	}
}

// BenchmarkIssuePolicyRatio: one YAML request and one CEL request, which goes first
// alternating, on the same machine state; cel-extra-% is (cel - yaml) / yaml of the
// handler times. The handler runs on this goroutine, locked to its thread, so the
// thread's CPU time around it is the CPU of that request on its own thread (the
// mallocs and GC assists included, the background GC workers not): cel-cpu-median-% is
// CEL's extra CPU per token by the medians of those, which a request that paid for a
// descheduled sibling thread does not move.
func BenchmarkIssuePolicyRatio(b *testing.B) {
	for _, cached := range []bool{true, false} {
		state := "warm"
		if !cached {
			state = "cold"
		}
		b.Run(state, func(b *testing.B) {
			_, mintY, prepY, serveY := issuerPartsWith(b, benchCases[0], cached, yamlRules)
			_, mintC, prepC, serveC := issuerPartsWith(b, benchCases[0], cached, celRules)
			py, pc := make([]string, b.N), make([]string, b.N)
			for i := range py {
				py[i], pc[i] = mintY(), mintC()
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var ty, tc time.Duration
			cy, cc := make([]time.Duration, b.N), make([]time.Duration, b.N)
			_, cpuOK := testkit.ThreadCPU()
			one := func(prep func(string) (*http.Request, *httptest.ResponseRecorder), serve func(*http.Request, *httptest.ResponseRecorder), proof string, wall, cpu *time.Duration) {
				req, rec := prep(proof)
				c0, _ := testkit.ThreadCPU()
				t0 := time.Now()
				serve(req, rec)
				*wall += time.Since(t0)
				c1, _ := testkit.ThreadCPU()
				*cpu = c1 - c0
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					one(prepY, serveY, py[i], &ty, &cy[i])
					one(prepC, serveC, pc[i], &tc, &cc[i])
				} else {
					one(prepC, serveC, pc[i], &tc, &cc[i])
					one(prepY, serveY, py[i], &ty, &cy[i])
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(ty.Nanoseconds())/float64(b.N), "yaml-ns/op")
			b.ReportMetric(float64(tc.Nanoseconds())/float64(b.N), "cel-ns/op")
			b.ReportMetric(100*float64(tc-ty)/float64(ty), "cel-extra-%")
			if cpuOK {
				my, mc := median(cy), median(cc)
				b.ReportMetric(float64(my.Nanoseconds())/1000, "yaml-cpu-median-µs")
				b.ReportMetric(float64(mc.Nanoseconds())/1000, "cel-cpu-median-µs")
				b.ReportMetric(100*float64(mc-my)/float64(my), "cel-cpu-median-%")
			}
		})
	}
}

// BenchmarkPolicyDecide is the policy step alone (choosing the rule and granting the
// scope), without the HTTP request and the crypto around it: the absolute CPU CEL adds
// per token, stable where the whole handler's time is too noisy to show it.
func BenchmarkPolicyDecide(b *testing.B) {
	e := newEnv(b)
	w := e.workload("/agent/a1")
	tok := e.accessTokenWith("alice", "trip.read trip.book", map[string]any{"dept": "sales"})
	h := e.srv.handlers[TokenTypeAccessToken]
	c := &oauth.Client{ID: w.ID, Method: oauth.MethodWPT}
	subj, err := h.Validate(context.Background(), tok, c)
	if err != nil {
		b.Fatal(err)
	}
	tr := &oauth.TokenRequest{Audience: tdA, Scope: []string{"trip.read"}, SubjectTokenType: TokenTypeAccessToken}
	for _, pol := range []struct {
		name  string
		rules []Rule
	}{{"yaml", yamlRules}, {"cel", celRules}} {
		p := Policy{Rules: slices.Clone(pol.rules)}
		if err := p.normalize(); err != nil {
			b.Fatal(err)
		}
		b.Run("policy="+pol.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				pattern, err := p.governing(w.ID.String())
				if err != nil {
					b.Fatal(err)
				}
				r, in, err := p.decide(context.Background(), pattern, tr, c, subj)
				if err != nil {
					b.Fatal(err)
				}
				if sc, err := r.conds.Narrow(r.Name, in, tr.Scope); err != nil || len(sc) != 1 {
					b.Fatal(sc, err)
				}
				in.Close()
			}
		})
	}
}

// BenchmarkIssuePolicyCPU measures what the target is stated in, server CPU per token,
// on a machine too busy for wall time to mean much: the process's CPU time
// (getrusage: user and system, the GC's work included) over alternating blocks of 100
// YAML and 100 CEL requests, the first of each pair alternating too. cel-extra-% is
// CEL's extra CPU per token over YAML's.
func BenchmarkIssuePolicyCPU(b *testing.B) {
	_, mintY, prepY, serveY := issuerPartsWith(b, benchCases[0], true, yamlRules)
	_, mintC, prepC, serveC := issuerPartsWith(b, benchCases[0], true, celRules)
	const block = 100
	n := (b.N + block - 1) / block * block
	py, pc := make([]string, n), make([]string, n)
	for i := range py {
		py[i], pc[i] = mintY(), mintC()
	}
	var cy, cc time.Duration
	run := func(prep func(string) (*http.Request, *httptest.ResponseRecorder), serve func(*http.Request, *httptest.ResponseRecorder), proofs []string) time.Duration {
		reqs := make([]*http.Request, len(proofs))
		recs := make([]*httptest.ResponseRecorder, len(proofs))
		for i, p := range proofs {
			reqs[i], recs[i] = prep(p)
		}
		t0 := processCPU()
		for i := range reqs {
			serve(reqs[i], recs[i])
		}
		return processCPU() - t0
	}
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < n; i += block {
		// Which block runs first alternates, so that neither is always the one that
		// inherits the other's garbage collection or the machine's drift.
		if i/block%2 == 0 {
			cy += run(prepY, serveY, py[i:i+block])
			cc += run(prepC, serveC, pc[i:i+block])
		} else {
			cc += run(prepC, serveC, pc[i:i+block])
			cy += run(prepY, serveY, py[i:i+block])
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cy.Nanoseconds())/float64(n)/1000, "yaml-cpu-µs/token")
	b.ReportMetric(float64(cc.Nanoseconds())/float64(n)/1000, "cel-cpu-µs/token")
	b.ReportMetric(100*float64(cc-cy)/float64(cy), "cel-extra-%")
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
