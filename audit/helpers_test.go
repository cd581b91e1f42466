package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"golang.org/x/mod/sumdb/note"
)

// clock advances a second at every call.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

func verifiersOf(t testing.TB, ks ...*keys.PrivateKey) note.Verifiers {
	t.Helper()
	var pub []*keys.PublicKey
	for _, k := range ks {
		pub = append(pub, k.Public())
	}
	vs, err := Verifiers(pub)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// trail writes n records to a file log under dir (checkpoint every 3 seconds of a
// clock that ticks a second per call), closes it, and returns the file's path.
func trail(t testing.TB, dir string, k *keys.PrivateKey, n int, opts ...Option) string {
	t.Helper()
	path := filepath.Join(dir, "audit.log")
	c := &clock{t: time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)}
	sink, err := OpenFile(path, 0, c.now)
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(sink, fixedKey{k}, append([]Option{WithClock(c.now), WithCheckpointInterval(3 * time.Second), WithWriter("tts-0")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		e := Entry{Decision: Issued, Txn: "txn-" + strings.Repeat("x", i%5), Dialog: "dlg-1", Scopes: []string{"read"}}
		if err := l.Append(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func lines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

func writeLines(t testing.TB, path string, ls [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, append(bytes.Join(ls, []byte("\n")), '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}

// recordIndexes are the indexes of record lines (not checkpoints).
func recordIndexes(ls [][]byte) []int {
	var out []int
	for i, l := range ls {
		if !bytes.Contains(l, []byte(`"checkpoint"`)) {
			out = append(out, i)
		}
	}
	return out
}

func verifyFiles(t testing.TB, vs note.Verifiers, checkpoints []string, paths ...string) *Report {
	t.Helper()
	open := func(ps []string) []Input {
		var in []Input
		for _, p := range ps {
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			in = append(in, Input{Name: filepath.Base(p), R: f})
		}
		return in
	}
	rep, err := Verify(open(paths), open(checkpoints), vs)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func codes(rep *Report) []errcode.Code {
	var out []errcode.Code
	for _, f := range rep.Findings {
		out = append(out, f.Code)
	}
	return out
}

func wantFinding(t *testing.T, rep *Report, code errcode.Code) {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Code == code {
			return
		}
	}
	t.Fatalf("findings %v, want %s", rep.Findings, code)
}
