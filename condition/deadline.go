package condition

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The evaluation deadline of a request is a context that CEL watches inside loops
// (ExecutionFrame.SetContext). A timer of its own per request (context.WithDeadline)
// cost about as much as the evaluation of a small policy: the deadlines are rounded up
// to the next tick instead, and every request whose deadline falls in one tick shares
// one context, cancelled by one timer. A deadline is so kept late by less than a tick.
const deadlineTick = time.Millisecond

// deadlineSlot is the context of the deadlines of one tick.
type deadlineSlot struct {
	tick int64 // the end of the tick, in ticks since the Unix epoch
	ctx  context.Context
}

var deadlines struct {
	mu    sync.Mutex
	slots map[int64]*deadlineSlot
	// last is the slot handed out last: the requests of one tick ask for it, without
	// the lock.
	last atomic.Pointer[deadlineSlot]
}

// deadlineAt is a context cancelled (cause context.DeadlineExceeded) at the end of the
// tick in which at falls. It carries nothing else: no values, no cancellation of the
// caller's.
func deadlineAt(at time.Time) context.Context {
	tick := (at.UnixNano() + int64(deadlineTick) - 1) / int64(deadlineTick)
	if s := deadlines.last.Load(); s != nil && s.tick == tick {
		return s.ctx
	}
	deadlines.mu.Lock()
	defer deadlines.mu.Unlock()
	s, ok := deadlines.slots[tick]
	if !ok {
		if deadlines.slots == nil {
			deadlines.slots = map[int64]*deadlineSlot{}
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		s = &deadlineSlot{tick: tick, ctx: ctx}
		deadlines.slots[tick] = s
		time.AfterFunc(time.Until(time.Unix(0, tick*int64(deadlineTick))), func() {
			cancel(context.DeadlineExceeded)
			deadlines.mu.Lock()
			delete(deadlines.slots, tick)
			deadlines.mu.Unlock()
		})
	}
	deadlines.last.Store(s)
	return s.ctx
}
