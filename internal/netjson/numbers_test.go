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
