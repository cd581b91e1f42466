package main

import (
	"testing"

	"github.com/dialogtrust/dialogtrust/tts"
)

// A Redis replay store that does not answer makes the TTS not ready with
// store_unavailable (issue 12 point 4), before the WIT issuer's keys are asked for.
// Nothing listens on port 1: the PING is refused at once.
func TestReadyzRedisDown(t *testing.T) {
	s := start(t, []string{"--listen", "127.0.0.1:0", "--store", "redis", "--redis-addrs", "127.0.0.1:1"},
		[]string{EnvPrefix + "WIT_JWKS_URL=http://127.0.0.1:1/jwks.json"})
	var prob map[string]any
	if getJSON(t, s.URL+tts.PathReadyz, &prob) != 503 || prob["code"] != "store_unavailable" || prob["kind"] != "could_not_complete" {
		t.Fatalf("ready with Redis down: %v", prob)
	}
}
