package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// countingTransport counts a receiver's JWKS fetches.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// Key rotation during load: the TTS rotates its signing key with its own mechanism
// (keys.rotation_period 2 s, publish_delay 1 s, the schedule checked every 100 ms, keys
// kept in its data_dir) while workloads request Txn-Tokens and four receivers, each
// with its own keys.RemoteSet on the TTS's JWKS (refetched on an unknown kid, at most
// every 500 ms), verify every token as soon as it is issued. Publish-before-use holds
// when the publish delay is at least the receivers' refresh bound: zero failed
// requests and zero failed verifications; afterwards a fresh receiver still verifies
// tokens of every key, retired ones included.
func TestKeyRotationUnderLoad(t *testing.T) {
	h := setup(t)
	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	r := startRotation(t, h, rctx)
	ctx, cancel := context.WithTimeout(context.Background(), rotDuration+30*time.Second)
	defer cancel()
	l := r.load(ctx)
	l.check(t)
	if l.controlFail.Load() == 0 {
		t.Errorf("the control receiver (refetch at most every 30 s) never saw an unknown kid: the rotation was not exercised")
	}
	lateOK, lateN := r.verifyKept(ctx, l)
	r.report(l, lateOK, lateN)
}

// The rotation schedule, the receivers' refresh bound and the load.
const (
	rotPeriod, rotPublishDelay, rotStep = 2 * time.Second, time.Second, 100 * time.Millisecond
	rotMinRefresh                       = 500 * time.Millisecond
	rotDuration                         = 12 * time.Second
	rotWorkers, rotReceivers            = 12, 4
)

// rotationRun is the TTS that rotates, its workloads and the receivers that verify
// its tokens.
type rotationRun struct {
	t       *testing.T
	rctx    context.Context // the receivers' key sets live as long as it
	svc     *service
	wls     []*workload
	fetches []*countingTransport
	vs      []*txntoken.Verifier
	// control may refetch only every 30 s, longer than the publish delay, and must see
	// unknown kids. It shows that the test can see a failure.
	control *txntoken.Verifier
}

func startRotation(t *testing.T, h *harness, rctx context.Context) *rotationRun {
	wi := h.startWITIssuer(t, witIssuerConfig{})
	r := &rotationRun{t: t, rctx: rctx}
	r.svc = h.startTTS(t, ttsConfig{witJWKS: wi.url + witissuer.PathJWKS, rotationPeriod: rotPeriod, publishDelay: rotPublishDelay, stepInterval: rotStep})
	r.wls = newWorkloads(t, wi, 8)
	r.fetches = make([]*countingTransport, rotReceivers)
	r.vs = make([]*txntoken.Verifier, rotReceivers)
	for i := range r.vs {
		r.fetches[i] = &countingTransport{}
		r.vs[i] = r.newReceiver(r.fetches[i], rotMinRefresh)
	}
	r.control = r.newReceiver(&countingTransport{}, 30*time.Second)
	return r
}

// newReceiver is a verifier with its own keys.RemoteSet on the TTS's JWKS, refetched
// on an unknown kid at most every minRefresh.
func (r *rotationRun) newReceiver(ct *countingTransport, minRefresh time.Duration) *txntoken.Verifier {
	rs, err := keys.NewRemoteSet(r.rctx, r.svc.url+tts.PathJWKS, keys.WithMinRefresh(minRefresh),
		keys.WithHTTPClient(&http.Client{Transport: ct, Timeout: 5 * time.Second}))
	if err != nil {
		r.t.Fatal(err)
	}
	return txntoken.NewVerifier(rs, trustDomain, txntoken.WithIssuer(ttsIssuer))
}

// rotationLoad is what the load saw.
type rotationLoad struct {
	mu                    sync.Mutex
	reqFail, verifyFail   counts
	perKID                map[string]int
	firstSeen             map[string]time.Time
	kept                  map[string][]string // a few tokens per kid, verified again at the end
	verified              atomic.Int64
	controlN, controlFail atomic.Int64
	jwksSizes             []int
	start                 time.Time
	elapsed               time.Duration
}

