package netjson

import (
	"encoding/json"
	"errors"
	"testing"
)

// DecodeKeepingNumbers keeps numbers as json.Number and refuses anything after the value.
func TestDecodeKeepingNumbers(t *testing.T) {
	var m map[string]any
	if err := DecodeKeepingNumbers([]byte(` {"n":12345678901234567890} `), &m); err != nil || m["n"] != json.Number("12345678901234567890") {
		t.Fatalf("%v %v", m, err)
	}
	for _, in := range []string{`{} {}`, `{}x`, `{}]`, `"a""b"`} {
		var v any
		if err := DecodeKeepingNumbers([]byte(in), &v); !errors.Is(err, ErrTrailing) {
			t.Fatalf("%q: %v, want ErrTrailing", in, err)
		}
	}
	var v any
	if err := DecodeKeepingNumbers([]byte(`{"a":`), &v); err == nil || errors.Is(err, ErrTrailing) {
		t.Fatalf("truncated value: %v", err)
	}
}

// DecodeString reads a JSON string value as encoding/json does, on its plain path and
// off it. (Moved from package oauth, whose dialog identifiers it reads.)
func FuzzDecodeString(f *testing.F) {
	for _, in := range []string{`"abc"`, `"a\"b"`, `"\u0041"`, `"é"`, "\"\xff\"", `"a b"`, `""`, `5`, `null`, `"<&>"`, `"a\/b"`, `"`, `"a"x`, ` "a"`} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := DecodeString(in)
		var want string
		wantErr := json.Unmarshal(in, &want)
		if (err == nil) != (wantErr == nil) || got != want {
			t.Fatalf("%q: %q %v, encoding/json %q %v", in, got, err, want, wantErr)
		}
	})
}
