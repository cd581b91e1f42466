package faulttest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// Redis stopped during load. The TTS and the wit-issuer share one Redis replay store
// (separate prefixes) and serve a closed-loop load of Txn-Token requests (WPT and HTTP
// signature alternating) and WIT requests. Redis is then stopped, and brought back on
// the same port, three ways:
//
//   - pause: SIGSTOP, then SIGCONT (a hung Redis: every claim times out);
//   - restart-persistent: SIGKILL, then a new redis-server on the same port, with the
//     append-only file fsynced on every write, so the restart keeps every claim;
//   - restart-volatile: SIGKILL and a new redis-server without persistence, which
//     forgets every claim. The store sees the loss (its epoch keys are gone) and refuses
//     claims for the loss quarantine (store.redis.loss_quarantine); here proofs live
//     10 s, the skew is 1 s and the quarantine 12 s, so that the case stays short.
//
// Criteria: while Redis is down every request that needs the store is refused 503 with
// code store_unavailable, kind could_not_complete (the TTS's OAuth error
// temporarily_unavailable, with Retry-After), within the store timeout, never accepted
// and never hanging; requests that do not need it (JWKS, healthz) are served; service
// resumes by itself once Redis answers again: within 30 s of it (in restart-volatile,
// of the end of the quarantine) a request succeeds, and of the requests sent from 3 s
// after that on at most 5% are refused, each 503 store_unavailable (a fail-closed refusal when a
// busy machine makes a claim time out; the figures give their count). In restart-volatile,
// every proof accepted before the restart is sent again as soon as Redis is back, while
// it is still valid: none may be accepted. After the load every accepted proof is sent
// once more: every copy is refused as replayed (in restart-volatile: refused, as
// replayed or expired, since the proofs are short-lived there).
func TestRedisOutage(t *testing.T) {
	h := setup(t)
	for _, sc := range []outageScenario{
		{name: "pause", kill: false, persistent: false},
		{name: "restart-persistent", kill: true, persistent: true},
		{name: "restart-volatile", kill: true, persistent: false},
	} {
		t.Run(sc.name, func(t *testing.T) { runOutage(t, h, sc) })
	}
}

type outageScenario struct {
	name             string
	kill, persistent bool
}

// poll is one GET of a side endpoint.
type poll struct {
	start, end time.Time
	status     int
}

