package ttsservice

import (
	"strconv"
	"strings"
	"testing"
)

// TestIssue24Point4TTSConfigErrorLocated: tts --check-config refuses a bad member with
// the file, line and column of its value, the source line and a caret, and the path;
// a member of a list item named by its key (subject_tokens.jwt_issuers[ISSUER]) is found
// by that key.
func TestIssue24Point4TTSConfigErrorLocated(t *testing.T) {
	base := strings.Replace(string(defaultYAML), "  type: memory\n", "  type: memroy\n", 1)
	if base == string(defaultYAML) {
		t.Fatal("the embedded default has no store.type memory to spoil")
	}
	line := 1 + strings.Count(base[:strings.Index(base, "  type: memroy")], "\n")
	err := checkConfig(t, base)
	want := `: [` + strconv.Itoa(line) + `:9] store.type "memroy": memory or redis`
	if err == nil || !strings.Contains(strings.SplitN(err.Error(), "\n", 2)[0], want) ||
		!strings.Contains(err.Error(), "|   type: memroy\n"+strings.Repeat(" ", 15)+"^\n") {
		t.Errorf("store.type: %v\nwant %q and a caret under the value", err, want)
	}

	issuers := string(defaultYAML) + `
  jwt_issuers:
    - issuer: https://idp.example
      jwks_url: https://idp.example/jwks
      allow_untyped: true
`
	issuers = strings.Replace(issuers, "subject_tokens:\n  self_signed: {enabled: true}\n  unsigned_json: {enabled: true}\n", "", 1)
	issuers = strings.Replace(issuers, "\n  jwt_issuers:", "\nsubject_tokens:\n  self_signed: {enabled: true}\n  jwt_issuers:", 1)
	line = 1 + strings.Count(issuers[:strings.Index(issuers, "    - issuer: https://idp.example")], "\n")
	err = checkConfig(t, issuers)
	if err == nil || !strings.Contains(strings.SplitN(err.Error(), "\n", 2)[0], ": ["+strconv.Itoa(line)+":") ||
		!strings.Contains(err.Error(), "subject_tokens.jwt_issuers[https://idp.example]: allow_untyped needs audiences") {
		t.Errorf("jwt_issuers: %v\nwant line %d", err, line)
	}
}
