package redisstore

import (
	"context"
	"sync"
)

// Batching. Each claim is one round trip to Redis, and a round trip costs the broker
// far more CPU (a write and a read system call, the client's bookkeeping, a wake-up)
// than the script costs Redis. Claims from concurrent requests therefore share round
// trips: a claim that finds fewer than maxInFlight pipelines under way to its node
// starts one at once (no added wait when the store is idle); a claim that finds them
// all busy queues, and the next pipeline to start carries every claim that queued
// while the previous ones were in flight, up to maxBatch. The wait is thus bounded by
// the round trips already under way, never by a timer.
//
// Who runs the next pipeline: the caller of a claim that queued. A pipeline that ends
// with claims queued hands its slot to the oldest of them, whose caller (woken from
// its wait) runs the next pipeline, which carries its own claim. Every caller thus
// runs at most the pipeline of its own claim, and no goroutine is started per
// pipeline: a new goroutine's small stack would grow through go-redis's deep calls
// and be copied on every pipeline (6 to 14 % of BenchmarkRedisClaimPaced's CPU, at
// the TTS's load); the callers' stacks have grown once.
const (
	maxInFlight = 2
	maxBatch    = 128
)

// pendingClaim is one claim waiting for its pipeline. keys and args are the claim
// script's; res and err are set, then done closed, by the pipeline that ran it. lead
// is closed when the claim's caller is to run the next pipeline (promoted, under the
// batcher's mu).
type pendingClaim struct {
	ctx      context.Context
	keys     []string
	args     []any
	res      []any
	err      error
	done     chan struct{}
	lead     chan struct{}
	promoted bool
}

// finish records the outcome and wakes the claim's caller.
func (c *pendingClaim) finish(res []any, err error) {
	c.res, c.err = res, err
	close(c.done)
}

// batcher queues the claims for one node (a single Redis, or one master of a
// Cluster) and runs them in pipelines with exec, at most maxInFlight at a time. exec
// must finish every claim it is given.
type batcher struct {
	exec func([]*pendingClaim)

	mu      sync.Mutex
	queue   []*pendingClaim
	running int // pipelines under way or handed to a promoted claim's caller
}

// do runs c in a pipeline and waits for it, or for c.ctx to end (then the claim may
// still be made, which only spends the value: the caller refuses).
func (b *batcher) do(c *pendingClaim) error {
	c.lead = make(chan struct{})
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := b.running < maxInFlight
	if lead {
		b.running++
	}
	b.mu.Unlock()
	if lead {
		b.runNext()
	}
	for {
		select {
		case <-c.lead:
			c.lead = nil // led; a claim is promoted at most once
			b.runNext()
			continue
		case <-c.done:
		case <-c.ctx.Done():
		}
		b.mu.Lock()
		owed := c.promoted && c.lead != nil // promoted, and not led
		c.promoted = true                   // never now: its caller stops waiting
		b.mu.Unlock()
		if owed {
			// The slot was handed to this caller as its claim finished or its caller
			// gave up: pass it on, without making this caller wait for it.
			go b.runNext()
		}
		select {
		case <-c.done:
			return nil
		default:
			return c.ctx.Err()
		}
	}
}

// runNext runs the next pipeline in the slot its caller holds, then hands the slot
// to the oldest queued claim not yet promoted whose caller still waits, or gives it
// up when there is none.
func (b *batcher) runNext() {
	if batch := b.take(); batch != nil {
		b.exec(batch)
	} else {
		return // take gave up the slot
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.queue {
		if !c.promoted && c.ctx.Err() == nil {
			c.promoted = true
			close(c.lead)
			return
		}
	}
	b.running--
}

// take removes up to maxBatch claims from the queue, skipping those whose callers
// have given up. It returns nil, and gives up its pipeline slot, when none is left.
func (b *batcher) take() []*pendingClaim {
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch []*pendingClaim
	for len(b.queue) > 0 && len(batch) < maxBatch {
		c := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		if c.ctx.Err() != nil {
			continue // its caller has returned unavailable already
		}
		batch = append(batch, c)
	}
	if len(b.queue) == 0 {
		b.queue = nil // do not keep a grown array alive
	}
	if len(batch) == 0 {
		b.running--
		return nil
	}
	return batch
}
