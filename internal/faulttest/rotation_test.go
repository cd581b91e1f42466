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
	const (
		period, publishDelay, step = 2 * time.Second, time.Second, 100 * time.Millisecond
		minRefresh                 = 500 * time.Millisecond
		duration                   = 12 * time.Second
		workers, receivers         = 12, 4
	)
	wi := h.startWITIssuer(t, witIssuerConfig{})
	svc := h.startTTS(t, ttsConfig{witJWKS: wi.url + witissuer.PathJWKS, rotationPeriod: period, publishDelay: publishDelay, stepInterval: step})
	wls := newWorkloads(t, wi, 8)

	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	newReceiver := func(ct *countingTransport, minRefresh time.Duration) *txntoken.Verifier {
		rs, err := keys.NewRemoteSet(rctx, svc.url+tts.PathJWKS, keys.WithMinRefresh(minRefresh),
			keys.WithHTTPClient(&http.Client{Transport: ct, Timeout: 5 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		return txntoken.NewVerifier(rs, trustDomain, txntoken.WithIssuer(ttsIssuer))
	}
	fetches := make([]*countingTransport, receivers)
	vs := make([]*txntoken.Verifier, receivers)
	for i := range vs {
		fetches[i] = &countingTransport{}
		vs[i] = newReceiver(fetches[i], minRefresh)
	}
	// The control: a receiver that may refetch only every 30 s, longer than the publish
	// delay, must see unknown kids. It shows that the test can see a failure.
	control := newReceiver(&countingTransport{}, 30*time.Second)
	var controlN, controlFail atomic.Int64

	var (
		mu         sync.Mutex
		reqFail    = counts{}
		verifyFail = counts{}
		perKID     = map[string]int{}
		firstSeen  = map[string]time.Time{}
		kept       = map[string][]string{} // a few tokens per kid, verified again at the end
		verified   atomic.Int64
	)
	hc := newClient(workers)
	var stop atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), duration+30*time.Second)
	defer cancel()
	start := time.Now()
	wg := runWorkers(ctx, workers, 1_000_000, &stop, nil, func(w, i int) {
		proof := "wpt"
		if (w+i)%2 == 1 {
			proof = "httpsig"
		}
		dlg := fmt.Sprintf("K-%d-%d", w, i)
		p, err := wls[w%len(wls)].tokenRequest(proof, dlg)
		if err != nil {
			t.Error(err)
			stop.Store(true)
			return
		}
		o := send(hc, svc.url, tts.PathToken, p, true)
		if !o.ok() {
			mu.Lock()
			reqFail.add(&o)
			mu.Unlock()
			return
		}
		tok, err := jose.Parse(o.token, 0)
		kid := "?"
		if err == nil {
			kid = tok.Kid
		}
		if w == 0 {
			controlN.Add(1)
			if _, err := control.Verify(ctx, o.token); errcode.CodeOf(err) == errcode.UnknownKey {
				controlFail.Add(1)
			}
		}
		claims, err := vs[w%receivers].Verify(ctx, o.token)
		if err == nil && claims.Dialog() != dlg {
			err = errcode.New(errcode.DialogMismatch, "tctx.dlg %q, want %q", claims.Dialog(), dlg)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			verifyFail[string(errcode.CodeOf(err))]++
			if len(verifyFail) == 1 && verifyFail.total() == 1 {
				t.Errorf("verification failed (kid %s, %s after start): %v", kid, time.Since(start), err)
			}
			return
		}
		verified.Add(1)
		perKID[kid]++
		if _, ok := firstSeen[kid]; !ok {
			firstSeen[kid] = time.Now()
		}
		if len(kept[kid]) < 20 {
			kept[kid] = append(kept[kid], o.token)
		}
	})
	// The JWKS as the receivers see it, every 200 ms.
	var jwksSizes []int
	var pollWG sync.WaitGroup
	pollWG.Go(func() {
		for i := 0; i < 1000 && !stop.Load() && ctx.Err() == nil; i++ {
			if n := jwksSize(svc.url + tts.PathJWKS); n > 0 && (len(jwksSizes) == 0 || jwksSizes[len(jwksSizes)-1] != n) {
				jwksSizes = append(jwksSizes, n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	time.Sleep(duration)
	stop.Store(true)
	wg.Wait()
	pollWG.Wait()
	elapsed := time.Since(start)

	if reqFail.total() > 0 {
		t.Errorf("token requests failed during rotation: %s", reqFail)
	}
	if verifyFail.total() > 0 {
		t.Errorf("verifications failed during rotation: %s", verifyFail)
	}
	if len(perKID) < 3 {
		t.Errorf("tokens were signed by %d keys in %s: want at least 3 (two rotations)", len(perKID), duration)
	}

	// Every key's tokens still verify, at a receiver that starts now.
	if controlFail.Load() == 0 {
		t.Errorf("the control receiver (refetch at most every 30 s) never saw an unknown kid: the rotation was not exercised")
	}
	late := newReceiver(&countingTransport{}, minRefresh)
	lateOK, lateN := 0, 0
	for kid, toks := range kept {
		for _, tok := range toks {
			lateN++
			if _, err := late.Verify(ctx, tok); err != nil {
				t.Errorf("a token of key %s no longer verifies: %v", kid, err)
				continue
			}
			lateOK++
		}
	}

	type kidAt struct {
		kid string
		at  time.Duration
		n   int
	}
	var order []kidAt
	for k, at := range firstSeen {
		order = append(order, kidAt{k, at.Sub(start), perKID[k]})
	}
	sort.Slice(order, func(i, j int) bool { return order[i].at < order[j].at })
	var series []string
	for _, k := range order {
		series = append(series, fmt.Sprintf("%.8s… from %s: %d", k.kid, ms(k.at), k.n))
	}
	var nf int64
	for _, f := range fetches {
		nf += f.n.Load()
	}
	figure(t, "rotation_period %s, publish_delay %s, step_interval %s; receivers refetch on an unknown kid at most every %s", period, publishDelay, step, minRefresh)
	figure(t, "%d token requests in %s by %d workers, failed: %s; verified at once by %d receivers: %d, failed: %s",
		int(verified.Load())+reqFail.total()+verifyFail.total(), ms(elapsed), workers, reqFail, receivers, verified.Load(), verifyFail)
	figure(t, "signing keys seen, in order (first token, tokens): %v", series)
	figure(t, "keys in the JWKS over time: %v; JWKS fetches by the %d receivers: %d; tokens of every key verified again by a new receiver: %d/%d", jwksSizes, receivers, nf, lateOK, lateN)
	figure(t, "control receiver refetching at most every 30 s (more than the publish delay): %d of %d tokens refused unknown_key", controlFail.Load(), controlN.Load())
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
