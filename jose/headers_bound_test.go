package jose

import (
	"encoding/base64"
	"fmt"
	"testing"
)

// jose's header cache is bounded whatever the number of distinct headers it sees: a
// sender choosing a new kid (or any member) per token cannot grow it (issue 7, item 5).
func TestHeaderCacheBound(t *testing.T) {
	c := &headerCache{m: make(map[string]*parsedHeader)}
	for i := range 3 * headerCacheSize {
		h := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"typ":"wpt+jwt","alg":"EdDSA","kid":"k%d"}`, i))
		if _, err := c.parse(h); err != nil {
			t.Fatal(err)
		}
		c.mu.RLock()
		n := len(c.m)
		c.mu.RUnlock()
		if n > headerCacheSize {
			t.Fatalf("header cache holds %d, bound %d", n, headerCacheSize)
		}
	}
	// Long headers are decoded but never kept.
	long := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"typ":"wpt+jwt","alg":"EdDSA","kid":"%0600d"}`, 1))
	before := len(c.m)
	if _, err := c.parse(long); err != nil {
		t.Fatal(err)
	}
	if len(c.m) != before {
		t.Fatal("a header over maxCachedHeader was cached")
	}
}
