package redisstore

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/store/storetest"
)

// batchProbe holds every pipeline of r until release is called, and records the claims
// per batch, so that a test can queue claims behind the first pipelines and know that
// they went out together. The claims' timeout must outlast the hold.
type batchProbe struct {
	r        *Replay
	released chan struct{}
	held     atomic.Int64 // claims in batches the hook holds
	mu       sync.Mutex
	sizes    []int
}

func probeBatches(r *Replay) *batchProbe {
	p := &batchProbe{r: r, released: make(chan struct{})}
	r.batchHook = func(n int) {
		p.mu.Lock()
		p.sizes = append(p.sizes, n)
		p.mu.Unlock()
		p.held.Add(int64(n))
		<-p.released
	}
	return p
}

// waitQueued returns once all n claims of a wave are either queued in r's lanes or in
// a batch the hook holds. It waits for goroutines of the test, not for time.
func (p *batchProbe) waitQueued(n int) {
	for {
		queued := 0
		p.r.lanesMu.Lock()
		for _, b := range p.r.lanes {
			b.mu.Lock()
			queued += len(b.queue)
			b.mu.Unlock()
		}
		p.r.lanesMu.Unlock()
		if queued+int(p.held.Load()) >= n {
			return
		}
		runtime.Gosched()
	}
}

func (p *batchProbe) release() { close(p.released) }

// largest is the largest batch sent so far.
func (p *batchProbe) largest() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := 0
	for _, n := range p.sizes {
		m = max(m, n)
	}
	return m
}

// claimAllQueued runs claimAll with the pipelines held until every claim is queued, so
// that the queue leaves in batches as large as it allows; it returns their errors in
// order and the probe that saw the batches.
func claimAllQueued(r *Replay, keys []string) ([]error, *batchProbe) {
	p := probeBatches(r)
	var errs []error
	done := make(chan struct{})
	go func() { errs = claimAll(r, keys); close(done) }()
	p.waitQueued(len(keys))
	p.release()
	<-done
	return errs, p
}

// claimAll runs one Claim per key concurrently and returns their errors in order.
func claimAll(r *Replay, keys []string) []error {
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { errs[i] = r.Claim(context.Background(), k, time.Minute) })
	}
	wg.Wait()
	return errs
}

// Concurrent claims share pipelines and each gets its own answer: of N distinct values
// every one is claimed once; a value claimed twice in the same wave (the same batch or
// the next) is claimed by one claim and replayed for the other; a wave of values claimed
// before (earlier batches) is replayed in full.
func TestRedisBatchedClaims(t *testing.T) {
	client, prefix := newTestRedis(t, testRedisAddr(t))
	r := NewReplay(client, WithPrefix(prefix), WithTimeout(time.Minute)) // outlasts the hold
	storetest.MustClaim(t, r, "warm", time.Minute)                       // learn the epochs outside the waves
	testBatchedClaims(t, r)
}

// The same against a Cluster: a pipeline's claims go to several masters.
func TestRedisClusterBatchedClaims(t *testing.T) {
	client, prefix := newTestRedisCluster(t, testRedisClusterAddrs(t))
	r := NewReplay(client, WithPrefix(prefix), WithTimeout(time.Minute))
	storetest.MustClaim(t, r, "warm", time.Minute)
	testBatchedClaims(t, r)
}

func testBatchedClaims(t *testing.T, r *Replay) {
	const n = 300 // more than maxBatch: the queue leaves in several pipelines
	keys := make([]string, 0, 2*n)
	for i := range n {
		keys = append(keys, fmt.Sprintf("distinct-%d", i))
	}
	// Wave 1: distinct values, queued behind held pipelines.
	errs, p := claimAllQueued(r, keys)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claim of distinct value %s: %v", keys[i], err)
		}
	}
	if p.largest() < 2 {
		t.Fatalf("no batch carried more than one claim (sizes %v): the test did not batch", p.sizes)
	}

	// Wave 2: each new value twice, and every value of wave 1 again.
	r.batchHook = nil
	var wave []string
	for i := range n {
		k := fmt.Sprintf("twice-%d", i)
		wave = append(wave, k, k)
	}
	wave = append(wave, keys...)
	errs, p = claimAllQueued(r, wave)
	for i := 0; i < 2*n; i += 2 {
		a, b := errs[i], errs[i+1]
		switch {
		case a == nil && b == nil:
			t.Fatalf("%s claimed twice", wave[i])
		case a != nil && b != nil:
			t.Fatalf("%s: neither claim succeeded: %v; %v", wave[i], a, b)
		}
		if a != nil {
			storetest.WantReplayed(t, a, wave[i]+" second claim")
		} else {
			storetest.WantReplayed(t, b, wave[i]+" second claim")
		}
	}
	for i := 2 * n; i < len(wave); i++ {
		storetest.WantReplayed(t, errs[i], wave[i]+" claimed in an earlier batch")
	}
	if p.largest() < 2 {
		t.Fatalf("no batch carried more than one claim (sizes %v)", p.sizes)
	}
}

// A Redis that is gone refuses every claim of a batch: could not be completed, never
// claimed and never replayed.
func TestRedisDeadServerRefusesWholeBatch(t *testing.T) {
	client := closedPortClient(t)
	r := NewReplay(client, WithTimeout(time.Minute))
	testBatchRefused(t, r, "claim against a closed port")
}

// A Redis that accepts and never answers: the batch's deadline refuses every claim of
// it, within the store's timeout.
func TestRedisSilentServerRefusesWholeBatch(t *testing.T) {
	client := NewClient([]string{silentServer(t)}, false)
	defer client.Close()
	// One batch of claims, run as a pipeline would run it: its deadline must end it
	// and leave every claim of it with an error (which Claim turns into
	// store_unavailable). Through Claim, the claims queued behind a hung pipeline
	// would end by their own deadlines first, which is refused as well but is not
	// what this test is about.
	r := NewReplay(client, WithTimeout(300*time.Millisecond))
	batch := make([]*pendingClaim, 20)
	for i := range batch {
		batch[i] = &pendingClaim{ctx: context.Background(), keys: []string{r.epochKey(i), r.key(fmt.Sprint(i))}, done: make(chan struct{}),
			args: []any{"", "v", int64(60000), "e", time.Now().UnixMilli(), int64(360000)}}
	}
	start := time.Now()
	r.runBatch(batch)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the batch took %v with a 300ms timeout", d)
	}
	for i, c := range batch {
		select {
		case <-c.done:
		default:
			t.Fatalf("claim %d of the batch was not finished", i)
		}
		if c.err == nil {
			t.Fatalf("claim %d of the batch has no error (reply %v) against a silent server", i, c.res)
		}
		storetest.WantUnavailable(t, unavailable(c.err), fmt.Sprintf("claim %d", i))
	}
}

func testBatchRefused(t *testing.T, r *Replay, what string) {
	// The epochs are not read first (that read would fail the same way, but it holds
	// up one claim for the timeout, while the others wait behind the held pipelines).
	r.learned.Store(true)
	const n = 50
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("refused-%d", i)
	}
	errs, p := claimAllQueued(r, keys)
	for i, err := range errs {
		storetest.WantUnavailable(t, err, fmt.Sprintf("%s %d", what, i))
		if errcode.KindOf(err) != errcode.Incomplete {
			t.Fatalf("%s: kind %v", what, errcode.KindOf(err))
		}
	}
	if p.largest() < 2 {
		t.Fatalf("no batch carried more than one claim (sizes %v)", p.sizes)
	}
}
