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
// resumes by itself once Redis answers again (every request sent 2 s after that
// succeeds; in restart-volatile, 2 s after the quarantine ends). In restart-volatile,
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
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

func runOutage(t *testing.T, h *harness, sc outageScenario) {
	redis := h.startRedis(t, 0, "", sc.persistent)
	var quarantine, proofTTL, skew time.Duration
	volatile := sc.kill && !sc.persistent
	if volatile {
		quarantine, proofTTL, skew = 12*time.Second, 10*time.Second, time.Second
	}
	wi := h.startWITIssuer(t, witIssuerConfig{redis: redis.addr(), lossQuarantine: quarantine, proofWindow: proofTTL, skew: skew})
	svc := h.startTTS(t, ttsConfig{witJWKS: wi.url + witissuer.PathJWKS, redis: redis.addr(), lossQuarantine: quarantine, skew: skew})
	wls := newWorkloadsTTL(t, wi, 8, proofTTL)

	const ttsWorkers, witWorkers = 12, 2
	hc := newClient(ttsWorkers + witWorkers)
	recTTS := newRecorder(ttsWorkers+witWorkers, 200_000)
	recWIT := newRecorder(ttsWorkers+witWorkers, 200_000)
	var stop atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wg := runWorkers(ctx, ttsWorkers+witWorkers, 1_000_000, &stop, nil, func(w, i int) {
		wl := wls[w%len(wls)]
		if w < ttsWorkers {
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
			recTTS.add(w, send(hc, svc.url, tts.PathToken, p, false))
			return
		}
		p, err := witRequest(wi.url, wl)
		if err != nil {
			t.Error(err)
			stop.Store(true)
			return
		}
		recWIT.add(w, send(hc, wi.url, witissuer.PathWIT, p, false))
	})
	var pollWG sync.WaitGroup
	readyTTS := poller(ctx, &stop, &pollWG, svc.url+tts.PathReadyz)
	readyWIT := poller(ctx, &stop, &pollWG, wi.url+witissuer.PathReadyz)
	var side []*[]poll
	for _, u := range []string{svc.url + tts.PathJWKS, svc.url + tts.PathHealthz, wi.url + witissuer.PathJWKS, wi.url + witissuer.PathHealthz} {
		side = append(side, poller(ctx, &stop, &pollWG, u))
	}

	time.Sleep(1500 * time.Millisecond)
	if sc.kill {
		redis.signal(t, syscall.SIGKILL)
		if !redis.wait(5 * time.Second) {
			t.Fatal("redis-server did not die of SIGKILL")
		}
	} else {
		redis.signal(t, syscall.SIGSTOP)
	}
	downAt := time.Now()
	time.Sleep(3 * time.Second)
	restoreAt := time.Now()
	if sc.kill {
		h.restartRedis(t, redis) // same port; returns once it answers PING
	} else {
		redis.signal(t, syscall.SIGCONT)
		if !redis.waitPing(5 * time.Second) {
			t.Fatal("redis-server does not answer after SIGCONT")
		}
	}
	backAt := time.Now()
	// From when every request must succeed again.
	resumed := backAt.Add(quarantine + 2*time.Second)
	var immediate []string
	if volatile {
		// Every proof accepted before the restart, again, at once: still valid (they are
		// at most ~5 s old and live 10 s), and the emptied store holds none of them.
		for _, x := range []struct {
			what, base, path string
			rec              *recorder
		}{{"tts", svc.url, tts.PathToken, recTTS}, {"wit-issuer", wi.url, witissuer.PathWIT, recWIT}} {
			var reqs []*prepared
			var made []time.Time
			for _, o := range x.rec.all() {
				if o.ok() && o.start.Before(downAt) {
					reqs = append(reqs, o.req)
					made = append(made, o.start)
				}
			}
			res := replayAll(newClient(16), x.base, x.path, reqs, 16)
			c, quarantined := counts{}, 0
			for i := range res {
				o := &res[i]
				c.add(o)
				if o.ok() {
					t.Errorf("%s: a proof accepted before the restart (made %s before it) was accepted again after it", x.what, backAt.Sub(made[i]))
				}
				if o.storeUnavailable() {
					quarantined++
				}
			}
			if len(reqs) == 0 || quarantined == 0 {
				t.Errorf("%s: %d proofs from before the restart sent again, %d refused by the quarantine: the test measured nothing", x.what, len(reqs), quarantined)
			}
			immediate = append(immediate, fmt.Sprintf("%s: %d proofs accepted before the restart, sent again within %s of it: %s", x.what, len(reqs), ms(time.Since(backAt)), c))
		}
	}
	time.Sleep(time.Until(resumed.Add(time.Second)))
	stop.Store(true)
	wg.Wait()
	pollWG.Wait()
	cancel()

	type verdict struct {
		all, down                  counts
		maxDownLatency             time.Duration
		firstOKAfter, lastBadAfter time.Duration
		steady                     int
		accepted                   []outcome
	}
	judge := func(what string, outs []outcome, isTTS bool) verdict {
		v := verdict{all: counts{}, down: counts{}, firstOKAfter: -1}
		for i := range outs {
			o := &outs[i]
			v.all.add(o)
			if o.ok() {
				v.accepted = append(v.accepted, *o)
			} else if !o.storeUnavailable() {
				t.Errorf("%s: a request sent %s after the start of the fault got %s (%s); want 200 or 503 store_unavailable could_not_complete",
					what, o.start.Sub(downAt), o.label(), o.oauth)
			} else if isTTS && (o.oauth != oauth.ErrTemporarilyUnavailable || o.retryAfter == "") {
				t.Errorf("%s: 503 with error %q and Retry-After %q; want temporarily_unavailable with Retry-After", what, o.oauth, o.retryAfter)
			}
			if !o.start.Before(downAt) && !o.end.After(restoreAt) {
				v.down.add(o)
				v.maxDownLatency = max(v.maxDownLatency, o.end.Sub(o.start))
				if o.ok() {
					t.Errorf("%s: a request accepted while Redis was down (sent %s after the fault)", what, o.start.Sub(downAt))
				}
			}
			if !o.start.Before(restoreAt) {
				if o.ok() && (v.firstOKAfter < 0 || o.end.Sub(backAt) < v.firstOKAfter) {
					v.firstOKAfter = o.end.Sub(backAt)
				}
				if !o.ok() {
					v.lastBadAfter = max(v.lastBadAfter, o.end.Sub(backAt))
				}
			}
			if o.start.After(resumed) {
				v.steady++
				if !o.ok() {
					t.Errorf("%s: service has not resumed: a request sent %s after Redis returned got %s", what, o.start.Sub(backAt), o.label())
				}
			}
		}
		if v.down.total() == 0 {
			t.Errorf("%s: no request fell inside the outage: the test measured nothing", what)
		}
		if v.steady == 0 {
			t.Errorf("%s: no request after Redis returned", what)
		}
		if v.maxDownLatency > 2*time.Second {
			t.Errorf("%s: a refusal during the outage took %s: want the store timeout (500 ms), not a hang", what, v.maxDownLatency)
		}
		return v
	}
	vt := judge("tts", recTTS.all(), true)
	vw := judge("wit-issuer", recWIT.all(), false)

	// Side endpoints and readiness: a readyz asked and answered while Redis was down
	// says not ready; both say ready again soon after Redis returns; the JWKS and
	// healthz never need the store and are served throughout.
	var readyDown, sidePolls, sideBad int
	firstReady := time.Duration(-1)
	for _, ps := range []*[]poll{readyTTS, readyWIT} {
		first := time.Duration(-1)
		for _, p := range *ps {
			if !p.start.Before(downAt) && !p.end.After(restoreAt) {
				readyDown++
				if p.status == http.StatusOK {
					t.Errorf("/readyz said ready while Redis was down (asked %s after the fault)", p.start.Sub(downAt))
				}
			}
			if !p.start.Before(backAt) && p.status == http.StatusOK && first < 0 {
				first = p.end.Sub(backAt)
			}
		}
		if first < 0 {
			t.Errorf("/readyz never became 200 again after Redis returned")
		}
		firstReady = max(firstReady, first)
	}
	for _, ps := range side {
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

	// Every accepted proof, once more.
	replay := func(what string, base, path string, acc []outcome, want func(*outcome) bool) (pre, post counts) {
		reqs := make([]*prepared, len(acc))
		for i := range acc {
			reqs[i] = acc[i].req
		}
		rh := newClient(16)
		res := replayAll(rh, base, path, reqs, 16)
		pre, post = counts{}, counts{}
		for i := range res {
			o := &res[i]
			before := acc[i].start.Before(downAt) // its claim went to the Redis that was stopped
			if before {
				pre.add(o)
			} else {
				post.add(o)
			}
			if want(o) {
				continue
			}
			if volatile && o.netErr == "" && !o.ok() && o.status < 500 {
				continue // refused: replayed, or expired (the proofs live 10 s here)
			}
			t.Errorf("%s: a copy of a proof accepted %s after the fault got %s; want 401 replayed", what, acc[i].end.Sub(downAt), o.label())
		}
		return pre, post
	}
	preT, postT := replay("tts", svc.url, tts.PathToken, vt.accepted, isReplayed)
	preW, postW := replay("wit-issuer", wi.url, witissuer.PathWIT, vw.accepted, func(o *outcome) bool {
		return o.netErr == "" && o.status == http.StatusUnauthorized && o.code == "replayed"
	})

	for _, line := range immediate {
		figure(t, "%s", line)
	}
	redisMode := "no persistence"
	if volatile {
		redisMode += fmt.Sprintf("; proofs live %s, skew %s, loss quarantine %s", proofTTL, skew, quarantine)
	}
	if sc.persistent {
		redisMode = "appendonly yes, appendfsync always"
	}
	figure(t, "Redis %s (%s), down %s; load %d TTS + %d WIT workers", map[bool]string{true: "SIGKILL, restarted on the same port", false: "SIGSTOP, then SIGCONT"}[sc.kill], redisMode, ms(restoreAt.Sub(downAt)), ttsWorkers, witWorkers)
	for _, x := range []struct {
		what string
		v    verdict
		pre  counts
		post counts
	}{{"tts", vt, preT, postT}, {"wit-issuer", vw, preW, postW}} {
		figure(t, "%s: %d requests (%s); sent and answered while Redis was down: %d (%s), slowest %s; first success %s after Redis answered again, last refusal %s after; %d requests from %s after: all 200",
			x.what, x.v.all.total(), x.v.all, x.v.down.total(), x.v.down, ms(x.v.maxDownLatency), ms(x.v.firstOKAfter), ms(x.v.lastBadAfter), x.v.steady, ms(resumed.Sub(backAt)))
		figure(t, "%s: replays of %d accepted proofs: accepted before the fault %s; after it %s", x.what, len(x.v.accepted), x.pre, x.post)
	}
	figure(t, "readyz asked and answered during the outage: %d, none 200; both services ready again %s after Redis answered; JWKS and healthz: %d polls, all 200", readyDown, ms(firstReady), sidePolls)
}
