package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// auditTrail writes a trail of n records under dir and the JWKS of its key.
func auditTrail(t *testing.T, dir string, n int) (path, jwks string) {
	t.Helper()
	k, _ := keys.Generate(keys.ES256)
	path = filepath.Join(dir, "tts.log")
	sink, err := audit.OpenFile(path, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	l, err := audit.New(sink, audit.FixedKey(k), audit.WithWriter("tts-0"), audit.WithCheckpointInterval(2*time.Second),
		audit.WithClock(func() time.Time { now = now.Add(time.Second); return now }))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := l.Append(&audit.Entry{Decision: audit.Issued, Txn: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	set, _ := keys.NewStaticSet(k.Public())
	b, _ := set.MarshalJSON()
	jwks = filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(jwks, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, jwks
}

// Issue 26: `dialogtrust audit verify` exits 0 on an intact trail, 1 with the finding's
// code on a tampered one, 2 when a file or the JWKS cannot be read.
func TestIssue26AuditVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	path, jwks := auditTrail(t, dir, 8)
	exec := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"audit", "verify"}, args...), nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, errs := exec("--key", jwks, "--checkpoint", path+audit.CheckpointSuffix, path); code != 0 || !strings.HasPrefix(out, "ok: 8 records of 1 writers") || !strings.Contains(out, "signatures checked") {
		t.Fatalf("intact: %d %q %q", code, out, errs)
	}
	if code, out, _ := exec(path); code != 0 || !strings.Contains(out, "signatures NOT checked") {
		t.Fatalf("without --key: %d %q", code, out)
	}
	// One record removed.
	b, _ := os.ReadFile(path)
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var kept []string
	removed := false
	for _, l := range ls {
		if !removed && strings.Contains(l, `"seq":3,`) {
			removed = true
			continue
		}
		kept = append(kept, l)
	}
	cut := filepath.Join(dir, "cut.log")
	_ = os.WriteFile(cut, []byte(strings.Join(kept, "\n")+"\n"), 0o600)
	code, out, _ := exec("--key", jwks, cut)
	if code != 1 || !strings.Contains(out, "cut.log:") || !strings.Contains(out, string(errcode.AuditRecordRemoved)) {
		t.Fatalf("removed: %d %q", code, out)
	}
	code, out, _ = exec("--json", "--key", jwks, cut)
	var rep audit.Report
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.OK() || rep.Findings[0].Code != errcode.AuditRecordRemoved {
		t.Fatalf("--json: %d %q", code, out)
	}
	// Bad input.
	if code, _, errs := exec(filepath.Join(dir, "absent.log")); code != 2 || !strings.Contains(errs, "usage error") {
		t.Fatalf("absent file: %d %q", code, errs)
	}
	if code, _, errs := exec("--key", path, path); code != 2 || !strings.Contains(errs, "--key") {
		t.Fatalf("bad JWKS: %d %q", code, errs)
	}
	if code, _, _ := exec(); code != 2 {
		t.Fatalf("no file: %d", code)
	}
}
