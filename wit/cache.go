package wit

import (
	"sync"
	"time"
)

// cache keeps validated WITs by their exact text. A receiver sees the same WIT
// on every request of a workload for the WIT's lifetime, and re-validating it costs a
// signature verification each time; the proof that accompanies it still costs one.
//
// What a hit skips: parsing, the trust lookup and the issuer signature. What it does not
// skip: the time checks, which run against the clock on every use. An entry lives at most
// maxAge (default one minute), so a key removed from trust configuration stops
// vouching for cached WITs within that time. Failures are never cached.
//
// The map is keyed by the token's text itself, not by a digest of it: the lookup hashes
// the key with the map's own seeded hash and compares it octet for octet, so a hit needs
// no SHA-256 of the token, and the WIT's wth hash is computed once, when it is cached.
type cache struct {
	mu      sync.RWMutex
	entries map[string]cacheEntry
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
	return &cache{entries: make(map[string]cacheEntry, max), max: max, maxAge: maxAge}
}

func (c *cache) get(raw string, now time.Time) (WIT, bool) {
	c.mu.RLock()
	e, ok := c.entries[raw]
	c.mu.RUnlock()
	if !ok || !now.Before(e.until) {
		return WIT{}, false
	}
	return e.wit, true
}

// put caches w, whose hash must be set, under w.Raw.
func (c *cache) put(w *WIT, now time.Time) {
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
	c.entries[w.Raw] = cacheEntry{wit: *w, until: until}
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
