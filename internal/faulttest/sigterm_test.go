package faulttest

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// SIGTERM during load: every request sent before the signal finishes with 200 (none
// fails with a connection error while in flight); every request sent after it, on the
// load's kept-alive connections and on fresh connections, is answered 200 (it got in
// before the listener closed) or 503, or is refused at connect, and none hangs; the
// process exits 0 within its shutdown_timeout.
func TestSIGTERMUnderLoad(t *testing.T) {
	h := setup(t)
	const shutdownTimeout = 5 * time.Second

	t.Run("tts", func(t *testing.T) {
		wi := h.startWITIssuer(t, witIssuerConfig{})
		svc := h.startTTS(t, ttsConfig{witJWKS: wi.url + witissuer.PathJWKS, shutdownTimeout: shutdownTimeout})
		wls := newWorkloads(t, wi, 8)
		mk := func(w, i int) *prepared {
			proof := "wpt"
			if (w+i)%2 == 1 {
				proof = "httpsig"
			}
			p, err := wls[(w+len(wls))%len(wls)].tokenRequest(proof, fmt.Sprintf("D-%d-%d", w, i))
			if err != nil {
				panic(err)
			}
			return p
		}
		sigtermRun(t, svc, tts.PathToken, mk, shutdownTimeout)
	})

	t.Run("wit-issuer", func(t *testing.T) {
		wi := h.startWITIssuer(t, witIssuerConfig{shutdownTimeout: shutdownTimeout})
		wls := newWorkloads(t, wi, 8)
		mk := func(w, i int) *prepared {
			p, err := witRequest(wi.url, wls[(w+len(wls))%len(wls)])
			if err != nil {
				panic(err)
			}
			return p
		}
		sigtermRun(t, wi, witissuer.PathWIT, mk, shutdownTimeout)
	})
}

func sigtermRun(t *testing.T, svc *service, path string, mk func(w, i int) *prepared, shutdownTimeout time.Duration) {
	const workers = 48
	hc := newClient(workers)
	rec := newRecorder(workers, 1<<20)
	var stop atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wg := runWorkers(ctx, workers, 1_000_000, &stop, nil, func(w, i int) {
		rec.add(w, send(hc, svc.url, path, mk(w, i), false))
	})
	time.Sleep(2 * time.Second)

	sigAt := time.Now()
	svc.signal(t, syscall.SIGTERM)
	// Fresh connections, one every 5 ms, until shortly after the process is gone.
	var probes []outcome
	probesDone := make(chan struct{})
	go func() {
		defer close(probesDone)
		for i := 0; i < 2000; i++ {
			select {
			case <-svc.done:
				if time.Since(svc.exitedAt) > 300*time.Millisecond {
					return
				}
			default:
			}
			probes = append(probes, send(probeClient, svc.url, path, mk(-1, i), false))
			time.Sleep(5 * time.Millisecond)
		}
	}()
	exited := svc.wait(shutdownTimeout + 5*time.Second)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	<-probesDone
	cancel()

	if !exited {
		t.Fatalf("%s did not exit within %s of SIGTERM\n%s", svc.name, shutdownTimeout+5*time.Second, svc.logs.String())
	}
	exitAfter := svc.exitedAt.Sub(sigAt)
	if code := svc.exitCode(); code != 0 {
		t.Errorf("%s exited %d after SIGTERM, want 0\n%s", svc.name, code, svc.logs.String())
	}
	// The service closes what is left at shutdown_timeout; the grace covers the moments
	// a busy machine takes to end the process and for the test to notice, not a drain
	// that ignores its bound.
	const exitGrace = 2 * time.Second
	if exitAfter > shutdownTimeout+exitGrace {
		t.Errorf("%s took %s to exit, over its shutdown_timeout %s", svc.name, exitAfter, shutdownTimeout)
	}

	all := rec.all()
	before, after := counts{}, counts{}
	inFlight, lastOKEnd := 0, time.Time{}
	var maxAfter time.Duration
	for i := range all {
		o := &all[i]
		if o.start.Before(sigAt) {
			before.add(o)
			if o.end.After(sigAt) {
				inFlight++
			}
			if !o.ok() {
				t.Errorf("a request sent %s before SIGTERM failed: %s", sigAt.Sub(o.start), o.label())
			}
		} else {
			after.add(o)
			maxAfter = max(maxAfter, o.end.Sub(o.start))
			if !cleanRefusal(o) {
				t.Errorf("a request sent %s after SIGTERM: %s (want 200, 503, connection refused or closed unanswered)", o.start.Sub(sigAt), o.label())
			}
		}
		if o.ok() && o.end.After(lastOKEnd) {
			lastOKEnd = o.end
		}
	}
	probeCounts := counts{}
	var maxProbe time.Duration
	for i := range probes {
		o := &probes[i]
		probeCounts.add(o)
		maxProbe = max(maxProbe, o.end.Sub(o.start))
		if !cleanRefusal(o) {
			t.Errorf("a fresh connection %s after SIGTERM: %s (want 200, 503, connection refused or closed unanswered)", o.start.Sub(sigAt), o.label())
		}
	}
	// "Never a hang": every request after the signal was settled within the shutdown
	// timeout (the client's own bound is 10 s). Quiet, the slowest takes milliseconds
	// (the figures below); the bound is not a latency target.
	if maxAfter > shutdownTimeout || maxProbe > shutdownTimeout {
		t.Errorf("a request after SIGTERM took %s (probe %s): want an answer or a refusal within the shutdown timeout %s", maxAfter, maxProbe, shutdownTimeout)
	}
	if inFlight == 0 {
		t.Errorf("no request was in flight at SIGTERM: the test measured nothing")
	}
	figure(t, "%d workers; sent before SIGTERM: %d (%s), of which in flight at the signal: %d", workers, before.total(), before, inFlight)
	figure(t, "sent after SIGTERM on the load's connections: %d (%s), slowest %s", after.total(), after, ms(maxAfter))
	figure(t, "fresh-connection probes after SIGTERM: %d (%s), slowest %s", probeCounts.total(), probeCounts, ms(maxProbe))
	figure(t, "last success %s after SIGTERM; exit status %d after %s (shutdown_timeout %s)", ms(lastOKEnd.Sub(sigAt)), svc.exitCode(), ms(exitAfter), shutdownTimeout)
}

// cleanRefusal: what a request sent after SIGTERM may get. Besides an answer (200 if
// it got in before the listener closed, 503) and a refused connection, TCP and HTTP/1.1
// allow one more: the connection closed before any answer (EOF or reset), because the
// request went out on a kept-alive connection that the stopping server closed as idle
// without reading it, or the connect landed in the listen backlog as the listener
// closed. The server never read such a request. A broken pipe is the same case seen
// from the write: the client wrote the request on a kept-alive connection the server
// had already closed (its reset arrived before or during the write, EPIPE), so nothing
// of it was read (seen once in about 8 000 requests after SIGTERM, CI of 2026-12-04).
// Never allowed: a hang, another status, or any other error.
func cleanRefusal(o *outcome) bool {
	return o.ok() || (o.netErr == "" && o.status == http.StatusServiceUnavailable) || o.netErr == "conn_refused" || closedUnanswered(o)
}

// closedUnanswered: the connection closed before any answer.
func closedUnanswered(o *outcome) bool {
	return o.netErr == "eof" || o.netErr == "conn_reset" || o.netErr == "broken_pipe" || o.netErr == "server_closed_idle"
}
