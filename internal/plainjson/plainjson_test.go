package plainjson

import (
	"encoding/json"
	"testing"
)

// AppendString writes what json.Marshal writes, whatever the string holds.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "abc", `a"b\c`, "<&>", "é", "\u2028\u2029", "\x00\x1f\x7f", "\xff", "wimse://a.example/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: got %s, want %s", s, got[1:], want)
		}
	})
}

// AppendObject writes what json.Marshal writes for the map, raw JSON text included.
func TestAppendObjectMatchesMarshal(t *testing.T) {
	for _, m := range []map[string]any{
		nil, {}, {"b": "1", "a": "<2>", "é": json.Number("12345678901234567890")},
		{"raw": json.RawMessage(`{"a":[1,2]}`), "spaced": json.RawMessage(`{ "a" : 1 }`), "html": json.RawMessage(`"<&>"`), "ls": json.RawMessage("\"\u2028\"")},
		{"n": nil, "f": 1.5, "l": []any{"x", true}, "m": map[string]any{"z": 1, "y": "2"}},
		{"1": "", "2": "", "3": "", "4": "", "5": "", "6": "", "7": "", "8": "", "9": "", "10": ""},
	} {
		got, err := AppendObject(nil, m)
		want, wantErr := json.Marshal(m)
		if m == nil {
			want = []byte("{}") // a nil map is written as an empty object, never null
		}
		if err != nil || wantErr != nil || string(got) != string(want) {
			t.Fatalf("\n got %s (%v)\nwant %s (%v)", got, err, want, wantErr)
		}
	}
	if _, err := AppendObject(nil, map[string]any{"bad": json.RawMessage(`{`)}); err == nil {
		t.Fatal("invalid JSON text written")
	}
}
