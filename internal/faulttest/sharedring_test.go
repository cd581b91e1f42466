package faulttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// One key ring for all replicas (issue 16; docs/operator.md "Shared key ring",
// docs/reliability.md test 7): three replicas of one service, separate processes, share
// one redis-server for their replay store and for keys.shared (a secret file), and
// rotate every few seconds (keys.rotation_period 1 s, publish_delay 2 s, step_interval
// 100 ms, jwks_max_age 1 s) while workloads request tokens from them round-robin. Each
// token is verified at once by two receivers, each with its own keys.RemoteSet on the
// JWKS of one of the two OTHER replicas (refetched on an unknown kid at most every
// 500 ms): a replica that signed with a key another replica did not publish yet fails
// the test.
//
// Criteria, for the TTS (Txn-Tokens) and the wit-issuer (WITs):
//
//   - zero failed requests (a fail-closed 503 store_unavailable is counted apart, and
//     must be zero too: Redis runs throughout);
//   - zero failed verifications at any receiver;
//   - at least ringMinKeys signing keys seen (three rotations), each replica signing
//     with at least three of them (every replica follows the shared rotation);
//   - at the end, the three JWKS list the same kids (retried for a few steps: a key
//     stored a moment ago may be published by one replica and not yet by another);
//   - receivers started at the end, one per replica, still verify the kept tokens of
//     every key, retired ones included (they live an hour here);
//   - a control receiver that may refetch only every 30 s sees unknown_key, which
//     shows the test can see a failure.
//
// The figures are the keys in order, who signed with each, and how long before its
// first token each key was seen in every replica's JWKS (polled every 100 ms; a figure,
// not a criterion: it depends on the machine).
func TestSharedKeyRingRotationThreeReplicas(t *testing.T) {
	h := setup(t)
	secret := writeRingSecret(t)
	rot := keyRotation{period: ringPeriod, publishDelay: ringPublishDelay, step: ringStep, jwksMaxAge: ringJWKSMaxAge, sharedSecretFile: secret}

	t.Run("tts", func(t *testing.T) {
		redis := h.startRedis(t, 0, "", false)
		wi := h.startWITIssuer(t, witIssuerConfig{})
		cfg := ttsConfig{witJWKS: wi.url + witissuer.PathJWKS, redis: redis.addr(), rotationPeriod: rot.period, publishDelay: rot.publishDelay,
			stepInterval: rot.step, jwksMaxAge: rot.jwksMaxAge, sharedSecretFile: rot.sharedSecretFile}
		replicas := make([]*service, 3)
		for i := range replicas {
			replicas[i] = h.startTTS(t, cfg)
		}
		runSharedRing(t, ttsRing(t, wi, replicas))
	})

	t.Run("wit-issuer", func(t *testing.T) {
		const issuer = "http://wit.fault.test"
		redis := h.startRedis(t, 0, "", false)
		cfg := witIssuerConfig{redis: redis.addr(), issuer: issuer, rotation: rot}
		replicas := make([]*service, 3)
		for i := range replicas {
			replicas[i] = h.startWITIssuer(t, cfg)
		}
		subjects := make([]*workload, 8)
		for i := range subjects {
			subjects[i] = &workload{id: identifier.MustParse(fmt.Sprintf("wimse://%s/agent/w%d", trustDomain, i))}
		}
		runSharedRing(t, ringService{
			replicas: replicas, path: witissuer.PathWIT,
			request: func(w, _ int) (*prepared, error) { return witRequest(issuer, subjects[w%len(subjects)]) },
			verifier: func(ks keys.KeySet) verifyFunc {
				v := wit.NewValidator(keys.NewTrust().AddTrustDomain(trustDomain, ks), wit.WithIssuers(issuer))
				return func(ctx context.Context, tok string, w, _ int) error {
					got, err := v.Validate(ctx, tok)
					if want := subjects[w%len(subjects)].id.String(); err == nil && got.SubjectString() != want {
						err = errcode.New(errcode.InvalidClaim, "sub %q, want %q", got.SubjectString(), want)
					}
					return err
				}
			},
		})
	})
}

