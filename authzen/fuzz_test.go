package authzen

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseEvaluationResponse: the parser of a PDP's answer never panics, allows only
// when the body is a JSON object whose decision is true, and keeps the reason bounded.
func FuzzParseEvaluationResponse(f *testing.F) {
	for _, s := range []string{
		`{"decision":true}`, `{"decision":false,"context":{"reason_admin":{"en":"x"}}}`,
		`{"decision":true,"context":{"reason":"r"}}`, `{"decision":"true"}`, `{"decision":false,"decision":true}`,
		`[true]`, `{"Decision":true}`, `{"decision":true}x`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		allow, reason, err := ParseEvaluationResponse(body)
		if err != nil {
			if allow || reason != "" {
				t.Fatalf("an error with a decision: %v %q", allow, reason)
			}
			return
		}
		if len(reason) > maxReason+len("…") {
			t.Fatalf("reason of %d bytes", len(reason))
		}
		if allow {
			var v map[string]json.RawMessage
			if json.Unmarshal(body, &v) != nil || !bytes.Equal(bytes.TrimSpace(v["decision"]), []byte("true")) {
				t.Fatalf("allowed on %q", body)
			}
		}
	})
}
