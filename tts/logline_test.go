package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/service"
)

// The line written for each token issued carries every field with this request's
// values, also when the subject token's hash comes from the subject cache.
func TestIssuedLogLine(t *testing.T) {
	t.Run("slog", func(t *testing.T) { testIssuedLogLine(t, false) })
	t.Run("services' logger", func(t *testing.T) { testIssuedLogLine(t, true) })
}

// testIssuedLogLine: with services, through the services' logger, which takes the
// line built in one buffer.
func testIssuedLogLine(t *testing.T, services bool) {
	e := newEnv(t, func(e *env, c *Config) {
		if services {
			c.Logger = slog.New(service.NewJSONHandler(e.logs, slog.LevelInfo))
		}
	})
	if (e.srv.lines != nil) != services {
		t.Fatalf("line writer %T", e.srv.lines)
	}
	a1, a2 := e.workload("/agent/a1"), e.workload("/agent/a2")
	at := e.accessToken("alice", "trip.read", 0)
	type sent struct {
		w       string
		subject string
		typ     string
		resp    *TokenResponse
		claims  *Claims
		dlg     string
	}
	var all []sent
	for _, c := range []struct {
		w        string
		subject  string
		typ, dlg string
	}{
		{"/agent/a1", at, TokenTypeAccessToken, "D1"},
		{"/agent/a1", at, TokenTypeAccessToken, "D2"}, // cached subject, cached logger
		{"/agent/a2", at, TokenTypeAccessToken, ""},   // another requester
		{"/agent/a2", e.selfSigned(a2, "bob", "trip.read"), TokenTypeSelfSigned, "D3"},
	} {
		w := a1
		if c.w == "/agent/a2" {
			w = a2
		}
		resp, claims := e.mustRequest(w, Request{Audience: tdA, Scope: "trip.read", SubjectToken: c.subject, SubjectTokenType: c.typ, Dialog: c.dlg})
		all = append(all, sent{c.w, c.subject, c.typ, resp, claims, c.dlg})
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		if m["msg"] == "txn token issued" {
			lines = append(lines, m)
		}
	}
	if len(lines) != len(all) {
		t.Fatalf("%d issued lines for %d tokens", len(lines), len(all))
	}
	for i, s := range all {
		m := lines[i]
		want := map[string]any{
			"level": "INFO", "dlg": s.dlg, "grant": "token_exchange", "subject_token_type": s.typ,
			"subject_token_sha256": Hash(s.subject), "method": MethodWPT, "requester": "wimse://a.example" + s.w,
			"aud": tdA, "txn": s.claims.Txn, "txn_token_sha256": Hash(s.resp.AccessToken), "kid": e.ttsKey.KID(),
			"exp": float64(*s.claims.Exp), "call_chain": float64(1),
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, m[k], v)
			}
		}
		for _, k := range []string{"time", "request_id", "remote"} {
			if v, _ := m[k].(string); v == "" {
				t.Errorf("line %d: no %s", i, k)
			}
		}
		if len(m) != len(want)+4 { // + time, msg, request_id, remote
			t.Errorf("line %d has %d fields: %v", i, len(m), m)
		}
	}
}

// IssuedLogLevel moves the line: at debug, under a logger at info, no line is written
// for a token issued, while refusals are still logged.
func TestIssuedLogLevel(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.IssuedLogLevel = slog.LevelDebug })
	w := e.workload("/agent/a1")
	e.mustRequest(w, Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken})
	if _, err := e.request(w, Request{Audience: "unknown.example", Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken}); err == nil {
		t.Fatal("a request for an unknown audience was answered")
	}
	logs := e.logs.String()
	if strings.Contains(logs, "txn token issued") {
		t.Errorf("issued line at debug under an info logger:\n%s", logs)
	}
	if !strings.Contains(logs, "txn token refused") {
		t.Errorf("no line for the refusal:\n%s", logs)
	}
}

// fixedTime hands records to h with the time at.
type fixedTime struct {
	slog.Handler
	at time.Time
}

func (f fixedTime) Handle(ctx context.Context, r slog.Record) error {
	r.Time = f.at
	return f.Handler.Handle(ctx, r)
}

// slogIssuedLine is the issued line as slog.JSONHandler writes it at time at.
func slogIssuedLine(l issuedLine, at time.Time, level slog.Level) string {
	var buf bytes.Buffer
	l.log(context.Background(), slog.New(fixedTime{slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), at}), level)
	return buf.String()
}