func getStatus(url string) int {
	// probeClient's 5 s: these endpoints are served from memory; only a stall that long
	// is a fault, not a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := probeClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// poller GETs url every 50 ms until stop, each on a new connection.
func poller(ctx context.Context, stop *atomic.Bool, wg *sync.WaitGroup, url string) *[]poll {
	var out []poll
	wg.Go(func() {
		for i := 0; i < 2000 && !stop.Load() && ctx.Err() == nil; i++ {
			p := poll{start: time.Now()}
			p.status = getStatus(url)
			p.end = time.Now()
			out = append(out, p)
			time.Sleep(50 * time.Millisecond)
		}
	})
	return &out
}

// outage is one run of an outage scenario: the services, the load's recorders and the
// moments of the fault.
type outage struct {
	t                    *testing.T
	h                    *harness
	sc                   outageScenario
	redis                *redisProc
	wi, svc              *service
	volatile             bool
	quarantine, proofTTL time.Duration
	skew                 time.Duration
	recTTS, recWIT       *recorder
	readyTTS, readyWIT   *[]poll
	side                 []*[]poll
	downAt, restoreAt    time.Time
	backAt, resumed      time.Time
}

const outageTTSWorkers, outageWITWorkers = 12, 2

func runOutage(t *testing.T, h *harness, sc outageScenario) {
	x := startOutageServices(t, h, sc)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var stop atomic.Bool
	var pollWG sync.WaitGroup
	wg := x.startLoad(ctx, &stop, &pollWG)

	time.Sleep(1500 * time.Millisecond)
	x.stopRedis()
	time.Sleep(3 * time.Second)
	x.restoreRedis()
	var immediate []string
	if x.volatile {
		immediate = x.replayAcrossRestart()
	}
	x.waitResumed()
	time.Sleep(time.Until(x.resumed.Add(2 * time.Second))) // load after resumption, judged in judge
	stop.Store(true)
	wg.Wait()
	pollWG.Wait()
	cancel()

	vt := x.judge("tts", x.recTTS.all(), true)
	vw := x.judge("wit-issuer", x.recWIT.all(), false)
	readyDown, firstReady, sidePolls := x.judgeSideEndpoints()
	vt.pre, vt.post = x.replayAccepted("tts", x.svc.url, tts.PathToken, vt.accepted, isReplayed)
	vw.pre, vw.post = x.replayAccepted("wit-issuer", x.wi.url, witissuer.PathWIT, vw.accepted, func(o *outcome) bool {
		return o.netErr == "" && o.status == http.StatusUnauthorized && o.code == "replayed"
	})
	x.report(immediate, vt, vw, readyDown, firstReady, sidePolls)
}

// startOutageServices starts Redis, the wit-issuer and the TTS on it, and the workloads.
// In restart-volatile proofs are short-lived and the loss quarantine is set.
func startOutageServices(t *testing.T, h *harness, sc outageScenario) *outage {
	x := &outage{t: t, h: h, sc: sc, volatile: sc.kill && !sc.persistent}
	x.redis = h.startRedis(t, 0, "", sc.persistent)
	if x.volatile {
		x.quarantine, x.proofTTL, x.skew = 12*time.Second, 10*time.Second, time.Second
	}
	x.wi = h.startWITIssuer(t, witIssuerConfig{redis: x.redis.addr(), lossQuarantine: x.quarantine, proofWindow: x.proofTTL, skew: x.skew})
	x.svc = h.startTTS(t, ttsConfig{witJWKS: x.wi.url + witissuer.PathJWKS, redis: x.redis.addr(), lossQuarantine: x.quarantine, skew: x.skew})
	return x
}

// startLoad starts the closed-loop load (Txn-Token requests, WPT and HTTP signature
// alternating, and WIT requests) and the pollers of readyz and the side endpoints.
func (x *outage) startLoad(ctx context.Context, stop *atomic.Bool, pollWG *sync.WaitGroup) *sync.WaitGroup {
	t := x.t
	wls := newWorkloadsTTL(t, x.wi, 8, x.proofTTL)
	const workers = outageTTSWorkers + outageWITWorkers
	hc := newClient(workers)
	x.recTTS = newRecorder(workers, 200_000)
	x.recWIT = newRecorder(workers, 200_000)
	wg := runWorkers(ctx, workers, 1_000_000, stop, nil, func(w, i int) {
		wl := wls[w%len(wls)]
		if w < outageTTSWorkers {
			proof := "wpt"
			if (w+i)%2 == 1 {
				proof = "httpsig"
			}
			p, err := wl.tokenRequest(proof, fmt.Sprintf("R-%d-%d", w, i))
			if err != nil {
				t.Error(err)
				stop.Store(true)
				return
			}
			x.recTTS.add(w, send(hc, x.svc.url, tts.PathToken, p, false))
			return
		}
		p, err := witRequest(x.wi.url, wl)
		if err != nil {
			t.Error(err)
			stop.Store(true)
			return
		}
		x.recWIT.add(w, send(hc, x.wi.url, witissuer.PathWIT, p, false))
	})
	x.readyTTS = poller(ctx, stop, pollWG, x.svc.url+tts.PathReadyz)
	x.readyWIT = poller(ctx, stop, pollWG, x.wi.url+witissuer.PathReadyz)
	for _, u := range []string{x.svc.url + tts.PathJWKS, x.svc.url + tts.PathHealthz, x.wi.url + witissuer.PathJWKS, x.wi.url + witissuer.PathHealthz} {
		x.side = append(x.side, poller(ctx, stop, pollWG, u))
	}
	return wg
}

// stopRedis kills Redis (SIGKILL) or hangs it (SIGSTOP), and notes when.
func (x *outage) stopRedis() {
	if x.sc.kill {
		x.redis.signal(x.t, syscall.SIGKILL)
		if !x.redis.wait(5 * time.Second) {
			x.t.Fatal("redis-server did not die of SIGKILL")
		}
	} else {
		x.redis.signal(x.t, syscall.SIGSTOP)
	}
	x.downAt = time.Now()
}

// restoreRedis brings Redis back on the same port and notes when it was asked to and
// when it answered; every request from quarantine + 2 s after that must succeed.
func (x *outage) restoreRedis() {
	x.restoreAt = time.Now()
	if x.sc.kill {
		x.h.restartRedis(x.t, x.redis) // same port; returns once it answers PING
	} else {
		x.redis.signal(x.t, syscall.SIGCONT)
		if !x.redis.waitPing(5 * time.Second) {
			x.t.Fatal("redis-server does not answer after SIGCONT")
		}
	}
	x.backAt = time.Now()
}

// resumeWithin bounds how long after Redis answers again (and the loss quarantine ends)
// each service may take to accept a request: a liveness bound, generous for a busy
// machine (quiet, the first success comes within a second).
const resumeWithin = 30 * time.Second

// resumeSettle is how long after its first acceptance a service still may refuse: the
// claims of requests already in flight, and the store's several replay kinds (WPT jti,
// signature nonce, WIT request jti), each of which notices Redis and its loss on its own
// first use, end their refusals within about a second of each other.
const resumeSettle = 3 * time.Second

// waitResumed waits until both services have accepted a request sent after Redis
// answered again and the quarantine ended, and notes when: from resumeSettle after the
// later of them the services count as resumed.
func (x *outage) waitResumed() {
	since := x.backAt.Add(x.quarantine)
	deadline := since.Add(resumeWithin)
	for _, s := range []struct {
		what string
		rec  *recorder
	}{{"tts", x.recTTS}, {"wit-issuer", x.recWIT}} {
		for {
			if first, ok := s.rec.firstOKSince(since); ok {
				if r := first.Add(resumeSettle); r.After(x.resumed) {
					x.resumed = r
				}
				break
			}
			if time.Now().After(deadline) {
				// Errorf, not Fatalf: the load is still running and must be stopped.
				x.t.Errorf("%s has not resumed: no request accepted within %s after Redis answered again (and the quarantine ended)", s.what, resumeWithin)
				x.resumed = time.Now()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// replayAcrossRestart sends every proof accepted before the restart again, at once:
// still valid (they are at most ~5 s old and live 10 s), and the emptied store holds
// none of them. None may be accepted.
func (x *outage) replayAcrossRestart() []string {
	t := x.t
	var immediate []string
	for _, s := range []struct {
		what, base, path string
		rec              *recorder
	}{{"tts", x.svc.url, tts.PathToken, x.recTTS}, {"wit-issuer", x.wi.url, witissuer.PathWIT, x.recWIT}} {
		var reqs []*prepared
		var made []time.Time
		for _, o := range s.rec.all() {
			if o.ok() && o.start.Before(x.downAt) {
				reqs = append(reqs, o.req)
				made = append(made, o.start)
			}
		}
		res := replayAll(newClient(16), s.base, s.path, reqs, 16)
		c, quarantined := counts{}, 0
		for i := range res {
			o := &res[i]
			c.add(o)
			if o.ok() {
				t.Errorf("%s: a proof accepted before the restart (made %s before it) was accepted again after it", s.what, x.backAt.Sub(made[i]))
			}
			if o.storeUnavailable() {
				quarantined++
			}
		}
		if len(reqs) == 0 || quarantined == 0 {
			t.Errorf("%s: %d proofs from before the restart sent again, %d refused by the quarantine: the test measured nothing", s.what, len(reqs), quarantined)
		}
		immediate = append(immediate, fmt.Sprintf("%s: %d proofs accepted before the restart, sent again within %s of it: %s", s.what, len(reqs), ms(time.Since(x.backAt)), c))
	}
	return immediate
}

// outageVerdict is what one service's requests showed.
type outageVerdict struct {
	all, down                  counts
	maxDownLatency             time.Duration
	firstOKAfter, lastBadAfter time.Duration
	steady, steadyRefused      int
	accepted                   []outcome
	pre, post                  counts // replays of the accepted proofs: accepted before the fault, after it
}

// judge checks one service's requests: 200 or 503 store_unavailable (the TTS's with
// temporarily_unavailable and Retry-After), none accepted while Redis was down, every
// refusal quick, and service resumed.
func (x *outage) judge(what string, outs []outcome, isTTS bool) outageVerdict {
	t := x.t
	v := outageVerdict{all: counts{}, down: counts{}, firstOKAfter: -1}
	for i := range outs {
		o := &outs[i]
		v.all.add(o)
		if o.ok() {
			v.accepted = append(v.accepted, *o)
		} else if !o.storeUnavailable() {
			t.Errorf("%s: a request sent %s after the start of the fault got %s (%s); want 200 or 503 store_unavailable could_not_complete",
				what, o.start.Sub(x.downAt), o.label(), o.oauth)
		} else if isTTS && (o.oauth != oauth.ErrTemporarilyUnavailable || o.retryAfter == "") {
			t.Errorf("%s: 503 with error %q and Retry-After %q; want temporarily_unavailable with Retry-After", what, o.oauth, o.retryAfter)
		}
		if !o.start.Before(x.downAt) && !o.end.After(x.restoreAt) {
			v.down.add(o)
			v.maxDownLatency = max(v.maxDownLatency, o.end.Sub(o.start))
			if o.ok() {
				t.Errorf("%s: a request accepted while Redis was down (sent %s after the fault)", what, o.start.Sub(x.downAt))
			}
		}
		if !o.start.Before(x.restoreAt) {
			if o.ok() && (v.firstOKAfter < 0 || o.end.Sub(x.backAt) < v.firstOKAfter) {
				v.firstOKAfter = o.end.Sub(x.backAt)
			}
			if !o.ok() {
				v.lastBadAfter = max(v.lastBadAfter, o.end.Sub(x.backAt))
			}
		}
		if o.start.After(x.resumed) {
			v.steady++
			if !o.ok() {
				v.steadyRefused++
			}
		}
	}
	if v.steadyRefused*20 > v.steady {
		t.Errorf("%s: service has not resumed: %d of %d requests sent after it first accepted one again were refused", what, v.steadyRefused, v.steady)
	}
	if v.down.total() == 0 {
		t.Errorf("%s: no request fell inside the outage: the test measured nothing", what)
	}
	if v.steady == 0 {
		t.Errorf("%s: no request after Redis returned", what)
	}
	// A hang would run into the client's timeout and fail above (a network error, not a
	// 503); this bound only says the refusal came from the store timeout (500 ms) and not
	// from something slower, generously for a busy machine.
	if v.maxDownLatency > 5*time.Second {
		t.Errorf("%s: a refusal during the outage took %s: want the store timeout (500 ms), not a hang", what, v.maxDownLatency)
	}
	return v
}

// judgeSideEndpoints checks readiness and the side endpoints: a readyz asked and
// answered while Redis was down says not ready; both say ready again soon after Redis
// returns; the JWKS and healthz never need the store and are served throughout.
func (x *outage) judgeSideEndpoints() (readyDown int, firstReady time.Duration, sidePolls int) {
	t := x.t
	var sideBad int
	firstReady = -1
	for _, ps := range []*[]poll{x.readyTTS, x.readyWIT} {
		first := time.Duration(-1)
		for _, p := range *ps {
			if !p.start.Before(x.downAt) && !p.end.After(x.restoreAt) {
				readyDown++
				if p.status == http.StatusOK {
					t.Errorf("/readyz said ready while Redis was down (asked %s after the fault)", p.start.Sub(x.downAt))
				}
			}
			if !p.start.Before(x.backAt) && p.status == http.StatusOK && first < 0 {
				first = p.end.Sub(x.backAt)
			}
		}
		if first < 0 {
			t.Errorf("/readyz never became 200 again after Redis returned")
		}
		firstReady = max(firstReady, first)
	}
	for _, ps := range x.side {
		for _, p := range *ps {
			sidePolls++
			if p.status != http.StatusOK {
				sideBad++
			}
		}
	}
	if sideBad > 0 {
		t.Errorf("%d of %d polls of JWKS or healthz were not 200: requests that do not need the store must be served", sideBad, sidePolls)
	}
	return readyDown, firstReady, sidePolls
}

// replayAccepted sends every accepted proof once more: each copy must be refused as
// replayed (in restart-volatile: refused, as replayed or expired).
func (x *outage) replayAccepted(what string, base, path string, acc []outcome, want func(*outcome) bool) (pre, post counts) {
	reqs := make([]*prepared, len(acc))
	for i := range acc {
		reqs[i] = acc[i].req
	}
	rh := newClient(16)
	res := replayDecided(rh, base, path, reqs, 16)
	pre, post = counts{}, counts{}
	for i := range res {
		o := &res[i]
		before := acc[i].start.Before(x.downAt) // its claim went to the Redis that was stopped
		if before {
			pre.add(o)
		} else {
			post.add(o)
		}
		if want(o) {
			continue
		}
		if x.volatile && o.netErr == "" && !o.ok() && o.status < 500 {
			continue // refused: replayed, or expired (the proofs live 10 s here)
		}
		x.t.Errorf("%s: a copy of a proof accepted %s after the fault got %s; want 401 replayed", what, acc[i].end.Sub(x.downAt), o.label())
	}
	return pre, post
}

// report prints the scenario's figures.
func (x *outage) report(immediate []string, vt, vw outageVerdict, readyDown int, firstReady time.Duration, sidePolls int) {
	t := x.t
	for _, line := range immediate {
		figure(t, "%s", line)
	}
	redisMode := "no persistence"
	if x.volatile {
		redisMode += fmt.Sprintf("; proofs live %s, skew %s, loss quarantine %s", x.proofTTL, x.skew, x.quarantine)
	}
	if x.sc.persistent {
		redisMode = "appendonly yes, appendfsync always"
	}
	figure(t, "Redis %s (%s), down %s; load %d TTS + %d WIT workers", map[bool]string{true: "SIGKILL, restarted on the same port", false: "SIGSTOP, then SIGCONT"}[x.sc.kill], redisMode, ms(x.restoreAt.Sub(x.downAt)), outageTTSWorkers, outageWITWorkers)
	for _, s := range []struct {
		what string
		v    outageVerdict
	}{{"tts", vt}, {"wit-issuer", vw}} {
		figure(t, "%s: %d requests (%s); sent and answered while Redis was down: %d (%s), slowest %s; first success %s after Redis answered again, last refusal %s after; counted as resumed from %s after (the later first success + 3 s); of the %d requests sent from then on %d refused",
			s.what, s.v.all.total(), s.v.all, s.v.down.total(), s.v.down, ms(s.v.maxDownLatency), ms(s.v.firstOKAfter), ms(s.v.lastBadAfter), ms(x.resumed.Sub(x.backAt)), s.v.steady, s.v.steadyRefused)
		figure(t, "%s: replays of %d accepted proofs: accepted before the fault %s; after it %s", s.what, len(s.v.accepted), s.v.pre, s.v.post)
	}
	figure(t, "readyz asked and answered during the outage: %d, none 200; both services ready again %s after Redis answered; JWKS and healthz: %d polls, all 200", readyDown, ms(firstReady), sidePolls)
}
