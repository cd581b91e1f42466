package netjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

type scanned struct{ name, value string }

// readAsEncodingJSONDoes fails unless s, which a plain scanner accepted with the
// members got, is a valid JSON object whose members encoding/json reads as those spans:
// each name decodes to its octets, each value is the member's JSON text, and a string
// value decodes to the octets between its quotes.
func readAsEncodingJSONDoes(t *testing.T, s string, got []scanned) {
	t.Helper()
	if !json.Valid([]byte(s)) {
		t.Fatalf("%q: accepted but not valid JSON", s)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q: not an object", s)
	}
	i := 0
	for ; dec.More(); i++ {
		tok, err := dec.Token()
		if err != nil || i >= len(got) || tok != got[i].name {
			t.Fatalf("%q: member %d name %v (%v), scanned %+v", s, i, tok, err, got)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil || string(raw) != got[i].value {
			t.Fatalf("%q: member %d value %s (%v), scanned %+v", s, i, raw, err, got)
		}
		if raw[0] == '"' {
			var str string
			if err := json.Unmarshal(raw, &str); err != nil || str != got[i].value[1:len(got[i].value)-1] {
				t.Fatalf("%q: string %s decodes to %q", s, raw, str)
			}
		}
	}
	if i != len(got) {
		t.Fatalf("%q: scanned %d members, encoding/json reads %d", s, len(got), i)
	}
}

// What scanObject accepts is a JSON object whose members encoding/json reads as
// the spans it reports: each name decodes to its octets, each value is the member's JSON
// text, and a string value decodes to the octets between its quotes.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":"b"}`, `{"a":1,"b":"c"}`, `{"a":0}`, `{"a":01}`, `{"a":-1}`, `{"a":1.5}`, `{"a":true}`, `{"a":null}`,
		`{"a":"\n"}`, `{"a":"\u0041"}`, `{"é":"x"}`, `{"a":"b",}`, `{"a":"b"}x`, ` {"a":"b"}`, `{"a" :"b"}`, `{"a":{}}`,
		`{"a":[1]}`, `{"a":"b","a":"c"}`, `{"":""}`, `{"a":"<&>"}`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":"b"`, `{""":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got []scanned
		ok := scanObject(s, func(n, v Span) bool {
			got = append(got, scanned{s[n.Start:n.End], s[v.Start:v.End]})
			return true
		})
		if !ok {
			return
		}
		readAsEncodingJSONDoes(t, s, got)
	})
}

// ValueEnd and StringEnd find the end of each member of valid JSON where
// encoding/json's decoder does.
func FuzzValueEnd(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"b"}`, `{ "a" : [1, {"b":"\"}"}] , "c":null }`, `{"a":"\\","b":-1.5e3}`, `{"a":{"b":{"c":[]}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !json.Valid(b) {
			return
		}
		i := SkipSpace(b, 0)
		if b[i] != '{' {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		i = SkipSpace(b, i+1)
		for dec.More() {
			var name string
			tok, _ := dec.Token()
			name, _ = tok.(string)
			end := StringEnd(b, i)
			var got string
			if err := json.Unmarshal(b[i:end], &got); err != nil || got != name {
				t.Fatalf("%q: name at %d is %q (%v), decoder read %q", s, i, got, err, name)
			}
			i = SkipSpace(b, SkipSpace(b, end)+1)
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				t.Fatal(err)
			}
			vend := ValueEnd(b, i)
			if string(b[i:vend]) != string(raw) {
				t.Fatalf("%q: value at %d is %s, decoder read %s", s, i, b[i:vend], raw)
			}
			i = SkipSpace(b, SkipSpace(b, vend)+1)
		}
	})
}

// DeeperThan counts nesting as encoding/json does, brackets in strings aside.
func TestDeeperThan(t *testing.T) {
	for s, depth := range map[string]int{
		`1`: 0, `{}`: 1, `[[]]`: 2, `{"a":[{"b":"[[[["}]}`: 3, `"\"[["`: 0, strings.Repeat("[", 40): 40,
	} {
		if DeeperThan(s, depth) || depth > 0 && !DeeperThan(s, depth-1) {
			t.Errorf("%s: depth is not %d", s, depth)
		}
	}
}

// scanNestedObject with depth 0 is scanObject; with more, what it accepts is a JSON
// object nested no deeper than asked, whose members encoding/json reads as the spans
// it reports (a nested object's span being its whole text).
func FuzzScanNestedObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":"b"}`, `{"a":{}}`, `{"a":{"b":"c"}}`, `{"a":{"b":{"c":1}}}`, `{"a":{"b":{"c":{"d":1}}}}`,
		`{"cnf":{"jwk":{"kty":"OKP","crv":"Ed25519","x":"abc"}},"exp":1}`, `{"a":{"b":[1]}}`, `{"a":{"b":"c"}x}`,
		`{"a":{"b":"c",}}`, `{"a":{"b":"c"}`, `{"a":{ "b":"c"}}`, `{"a":{"b":"\n"}}`, `{"a":{"b":01}}`, `{"a":{}}}`,
	} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, s string, depth int) {
		depth %= 4
		if depth < 0 {
			depth = -depth
		}
		var got []scanned
		ok := scanNestedObject(s, depth, func(n, v Span) bool {
			got = append(got, scanned{s[n.Start:n.End], s[v.Start:v.End]})
			return true
		})
		if depth == 0 {
			var flat []scanned
			flatOK := scanObject(s, func(n, v Span) bool {
				flat = append(flat, scanned{s[n.Start:n.End], s[v.Start:v.End]})
				return true
			})
			if ok != flatOK || (ok && len(flat) != len(got)) {
				t.Fatalf("%q: depth 0 gives %v %+v, scanObject %v %+v", s, ok, got, flatOK, flat)
			}
		}
		if !ok {
			return
		}
		if DeeperThan(s, depth+1) {
			t.Fatalf("%q: accepted nested deeper than %d", s, depth)
		}
		readAsEncodingJSONDoes(t, s, got)
	})
}