// load requests Txn-Tokens for rotDuration and has a receiver verify each at once,
// while the JWKS is polled every 200 ms.
func (r *rotationRun) load(ctx context.Context) *rotationLoad {
	l := &rotationLoad{reqFail: counts{}, verifyFail: counts{}, perKID: map[string]int{}, firstSeen: map[string]time.Time{}, kept: map[string][]string{}}
	hc := newClient(rotWorkers)
	var stop atomic.Bool
	l.start = time.Now()
	wg := runWorkers(ctx, rotWorkers, 1_000_000, &stop, nil, func(w, i int) {
		r.requestAndVerify(ctx, hc, l, &stop, w, i)
	})
	// The JWKS as the receivers see it, every 200 ms.
	var pollWG sync.WaitGroup
	pollWG.Go(func() {
		for i := 0; i < 1000 && !stop.Load() && ctx.Err() == nil; i++ {
			if n := jwksSize(r.svc.url + tts.PathJWKS); n > 0 && (len(l.jwksSizes) == 0 || l.jwksSizes[len(l.jwksSizes)-1] != n) {
				l.jwksSizes = append(l.jwksSizes, n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	time.Sleep(rotDuration)
	stop.Store(true)
	wg.Wait()
	pollWG.Wait()
	l.elapsed = time.Since(l.start)
	return l
}

// requestAndVerify is one worker's step: a Txn-Token request (WPT and HTTP signature
// alternating), verified by the worker's receiver (worker 0's also by the control).
func (r *rotationRun) requestAndVerify(ctx context.Context, hc *http.Client, l *rotationLoad, stop *atomic.Bool, w, i int) {
	t := r.t
	proof := "wpt"
	if (w+i)%2 == 1 {
		proof = "httpsig"
	}
	dlg := fmt.Sprintf("K-%d-%d", w, i)
	p, err := r.wls[w%len(r.wls)].tokenRequest(proof, dlg)
	if err != nil {
		t.Error(err)
		stop.Store(true)
		return
	}
	o := send(hc, r.svc.url, tts.PathToken, p, true)
	if !o.ok() {
		l.mu.Lock()
		l.reqFail.add(&o)
		l.mu.Unlock()
		return
	}
	tok, err := jose.Parse(o.token, 0)
	kid := "?"
	if err == nil {
		kid = tok.Kid
	}
	if w == 0 {
		l.controlN.Add(1)
		if _, err := r.control.Verify(ctx, o.token); errcode.CodeOf(err) == errcode.UnknownKey {
			l.controlFail.Add(1)
		}
	}
	claims, err := r.vs[w%rotReceivers].Verify(ctx, o.token)
	if err == nil && claims.Dialog() != dlg {
		err = errcode.New(errcode.DialogMismatch, "tctx.dlg %q, want %q", claims.Dialog(), dlg)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.verifyFail[string(errcode.CodeOf(err))]++
		if len(l.verifyFail) == 1 && l.verifyFail.total() == 1 {
			t.Errorf("verification failed (kid %s, %s after start): %v", kid, time.Since(l.start), err)
		}
		return
	}
	l.verified.Add(1)
	l.perKID[kid]++
	if _, ok := l.firstSeen[kid]; !ok {
		l.firstSeen[kid] = time.Now()
	}
	if len(l.kept[kid]) < 20 {
		l.kept[kid] = append(l.kept[kid], o.token)
	}
}

// check: zero failed requests, zero failed verifications, and at least two rotations.
func (l *rotationLoad) check(t *testing.T) {
	if l.reqFail.total() > 0 {
		t.Errorf("token requests failed during rotation: %s", l.reqFail)
	}
	if l.verifyFail.total() > 0 {
		t.Errorf("verifications failed during rotation: %s", l.verifyFail)
	}
	if len(l.perKID) < 3 {
		t.Errorf("tokens were signed by %d keys in %s: want at least 3 (two rotations)", len(l.perKID), rotDuration)
	}
}

// verifyKept verifies the kept tokens of every key, retired ones included, at a
// receiver that starts now.
func (r *rotationRun) verifyKept(ctx context.Context, l *rotationLoad) (lateOK, lateN int) {
	late := r.newReceiver(&countingTransport{}, rotMinRefresh)
	for kid, toks := range l.kept {
		for _, tok := range toks {
			lateN++
			if _, err := late.Verify(ctx, tok); err != nil {
				r.t.Errorf("a token of key %s no longer verifies: %v", kid, err)
				continue
			}
			lateOK++
		}
	}
	return lateOK, lateN
}

// report prints the figures: the keys in the order they signed, the JWKS over time and
// the receivers' fetches.
func (r *rotationRun) report(l *rotationLoad, lateOK, lateN int) {
	t := r.t
	type kidAt struct {
		kid string
		at  time.Duration
		n   int
	}
	var order []kidAt
	for k, at := range l.firstSeen {
		order = append(order, kidAt{k, at.Sub(l.start), l.perKID[k]})
	}
	sort.Slice(order, func(i, j int) bool { return order[i].at < order[j].at })
	var series []string
	for _, k := range order {
		series = append(series, fmt.Sprintf("%.8s… from %s: %d", k.kid, ms(k.at), k.n))
	}
	var nf int64
	for _, f := range r.fetches {
		nf += f.n.Load()
	}
	figure(t, "rotation_period %s, publish_delay %s, step_interval %s; receivers refetch on an unknown kid at most every %s", rotPeriod, rotPublishDelay, rotStep, rotMinRefresh)
	figure(t, "%d token requests in %s by %d workers, failed: %s; verified at once by %d receivers: %d, failed: %s",
		int(l.verified.Load())+l.reqFail.total()+l.verifyFail.total(), ms(l.elapsed), rotWorkers, l.reqFail, rotReceivers, l.verified.Load(), l.verifyFail)
	figure(t, "signing keys seen, in order (first token, tokens): %v", series)
	figure(t, "keys in the JWKS over time: %v; JWKS fetches by the %d receivers: %d; tokens of every key verified again by a new receiver: %d/%d", l.jwksSizes, rotReceivers, nf, lateOK, lateN)
	figure(t, "control receiver refetching at most every 30 s (more than the publish delay): %d of %d tokens refused unknown_key", l.controlFail.Load(), l.controlN.Load())
}

// jwksSize is the number of keys the JWKS at url publishes (0 on any error).
func jwksSize(url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := probeClient.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if json.NewDecoder(res.Body).Decode(&set) != nil {
		return 0
	}
	return len(set.Keys)
}
