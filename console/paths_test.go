package console

import (
	"net/url"
	"strings"
	"testing"
)

// isDotSegment is the WHATWG URL standard's single- and double-dot path segment: "."
// and "..", with any dot written %2e in either case. Browsers remove them.
func isDotSegment(seg string) bool {
	s := strings.ReplaceAll(strings.ToLower(seg), "%2e", ".")
	return s == "." || s == ".."
}

// Every dialog id has one path segment a browser keeps, and it decodes back to that id
// and no other (attack suite: dialog ids "." and ".." unreachable from the page).
func TestDialogSegment_NoDotSegmentAndOneToOne(t *testing.T) {
	ids := []string{".", "..", "...", ".~", "!", "!.", "!..", "!!..", "%2e", "%2E%2e", "a/..", "a b", "D1", ":", "-"}
	seen := map[string]string{}
	for _, id := range ids {
		seg := dialogSegment(id)
		if isDotSegment(seg) || strings.Contains(seg, "/") {
			t.Errorf("%q: segment %q is resolved away by a browser", id, seg)
		}
		dec, err := url.PathUnescape(seg)
		if err != nil || dialogFromSegment(dec) != id {
			t.Errorf("%q: segment %q decodes to %q (%v)", id, seg, dialogFromSegment(dec), err)
		}
		if other, ok := seen[seg]; ok {
			t.Errorf("%q and %q share segment %q", id, other, seg)
		}
		seen[seg] = id
	}
}
