package jose

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
)

var b64url = base64.RawURLEncoding

// What ScanPlainObject accepts is a JSON object whose members encoding/json reads as
// the spans it reports: each name decodes to its octets, each value is the member's JSON
// text, and a string value decodes to the octets between its quotes.
func FuzzScanPlainObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":"b"}`, `{"a":1,"b":"c"}`, `{"a":0}`, `{"a":01}`, `{"a":-1}`, `{"a":1.5}`, `{"a":true}`, `{"a":null}`,
		`{"a":"\n"}`, `{"a":"\u0041"}`, `{"é":"x"}`, `{"a":"b",}`, `{"a":"b"}x`, ` {"a":"b"}`, `{"a" :"b"}`, `{"a":{}}`,
		`{"a":[1]}`, `{"a":"b","a":"c"}`, `{"":""}`, `{"a":"<&>"}`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":"b"`, `{""":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		type member struct{ name, value string }
		var got []member
		ok := ScanPlainObject(s, func(n, v Span) bool {
			got = append(got, member{s[n.Start:n.End], s[v.Start:v.End]})
			return true
		})
		if !ok {
			return
		}
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
	})
}

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
