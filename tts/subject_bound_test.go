package tts

import (
	"strconv"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
)

// The subject-token cache is bounded whatever the number of distinct subject tokens,
// and when it is full the expired entries go first (issue 7, item 5).
func TestSubjectCacheBound(t *testing.T) {
	const max = 100
	now := testkit.Epoch
	c := newSubjectCache(max, time.Minute)
	exp := jose.NumericDate(now.Add(time.Hour).Unix())
	for i := range 10 * max {
		c.put(&cacheEntry{raw: "token-" + strconv.Itoa(i), requester: "wimse://a.example/w", exp: &exp}, now)
		if n := c.len(); n > max {
			t.Fatalf("cache holds %d, bound %d", n, max)
		}
	}
	// The entries live at most maxAge: past it, the insertion that finds the cache
	// full drops every one of them.
	now = now.Add(time.Minute)
	k := max - c.len() + 1
	for i := range k {
		c.put(&cacheEntry{raw: "later-" + strconv.Itoa(i), exp: &exp}, now)
	}
	if n := c.len(); n != k {
		t.Fatalf("after expiry the cache holds %d, want the %d new entries", n, k)
	}
	if _, ok := c.get("later-0", "", now); !ok {
		t.Fatal("a live entry is missing")
	}
	// The handlers' default bound.
	if h := NewSelfSignedHandler([]string{"https://tts.example"}, SelfSignedOptions{}); h.cache.max != DefaultCacheSize {
		t.Fatalf("default bound %d, want %d", h.cache.max, DefaultCacheSize)
	}
}
