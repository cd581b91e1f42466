package authzen

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// cacheKey is the SHA-256 of the evaluation endpoint and the request body sent to it:
// every input that decides (subject, action, resource, context, each member and its
// value) is in the body, which encoding/json writes deterministically (map members
// sorted), so two requests share an entry only when the PDP would be asked the same.
type cacheKey [sha256.Size]byte

func keyOf(endpoint string, body []byte) cacheKey {
	h := sha256.New()
	h.Write([]byte(endpoint))
	h.Write([]byte{0})
	h.Write(body)
	var k cacheKey
	h.Sum(k[:0])
	return k
}

type cacheEntry struct {
	key     cacheKey
	allow   bool
	reason  string
	expires time.Time
}

// cache is a size-bounded LRU of decisions, each kept for a TTL from the moment the
// PDP answered. Errors are never cached: a PDP that did not answer is asked again.
type cache struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	ll    *list.List // front: most recently used
	items map[cacheKey]*list.Element
}

func newCache(max int, ttl time.Duration) *cache {
	if max <= 0 || ttl <= 0 {
		return nil
	}
	return &cache{max: max, ttl: ttl, ll: list.New(), items: make(map[cacheKey]*list.Element, min(max, 1024))}
}

// get returns the decision for k if one is cached and has not expired at now.
func (c *cache) get(k cacheKey, now time.Time) (cacheEntry, bool) {
	if c == nil {
		return cacheEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return cacheEntry{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		c.ll.Remove(el)
		delete(c.items, k)
		return cacheEntry{}, false
	}
	c.ll.MoveToFront(el)
	return *e, true
}

// put stores a decision made at now, evicting the least recently used entry when full.
func (c *cache) put(k cacheKey, allow bool, reason string, now time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		e := el.Value.(*cacheEntry)
		e.allow, e.reason, e.expires = allow, reason, now.Add(c.ttl)
		c.ll.MoveToFront(el)
		return
	}
	for c.ll.Len() >= c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.items, old.Value.(*cacheEntry).key)
	}
	c.items[k] = c.ll.PushFront(&cacheEntry{key: k, allow: allow, reason: reason, expires: now.Add(c.ttl)})
}

func (c *cache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
