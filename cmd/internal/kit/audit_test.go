package kit

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
)

func TestAuditConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		c    AuditConfig
		want string
	}{
		{AuditConfig{Sink: "file", Path: "/var/log/a.log", RotateBytes: 1 << 20, CheckpointInterval: time.Minute}, ""},
		{AuditConfig{Sink: "stdout"}, ""},
		{AuditConfig{}, "audit.sink must be file, stdout or redis"},
		{AuditConfig{Sink: "redis", Stream: "s"}, ""},
		{AuditConfig{Sink: "file", Path: "x", Stream: "s"}, "stream is for sink redis"},
		{AuditConfig{Sink: "syslog"}, "audit.sink must be file, stdout or redis"},
		{AuditConfig{Sink: "file"}, "audit.path is required"},
		{AuditConfig{Sink: "stdout", Path: "x"}, "are for sink file"},
		{AuditConfig{Sink: "file", Path: "x", RotateBytes: 1000}, "rotate_bytes must be 0 or at least"},
		{AuditConfig{Sink: "file", Path: "x", CheckpointInterval: time.Millisecond}, "checkpoint_interval must be at least 1s"},
		{AuditConfig{Sink: "file", Path: "x", Writer: "a b"}, "writer must have no spaces"},
	} {
		err := tc.c.Check("audit")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}

// The stdout sink writes records and, when the server closes, a last checkpoint: what
// a collector keeps verifies.
func TestOpenAuditStdoutClosesWithCheckpoint(t *testing.T) {
	k, _ := keys.Generate(keys.ES256)
	out := &testkit.SyncBuffer{}
	s := &Server{}
	l, err := OpenAudit(context.Background(), s, &AuditConfig{Sink: AuditSinkStdout, Writer: "w1"}, nil, audit.FixedKey(k), out, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := l.Append(&audit.Entry{Decision: audit.Issued}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	vs, _ := audit.Verifiers([]*keys.PublicKey{k.Public()})
	rep, err := audit.Verify([]audit.Input{{Name: "stdout", R: strings.NewReader(out.String())}}, nil, vs)
	if err != nil || !rep.OK() || rep.Records != 3 || rep.CheckpointsVerified != 1 {
		t.Fatalf("%+v %v\n%s", rep, err, out.String())
	}
	if none, err := OpenAudit(context.Background(), s, nil, nil, audit.FixedKey(k), out, nil); none != nil || err != nil {
		t.Fatalf("no section: %v %v", none, err)
	}
}