// The shared rotation schedule, the receivers' refresh bound and the load. The publish
// delay exceeds the step plus the JWKS cache time (checked at start) and leaves 1.4 s
// beyond a step and a receiver's refresh bound for a busy machine.
const (
	ringPeriod, ringPublishDelay, ringStep, ringJWKSMaxAge = time.Second, 2 * time.Second, 100 * time.Millisecond, time.Second
	ringMinRefresh                                         = 500 * time.Millisecond
	ringDuration                                           = 16 * time.Second
	ringWorkers                                            = 12
	ringMinKeys                                            = 4
)

// ttsRing is the TTS's replicas under the load of 8 workloads, each asking for
// Txn-Tokens with alternating proofs (WPT, HTTP signature), each token verified as a
// receiver does (issuer, trust domain, the dialog it was asked for).
func ttsRing(t *testing.T, wi *service, replicas []*service) ringService {
	wls := newWorkloads(t, wi, 8)
	dlg := func(w, i int) string { return fmt.Sprintf("R-%d-%d", w, i) }
	return ringService{
		replicas: replicas, path: tts.PathToken,
		request: func(w, i int) (*prepared, error) {
			proof := "wpt"
			if (w+i)%2 == 1 {
				proof = "httpsig"
			}
			return wls[w%len(wls)].tokenRequest(proof, dlg(w, i))
		},
		verifier: func(ks keys.KeySet) verifyFunc {
			v := txntoken.NewVerifier(ks, trustDomain, txntoken.WithIssuer(ttsIssuer))
			return func(ctx context.Context, tok string, w, i int) error {
				claims, err := v.Verify(ctx, tok)
				if err == nil && claims.Dialog() != dlg(w, i) {
					err = errcode.New(errcode.DialogMismatch, "tctx.dlg %q, want %q", claims.Dialog(), dlg(w, i))
				}
				return err
			}
		},
	}
}

// verifyFunc verifies request i of worker w's token.
type verifyFunc func(ctx context.Context, token string, w, i int) error

// ringService is one service's replicas and how to ask them for a token and verify it.
type ringService struct {
	// schedule is the replicas' rotation (period, publishDelay, step, jwksMaxAge) and
	// duration how long the load runs; zero: the shared ring's (ringPeriod ...,
	// ringDuration).
	schedule keyRotation
	duration time.Duration
	replicas []*service
	path     string
	request  func(w, i int) (*prepared, error)
	verifier func(keys.KeySet) verifyFunc
}

