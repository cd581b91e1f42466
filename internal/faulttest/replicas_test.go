package faulttest

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// Two TTS replicas (separate processes, one issuer identifier, one signing key) share a
// Redis replay store: a WPT or an HTTP-signature nonce accepted by one is refused by
// the other, whether the copy arrives after the original or at the same moment.
func TestReplicasShareReplayStore(t *testing.T) {
	h := setup(t)
	redis := h.startRedis(t, 0, "", false)
	wi := h.startWITIssuer(t, witIssuerConfig{})
	key := writeSigningKey(t)
	cfg := ttsConfig{witJWKS: wi.url + witissuer.PathJWKS, redis: redis.addr(), signingKeyFile: key}
	replicas := []*service{h.startTTS(t, cfg), h.startTTS(t, cfg)}
	wls := newWorkloads(t, wi, 8)
	hc := newClient(64)
	proofs := []string{"wpt", "httpsig"}

	t.Run("sequential", func(t *testing.T) {
		// Each proof is accepted by one replica and sent again to the other, then to the
		// first: both copies must be refused as replays (401 invalid_client, replayed).
		const n = 1000
		first, second, again := counts{}, counts{}, counts{}
		start := time.Now()
		for i := range n {
			p, err := wls[i%len(wls)].tokenRequest(proofs[i%2], fmt.Sprintf("S-%d", i))
			if err != nil {
				t.Fatal(err)
			}
			a, b := replicas[(i/2)%2], replicas[1-(i/2)%2]
			o1 := send(hc, a.url, tts.PathToken, p, false)
			o2 := send(hc, b.url, tts.PathToken, p, false)
			o3 := send(hc, a.url, tts.PathToken, p, false)
			first.add(&o1)
			second.add(&o2)
			again.add(&o3)
			if !o1.ok() {
				t.Fatalf("request %d (%s) refused by the first replica: %s", i, p.proof, o1.label())
			}
			for _, o := range []*outcome{&o2, &o3} {
				if !isReplayed(o) {
					t.Errorf("request %d (%s): a copy got %s, want 401 replayed", i, p.proof, o.label())
				}
			}
		}
		figure(t, "%d proofs (WPT and HTTP signature alternating, replicas alternating) in %s: first replica %s; copy to the other replica %s; copy back to the first %s",
			n, ms(time.Since(start)), first, second, again)
	})

	t.Run("concurrent", func(t *testing.T) {
		// The same proof to both replicas at once: exactly one accepts.
		const n, conc = 1000, 16
		var next atomic.Int64
		var mu sync.Mutex
		pairs := counts{}
		var wg sync.WaitGroup
		start := time.Now()
		for range conc {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					p, err := wls[i%len(wls)].tokenRequest(proofs[i%2], fmt.Sprintf("C-%d", i))
					if err != nil {
						t.Error(err)
						return
					}
					var res [2]outcome
					var both sync.WaitGroup
					gate := make(chan struct{})
					for r := range 2 {
						both.Go(func() {
							<-gate
							res[r] = send(hc, replicas[r].url, tts.PathToken, p, false)
						})
					}
					close(gate)
					both.Wait()
					label := "A " + res[0].label() + " / B " + res[1].label()
					mu.Lock()
					pairs[label]++
					mu.Unlock()
					okA, okB := res[0].ok(), res[1].ok()
					switch {
					case okA && okB:
						t.Errorf("request %d (%s): both replicas accepted the same proof", i, p.proof)
					case !okA && !okB:
						t.Errorf("request %d (%s): neither replica accepted: %s", i, p.proof, label)
					case !okA && !isReplayed(&res[0]), !okB && !isReplayed(&res[1]):
						t.Errorf("request %d (%s): the refusal is not a replay: %s", i, p.proof, label)
					}
				}
			})
		}
		wg.Wait()
		figure(t, "%d proofs each sent to both replicas at the same moment (%d pairs in flight) in %s: %s", n, conc, ms(time.Since(start)), pairs)
	})
}

// isReplayed: the TTS's answer to a proof it has seen (oauth.md 1.11: invalid_client).
func isReplayed(o *outcome) bool {
	return o.netErr == "" && o.status == http.StatusUnauthorized && o.code == "replayed" && o.oauth == oauth.ErrInvalidClient
}
