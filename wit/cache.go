package wit

import (
	"sync"
	"time"
)

// cache keeps validated WITs by the SHA-256 of the token. A receiver sees the same WIT
// on every request of a workload for the WIT's lifetime, and re-validating it costs a
// signature verification each time; the proof that accompanies it still costs one.
//
// What a hit skips: parsing, the trust lookup and the issuer signature. What it does not
// skip: the time checks, which run against the clock on every use. An entry lives at most
// maxAge (default one minute), so a key removed from trust configuration stops
// vouching for cached WITs within that time. Failures are never cached.
type cache struct {
	mu      sync.RWMutex
	entries map[[32]byte]cacheEntry
	max     int
	maxAge  time.Duration
	swept   time.Time // last sweep of expired entries
}

type cacheEntry struct {
	wit   WIT
	until time.Time
}

func newCache(max int, maxAge time.Duration) *cache {
	if maxAge <= 0 {
		maxAge = time.Minute
	}
	return &cache{entries: make(map[[32]byte]cacheEntry, max), max: max, maxAge: maxAge}
}

func (c *cache) getKey(k [32]byte, raw string, now time.Time) (WIT, bool) {
	c.mu.RLock()
	e, ok := c.entries[k]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) || e.wit.Raw != raw {
		return WIT{}, false
	}
	return e.wit, true
}

func (c *cache) put(k [32]byte, w *WIT, now time.Time) {
	until := now.Add(c.maxAge)
	if exp := w.Claims.Exp.Time(); exp.Before(until) {
		until = exp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		c.evict(now)
	} else if now.Sub(c.swept) >= c.maxAge {
		// Drop expired entries once per maxAge, so that memory follows the live
		// entries under churn instead of growing to the bound first.
		c.sweep(now)
	}
	c.entries[k] = cacheEntry{wit: *w, until: until}
}

// evict drops expired entries, then, if the cache is still full, arbitrary ones (map
// order is random) down to three quarters: the cache is bounded whatever the traffic.
func (c *cache) evict(now time.Time) {
	c.sweep(now)
	for k := range c.entries {
		if len(c.entries) < c.max*3/4 {
			break
		}
		delete(c.entries, k)
	}
}

// sweep drops expired entries; the caller holds the lock.
func (c *cache) sweep(now time.Time) {
	for k, e := range c.entries {
		if !now.Before(e.until) {
			delete(c.entries, k)
		}
	}
	c.swept = now
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
