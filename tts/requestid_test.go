package tts

import (
	"net/http"
	"strings"
	"testing"
)

// Issue 7 item 7: every token request's log line carries a request id (the caller's
// well-formed X-Request-Id, else a generated one, echoed in the response) and the dialog
// (request_details.dlg), never a token.
func TestLogLinesCarryRequestAndDialogIDs(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	at := e.accessToken("alice", "trip.read", 0)
	form := baseForm(tdA, "trip.read", at, TokenTypeAccessToken)
	form.Set("request_details", `{"dlg":"D-42"}`)
	status, h, _ := e.rawPost(w, form, func(r *http.Request) { r.Header.Set("X-Request-Id", "req-1.a:b") })
	if status != http.StatusOK || h.Get("X-Request-Id") != "req-1.a:b" {
		t.Fatalf("status %d, X-Request-Id %q", status, h.Get("X-Request-Id"))
	}
	// Refused, with an id the TTS makes up because the caller's is not well formed.
	form.Set("scope", "trip.book")
	status, h, _ = e.rawPost(w, form, func(r *http.Request) { r.Header.Set("X-Request-Id", "bad id "+at) })
	gen := h.Get("X-Request-Id")
	if status != http.StatusBadRequest || gen == "" || strings.Contains(gen, " ") {
		t.Fatalf("status %d, X-Request-Id %q", status, gen)
	}
	logs := e.logs.String()
	for _, want := range []string{`"request_id":"req-1.a:b","dlg":"D-42"`, `"request_id":"` + gen + `","dlg":"D-42"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, at) || strings.Contains(logs, at[strings.LastIndexByte(at, '.'):]) {
		t.Fatal("a token is in the logs")
	}
}
