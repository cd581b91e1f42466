package testkit

import (
	"bufio"
	"strings"
	"testing"
)

// ReadEvent reads one block of an LF event stream (WHATWG HTML 9.2.6), its blank line
// included; a stream that ends first fails the test. The dialog receiver's and the
// proxies' streaming tests read events one at a time with it, to prove an event left
// before the next was written.
func ReadEvent(t testing.TB, br *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if err != nil {
			t.Fatalf("the stream ended after %q: %v", b.String(), err)
		}
		if line == "\n" {
			return b.String()
		}
	}
}
