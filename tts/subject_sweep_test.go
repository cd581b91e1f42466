package tts

import (
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// Expired subject tokens leave within maxAge even when the cache is far from full.
func TestSubjectCacheSweepsExpired(t *testing.T) {
	c := newSubjectCache(1000, time.Minute)
	now := testkit.Epoch
	for i := 0; i < 5; i++ {
		c.put(&cacheEntry{raw: string(rune('a' + i)), requester: "w"}, now)
	}
	if c.len() != 5 {
		t.Fatalf("cache holds %d", c.len())
	}
	now = now.Add(2 * time.Minute)
	c.put(&cacheEntry{raw: "z", requester: "w"}, now)
	if c.len() != 1 {
		t.Fatalf("stale entries kept: cache holds %d", c.len())
	}
}
