package tts

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// The line written for each token issued carries every field with this request's
// values, also when the subject token's hash comes from the subject cache.
func TestIssuedLogLine(t *testing.T) {
	e := newEnv(t)
	a1, a2 := e.workload("/agent/a1"), e.workload("/agent/a2")
	at := e.accessToken("alice", "trip.read", 0)
	type sent struct {
		w       string
		subject string
		typ     string
		resp    *oauth.TokenResponse
		claims  *txntoken.Claims
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
		resp, claims := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: c.subject, SubjectTokenType: c.typ, Dialog: c.dlg})
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
			"subject_token_sha256": tokenhash.Of(s.subject), "method": oauth.MethodWPT, "requester": "wimse://a.example" + s.w,
			"aud": tdA, "txn": s.claims.Txn, "txn_token_sha256": tokenhash.Of(s.resp.AccessToken), "kid": e.ttsKey.KID(),
			"exp": float64(*s.claims.Exp), "call_chain": float64(1), "rule": "wimse://a.example/",
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
	e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken})
	if _, err := e.request(w, txntoken.Request{Audience: "unknown.example", Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken}); err == nil {
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
