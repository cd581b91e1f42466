package jose

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
)

var b64url = base64.RawURLEncoding

// Audience.UnmarshalJSON reads a plain string directly; it must read what encoding/json
// reads, for every string.
func TestAudienceUnmarshalMatchesJSON(t *testing.T) {
	for _, in := range []string{`"a.example"`, `"a\"b"`, `"\u0041"`, `"é"`, "\"\xff\"", `""`, `"<&>"`, `"a\/b"`, ` "x" `, `["a","b"]`, `[]`, `null`, `5`, `"\t"`} {
		var got Audience
		err := got.UnmarshalJSON([]byte(in))
		var want Audience
		var wantErr error
		if b := bytes.TrimSpace([]byte(in)); len(b) > 0 && b[0] == '"' {
			var s string
			if wantErr = json.Unmarshal(b, &s); wantErr == nil {
				want = Audience{s}
			}
		} else {
			var ss []string
			if wantErr = json.Unmarshal(b, &ss); wantErr == nil {
				want = ss
			}
		}
		if (err == nil) != (wantErr == nil) || (err == nil && !slicesEqual(got, want)) {
			t.Fatalf("%s: %q %v, want %q %v", in, got, err, want, wantErr)
		}
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Sign's cached header text is the encoding of the header, first use and later.
func TestSignHeaderCache(t *testing.T) {
	for _, h := range []Header{{Typ: "txntoken+jwt", Alg: "EdDSA", Kid: "k1"}, {Alg: "ES256"}, {Typ: "<&>\"é", Alg: "EdDSA", Kid: "\u2028"}} {
		hb, _ := json.Marshal(h)
		for range 2 {
			got, err := signHeaders.encoded(h)
			if err != nil || got != b64url.EncodeToString(hb) {
				t.Fatalf("%+v: %q %v", h, got, err)
			}
		}
	}
}