// The issued line built in one buffer is, octet for octet, the line slog writes for
// the same values; a value slog would escape, or a year slog would complain about,
// leaves the line to slog.
func TestIssuedLineMatchesSlog(t *testing.T) {
	plain := issuedLine{
		requestID: "ABCDEFGHIJKLMNOPQRSTUVWXYZ", dlg: "7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", grant: "token_exchange",
		subjectTokenType: TokenTypeSelfSigned, subjectSHA256: Hash("s"), method: MethodWPT, requester: "wimse://a.example/agent/a1",
		aud: tdA, txn: "b1d4", txnTokenSHA256: Hash("t"), kid: "k-1", exp: 1796140800, callChain: 3, remote: "[::1]:50123",
	}
	times := []time.Time{
		time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.UTC), time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 1, 18, 0, 0, 5000, time.FixedZone("x", 5400)), time.Now(), time.Unix(0, 0).UTC(),
	}
	levels := []slog.Level{slog.LevelInfo, slog.LevelDebug, slog.LevelWarn + 1, slog.LevelError}
	check := func(name string, l issuedLine, at time.Time, level slog.Level, wantFast bool) {
		t.Helper()
		got, ok := l.appendJSON([]byte("kept"), at, level)
		if ok != wantFast {
			t.Errorf("%s: built in the buffer: %v, want %v", name, ok, wantFast)
			return
		}
		if want := slogIssuedLine(l, at, level); ok && string(got) != "kept"+want {
			t.Errorf("%s:\n got %s\nwant %s", name, got[4:], want)
		}
	}
	for _, at := range times {
		for _, level := range levels {
			check("plain", plain, at, level, true)
		}
	}
	empty := issuedLine{}
	check("empty values", empty, times[0], slog.LevelInfo, true)
	check("HTML-sensitive and URI octets", issuedLine{dlg: "<a&b>", remote: "x?y=1#z/~!$%'()*+,;=@[]{}|^`"}, times[0], slog.LevelInfo, true)
	check("year 10000", plain, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, false)
	// Each string member in turn with each octet slog does not copy as it is.
	for i := range len(stringMembers(&plain)) {
		for _, v := range []string{`a"b`, `a\b`, "a\nb", "a\x00", "a\x7f", "caf\u00e9", "\xff", "a\u2028"} {
			l := plain
			*stringMembers(&l)[i] = v
			check(fmt.Sprintf("member %d = %q", i, v), l, times[0], slog.LevelInfo, false)
		}
	}
	// A line left to slog is still written, and is slog's.
	var buf bytes.Buffer
	h := service.NewJSONHandler(&buf, slog.LevelInfo)
	l := plain
	l.dlg = "caf\u00e9"
	l.write(context.Background(), slog.New(h), h, slog.LevelInfo)
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m["dlg"] != "caf\u00e9" || m["msg"] != issuedMessage {
		t.Fatalf("line left to slog: %s (%v)", buf.Bytes(), err)
	}
}

// stringMembers are l's string members, in the line's order.
func stringMembers(l *issuedLine) []*string {
	return []*string{&l.requestID, &l.dlg, &l.grant, &l.subjectTokenType, &l.subjectSHA256, &l.method,
		&l.requester, &l.aud, &l.txn, &l.txnTokenSHA256, &l.kid, &l.remote}
}

// FuzzIssuedLine: whatever the values, a line built in the buffer is slog's line.
func FuzzIssuedLine(f *testing.F) {
	f.Add("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "7f3c9a2e", "wimse://a.example/agent/a1", "127.0.0.1:1", int64(1796140800), 1, int64(123456789))
	f.Add("", "", "", "", int64(-1), 0, int64(0))
	f.Add("a\"b", "<&>", "\u2028", "\x7f", int64(1<<62), -5, int64(999))
	f.Fuzz(func(t *testing.T, requestID, dlg, requester, remote string, exp int64, chain int, nanos int64) {
		l := issuedLine{requestID: requestID, dlg: dlg, grant: "token_exchange", subjectTokenType: TokenTypeAccessToken,
			requester: requester, aud: tdA, exp: exp, callChain: chain, remote: remote}
		at := time.Unix(1796140800, nanos%1e9).UTC()
		if got, ok := l.appendJSON(nil, at, slog.LevelInfo); ok {
			if want := slogIssuedLine(l, at, slog.LevelInfo); string(got) != want {
				t.Fatalf("got %s\nwant %s", got, want)
			}
		}
	})
}
