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
const (
	maxInFlight = 2
	maxBatch    = 128
)

// pendingClaim is one claim waiting for its pipeline. keys and args are the claim
// script's; res and err are set, then done closed, by the pipeline that ran it.
type pendingClaim struct {
	ctx  context.Context
	keys []string
	args []any
	res  []any
	err  error
	done chan struct{}
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
	running int
}

// do runs c in a pipeline and waits for it, or for c.ctx to end (then the claim may
// still be made, which only spends the value: the caller refuses).
func (b *batcher) do(c *pendingClaim) error {
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := b.running < maxInFlight
	if lead {
		b.running++
	}
	b.mu.Unlock()
	if lead {
		// The caller runs the first pipeline itself; what queued meanwhile goes on in a
		// goroutine, so that no caller waits for claims other than its own.
		if batch := b.take(); batch != nil {
			b.exec(batch)
			b.mu.Lock()
			more := len(b.queue) > 0
			if !more {
				b.running--
			}
			b.mu.Unlock()
			if more {
				go b.loop()
			}
		}
	}
	select {
	case <-c.done:
		return nil
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}

// loop runs pipelines until the queue is empty.
func (b *batcher) loop() {
	for {
		batch := b.take()
		if batch == nil {
			return
		}
		b.exec(batch)
	}
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