// writeRingSecret writes a random 48-byte keys.shared secret (hex) to a 0600 file.
func writeRingSecret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 48)
	_, _ = rand.Read(b)
	path := filepath.Join(t.TempDir(), "keyring-secret")
	if err := os.WriteFile(path, []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ringLoad is what the load saw.
type ringLoad struct {
	mu                      sync.Mutex
	reqFail, verifyFail     counts
	storeUnavailable        int
	perKID                  map[string][]int // tokens by signing replica
	firstSigned             map[string]time.Time
	kept                    map[string][]keptToken
	verified                atomic.Int64
	controlN, controlFailed atomic.Int64
	// published[r][kid] is when replica r's JWKS was first seen listing kid.
	published []map[string]time.Time
	start     time.Time
	elapsed   time.Duration
}

type keptToken struct {
	token string
	w, i  int
}

// runSharedRing runs the load on s.replicas (two or more): each token is verified on
// every other replica's JWKS.
func runSharedRing(t *testing.T, s ringService) {
	n := len(s.replicas)
	if s.schedule.period == 0 {
		s.schedule = keyRotation{period: ringPeriod, publishDelay: ringPublishDelay, step: ringStep, jwksMaxAge: ringJWKSMaxAge}
	}
	if s.duration == 0 {
		s.duration = ringDuration
	}
	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	// Both services serve their JWKS at the same path (service.PathJWKS).
	jwksURL := func(r int) string { return s.replicas[r].url + witissuer.PathJWKS }
	newVerifier := func(r int, minRefresh time.Duration) verifyFunc {
		rs, err := keys.NewRemoteSet(rctx, jwksURL(r), keys.WithMinRefresh(minRefresh),
			keys.WithHTTPClient(&http.Client{Timeout: 5 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		return s.verifier(rs)
	}
	// receivers[r][j] verify the tokens replica r signs, on replica (r+1+j)%n's JWKS:
	// every other replica's.
	receivers := make([][]verifyFunc, n)
	for r := range n {
		for j := range n - 1 {
			receivers[r] = append(receivers[r], newVerifier((r+1+j)%n, ringMinRefresh))
		}
	}
	control := newVerifier(1, 30*time.Second)

	l := &ringLoad{reqFail: counts{}, verifyFail: counts{}, perKID: map[string][]int{}, firstSigned: map[string]time.Time{}, kept: map[string][]keptToken{},
		published: make([]map[string]time.Time, n)}
	for r := range l.published {
		l.published[r] = map[string]time.Time{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.duration+30*time.Second)
	defer cancel()
	hc := newClient(ringWorkers)
	var stop atomic.Bool
	l.start = time.Now()
	wg := runWorkers(ctx, ringWorkers, 1_000_000, &stop, nil, func(w, i int) {
		r := (w + i) % n // round-robin across the replicas
		p, err := s.request(w, i)
		if err != nil {
			t.Error(err)
			stop.Store(true)
			return
		}
		o := send(hc, s.replicas[r].url, s.path, p, true)
		if !o.ok() {
			l.mu.Lock()
			l.reqFail.add(&o)
			if o.storeUnavailable() {
				l.storeUnavailable++
			}
			l.mu.Unlock()
			return
		}
		kid := "?"
		if tok, err := jose.Parse(o.token, 0); err == nil {
			kid = tok.Kid
		}
		if w == 0 && r == 0 {
			l.controlN.Add(1)
			if err := control(ctx, o.token, w, i); errcode.CodeOf(err) == errcode.UnknownKey {
				l.controlFailed.Add(1)
			}
		}
		errs := make([]error, n-1)
		for j, v := range receivers[r] {
			errs[j] = v(ctx, o.token, w, i)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		failed := false
		for j, err := range errs {
			if err == nil {
				continue
			}
			if l.verifyFail.total() == 0 {
				t.Errorf("a token of replica %d (kid %s, %s after start) failed verification on replica %d's JWKS: %v",
					r, kid, time.Since(l.start), (r+1+j)%n, err)
			}
			l.verifyFail[string(errcode.CodeOf(err))]++
			failed = true
		}
		if failed {
			return
		}
		l.verified.Add(1)
		per := l.perKID[kid]
		if per == nil {
			per = make([]int, n)
			l.perKID[kid] = per
		}
		per[r]++
		if _, ok := l.firstSigned[kid]; !ok {
			l.firstSigned[kid] = o.start
		}
		if len(l.kept[kid]) < 20 {
			l.kept[kid] = append(l.kept[kid], keptToken{o.token, w, i})
		}
	})
	// Every replica's JWKS, every 100 ms: when each kid first appears there.
	var pollWG sync.WaitGroup
	for r := range n {
		pollWG.Go(func() {
			for k := 0; k < 10_000 && !stop.Load() && ctx.Err() == nil; k++ {
				kids, _ := jwksKIDs(jwksURL(r))
				now := time.Now()
				l.mu.Lock()
				for _, k := range kids {
					if _, ok := l.published[r][k]; !ok {
						l.published[r][k] = now
					}
				}
				l.mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	time.Sleep(s.duration)
	stop.Store(true)
	wg.Wait()
	pollWG.Wait()
	l.elapsed = time.Since(l.start)

	if l.reqFail.total() > 0 {
		t.Errorf("token requests failed during rotation: %s (store_unavailable among them: %d)", l.reqFail, l.storeUnavailable)
	}
	if l.verifyFail.total() > 0 {
		t.Errorf("verifications failed during rotation: %s", l.verifyFail)
	}
	if len(l.perKID) < ringMinKeys {
		t.Errorf("tokens were signed by %d keys in %s: want at least %d", len(l.perKID), s.duration, ringMinKeys)
	}
	for r := range n {
		used := 0
		for _, per := range l.perKID {
			if per[r] > 0 {
				used++
			}
		}
		if used < 3 {
			t.Errorf("replica %d signed with %d keys: it did not follow the shared rotation", r, used)
		}
	}
	if l.controlFailed.Load() == 0 {
		t.Errorf("the control receiver (refetch at most every 30 s) never saw an unknown kid: the rotation was not exercised")
	}

	// The same kids at every replica, within a few steps.
	sets := make([][]string, n)
	agreed := false
	for attempt := 0; attempt < 40 && !agreed; attempt++ {
		if attempt > 0 {
			time.Sleep(s.schedule.step)
		}
		agreed = true
		for r := range n {
			kids, err := jwksKIDs(jwksURL(r))
			if err != nil {
				t.Fatalf("JWKS of replica %d: %v", r, err)
			}
			sort.Strings(kids)
			sets[r] = kids
			agreed = agreed && slices.Equal(sets[r], sets[0])
		}
	}
	if !agreed {
		t.Errorf("the replicas' JWKS differ at the end: %v", sets)
	}

	// Receivers started now, one per replica, verify the kept tokens of every key.
	lateOK, lateN := 0, 0
	for r := range n {
		late := newVerifier(r, ringMinRefresh)
		for kid, toks := range l.kept {
			for _, k := range toks {
				lateN++
				if err := late(ctx, k.token, k.w, k.i); err != nil {
					t.Errorf("a token of key %s no longer verifies on replica %d's JWKS: %v", kid, r, err)
					continue
				}
				lateOK++
			}
		}
	}
	l.report(t, s.schedule, sets[0], lateOK, lateN)
}

// report prints the figures.
func (l *ringLoad) report(t *testing.T, sc keyRotation, final []string, lateOK, lateN int) {
	n := len(l.published)
	type kidAt struct {
		kid string
		at  time.Time
	}
	var order []kidAt
	for k, at := range l.firstSigned {
		order = append(order, kidAt{k, at})
	}
	sort.Slice(order, func(i, j int) bool { return order[i].at.Before(order[j].at) })
	var series []string
	var leads []time.Duration
	for _, k := range order {
		per := l.perKID[k.kid]
		// How long before its first token the key was seen in every JWKS, for the
		// keys that were first published after the polling began.
		lead := "published before the load"
		if k.at.Sub(l.start) > sc.publishDelay+sc.step {
			var worst time.Duration
			for r := range n {
				at, ok := l.published[r][k.kid]
				if !ok {
					lead = fmt.Sprintf("never seen at replica %d", r)
					break
				}
				if d := k.at.Sub(at); r == 0 || d < worst {
					worst = d
				}
				if r == n-1 {
					lead = ms(worst) + " before"
					leads = append(leads, worst)
				}
			}
		}
		byReplica := make([]string, n)
		for r, c := range per {
			byReplica[r] = strconv.Itoa(c)
		}
		series = append(series, fmt.Sprintf("%.8s… from %s (tokens by replica %s: %s; in every JWKS %s)",
			k.kid, ms(k.at.Sub(l.start)), replicaNames(n), strings.Join(byReplica, "/"), lead))
	}
	figure(t, "rotation_period %s, publish_delay %s, step_interval %s, jwks_max_age %s; receivers refetch on an unknown kid at most every %s",
		sc.period, sc.publishDelay, sc.step, sc.jwksMaxAge, ringMinRefresh)
	figure(t, "%d requests in %s by %d workers round-robin across %d replicas, failed: %s (store_unavailable: %d); each token verified at once on every other replica's JWKS: %d tokens, failed verifications: %s",
		int(l.verified.Load())+l.reqFail.total()+l.verifyFail.total(), ms(l.elapsed), ringWorkers, n, l.reqFail, l.storeUnavailable, l.verified.Load(), l.verifyFail)
	figure(t, "signing keys in order of their first token: %s", strings.Join(series, "; "))
	if len(leads) > 0 {
		figure(t, "shortest time a key rotated in during the load was listed by every JWKS before its first token: %s (publish_delay %s, JWKS polled every 100 ms)", ms(slices.Min(leads)), sc.publishDelay)
	}
	figure(t, "kids in every replica's JWKS at the end: %d, the same at all %d; kept tokens of every key verified again by new receivers on each replica: %d/%d", len(final), n, lateOK, lateN)
	figure(t, "control receiver refetching at most every 30 s: %d of %d tokens refused unknown_key", l.controlFailed.Load(), l.controlN.Load())
}

// replicaNames is "0/1/2" for three replicas.
func replicaNames(n int) string {
	names := make([]string, n)
	for r := range names {
		names[r] = strconv.Itoa(r)
	}
	return strings.Join(names, "/")
}

// jwksKIDs returns the kids the JWKS at url publishes.
func jwksKIDs(url string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	res, err := probeClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", res.StatusCode)
	}
	set, err := keys.ParseJWKS(b)
	if err != nil {
		return nil, err
	}
	var kids []string
	for _, k := range set.Keys() {
		kids = append(kids, k.KID())
	}
	return kids, nil
}
