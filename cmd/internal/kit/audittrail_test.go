package kit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Issue 26, the operator's page: the trail as AuditTrail reads it back from each sink
// the TTS writes: the latest records of the file or of the Redis stream, oldest first,
// at most the number asked for; standard output and no section have none, and say so.
func TestIssue26AuditTrailReadBack(t *testing.T) {
	k, _ := keys.Generate(keys.ES256)
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	check := func(name string, c *AuditConfig, st *Store) {
		t.Helper()
		s := &Server{}
		l, err := OpenAudit(context.Background(), s, c, st, audit.FixedKey(k), io.Discard, logger)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 7 {
			if err := l.Append(&audit.Entry{Decision: audit.Issued, Dialog: fmt.Sprintf("D%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		tr, note, err := AuditTrail(c, st)
		if err != nil || tr == nil || note != "" {
			t.Fatalf("%s: %v %q", name, err, note)
		}
		lines, err := tr.Recent(context.Background(), 3)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ln := range lines {
			if e, err := audit.ParseRecord(ln); err == nil {
				got = append(got, e.Dialog)
			}
		}
		if fmt.Sprint(got) != "[D4 D5 D6]" {
			t.Errorf("%s: the latest 3 records: %v (%d lines)", name, got, len(lines))
		}
		s.Close()
	}
	check("file", &AuditConfig{Sink: AuditSinkFile, Path: filepath.Join(t.TempDir(), "audit.log")}, nil)
	for _, c := range []*AuditConfig{nil, {Sink: AuditSinkStdout}} {
		if tr, note, err := AuditTrail(c, nil); tr != nil || note == "" || err != nil {
			t.Errorf("%+v: %v %q %v", c, tr, note, err)
		}
	}
	if os.Getenv("DIALOGTRUST_TEST_REDIS") == "" && os.Getenv("CI") != "true" {
		t.Log("the Redis stream is not checked: DIALOGTRUST_TEST_REDIS is not set")
		return
	}
	addr := testkit.RedisAddr(t)
	prefix := fmt.Sprintf("audit-trail-test-%d:", time.Now().UnixNano())
	st, err := OpenStore(StoreConfig{Type: "redis", Redis: RedisConfig{Addrs: []string{addr}, Prefix: prefix}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	defer st.client.Del(context.Background(), prefix+"audit")
	check("redis", &AuditConfig{Sink: AuditSinkRedis}, st)
	// A group commit's entry holds several lines: each is a line of the trail, and the
	// count asked for is of lines, not of entries.
	sink, err := newRedisStreamSink(st, prefix+"audit")
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.WriteBatch([][]byte{[]byte("g1\n"), []byte("g2\n"), []byte("g3\n")}); err != nil {
		t.Fatal(err)
	}
	tr, _, _ := AuditTrail(&AuditConfig{Sink: AuditSinkRedis}, st)
	lines, err := tr.Recent(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%q", lines); !strings.HasPrefix(got, `["{`) || !strings.HasSuffix(got, `" "g1" "g2" "g3"]`) {
		t.Errorf("the latest 4 lines of a stream whose last entry holds three: %s", got)
	}
}
