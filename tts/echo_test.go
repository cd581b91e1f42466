package tts

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// A kid of 4.5 KB chosen by the caller is cut in the refusal the TTS sends back and in
// its log line (errcode.Cut), never repeated whole.
func TestLongKidIsCutInTheResponseAndTheLog(t *testing.T) {
	e := newEnv(t)
	w := e.workload("/agent/a1")
	kid := strings.Repeat("K", 4500)
	now := e.clock.Now()
	hdr, _ := json.Marshal(map[string]any{"typ": "at+jwt", "alg": e.idpKey.Alg(), "kid": kid})
	pl, _ := json.Marshal(map[string]any{"iss": idpIss, "sub": "alice", "aud": "https://api.a.example",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "client_id": "web", "scope": "trip.read"})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(hdr) + "." + enc.EncodeToString(pl)
	sig, err := e.idpKey.Sign([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	subject := input + "." + enc.EncodeToString(sig)

	status, _, body := e.rawPost(w, baseForm(tdA, "trip.read", subject, TokenTypeAccessToken), nil)
	if status < 400 || status >= 500 {
		t.Fatalf("status %d %s", status, body)
	}
	long := strings.Repeat("K", errcode.MaxEchoed+1)
	if strings.Contains(string(body), long) {
		t.Fatalf("the response repeats the kid whole (%d octets)", len(body))
	}
	if !strings.Contains(string(body), strings.Repeat("K", errcode.MaxEchoed)) {
		t.Fatalf("the response does not name the kid at all: %s", body)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "txn token refused") {
		t.Fatalf("no refusal logged: %s", logs)
	}
	if strings.Contains(logs, long) {
		t.Fatal("the log line repeats the kid whole")
	}
}
