package redisstore

import (
	"sync"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/revoke/revoketest"
)

type revClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *revClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *revClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestRedisRevocationsContract(t *testing.T) {
	addr := testRedisAddr(t)
	revoketest.RunStore(t, func(t *testing.T) revoketest.Env {
		client, prefix := newTestRedis(t, addr)
		c := &revClock{t: time.Now()}
		return revoketest.Env{Store: NewRevocations(client, WithPrefix(prefix), WithClock(c.Now), WithTimeout(contractTimeout)), Now: c.Now, Advance: c.Advance}
	})
}
