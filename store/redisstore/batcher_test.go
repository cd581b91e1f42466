package redisstore

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Every pipeline slot comes back: whether a claim's caller leads, is promoted to lead
// the next pipeline, gives up while queued, or gives up just as it is promoted, the
// batcher ends with no pipeline counted as running, and a later claim runs at once.
// A slot lost on the way would leave claims queued with no one to run them.
func TestBatcherHandsOnEverySlot(t *testing.T) {
	b := &batcher{}
	var ran sync.Map
	b.exec = func(batch []*pendingClaim) {
		for range len(batch) % 5 {
			runtime.Gosched() // let claims queue behind this pipeline
		}
		for _, c := range batch {
			ran.Store(c, true)
			c.finish([]any{int64(1), "e"}, nil)
		}
	}
	for round := range 300 {
		var wg sync.WaitGroup
		for i := range 64 {
			ctx, cancel := context.WithCancel(context.Background())
			c := &pendingClaim{ctx: ctx, done: make(chan struct{})}
			wg.Go(func() {
				defer cancel()
				if i%2 == 0 {
					go func() { // gives up at some point of its wait
						for range i % 7 {
							runtime.Gosched()
						}
						cancel()
					}()
				}
				if err := b.do(c); err == nil {
					if _, ok := ran.Load(c); !ok {
						t.Errorf("round %d: claim %d returned without error but was not run", round, i)
					}
				}
			})
		}
		wg.Wait()
		// A caller that gave up as it was promoted passes its slot on in a goroutine;
		// wait for those (for goroutines, not for time).
		deadline := time.Now().Add(10 * time.Second)
		for {
			b.mu.Lock()
			running := b.running
			b.mu.Unlock()
			if running == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d pipeline slots never came back", round, running)
			}
			runtime.Gosched()
		}
	}
	c := &pendingClaim{ctx: context.Background(), done: make(chan struct{})}
	if err := b.do(c); err != nil || c.res == nil {
		t.Fatalf("a claim after the rounds: %v, %v", err, c.res)
	}
}
