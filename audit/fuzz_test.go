package audit

import (
	"bytes"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// FuzzParseLine: any line parses or is refused, within MaxLine, without a panic.
func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"v":1,"w":"tts-0","seq":1,"prev":"","decision":"issued"}`))
	f.Add([]byte(`{"v":1,"w":"tts-0","checkpoint":"dialogtrust-audit/tts-0\n3\nAAAA\n\n— x AAAA\n","range":["AA=="]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseLine(b)
		if err == nil && l.rec && (l.seq == 0 || l.writer == "") {
			t.Fatalf("accepted %q as %+v", b, l)
		}
	})
}

// FuzzVerify: any input (bounded: the fuzzer's inputs stay small; lines over MaxLine
// are findings) gives a report or a read error, never a panic.
func FuzzVerify(f *testing.F) {
	k := testkit.NewKey(f, "ES256")
	f.Add(bytes.Join(lines(f, trail(f, f.TempDir(), k, 5)), []byte("\n")))
	vs := verifiersOf(f, k)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<20 {
			return
		}
		if _, err := Verify([]Input{{Name: "f", R: bytes.NewReader(b)}}, nil, vs); err != nil {
			t.Fatal(err)
		}
	})
}
