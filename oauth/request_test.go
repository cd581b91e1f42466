package oauth

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// The direct decoding of plain context objects gives what encoding/json gives.
func FuzzPlainContext(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"dlg":"7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37"}`, `{"a":1,"b":"c"}`, `{"a":"b","a":"c"}`, `{"a":{"b":1}}`,
		`{"a":"\u0041"}`, `{"":1}`, `{"a":01}`, `{"a":"b"} `,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := plainContext(s)
		if !ok {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &want); err != nil || want == nil {
			t.Fatalf("%q: plain path accepted what encoding/json refuses: %v", s, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nplain %q\n json %q", s, got, want)
		}
	})
}

func TestParseScope(t *testing.T) {
	many := "s0 s1 s2 s3 s4 s5 s6 s7 s8 s9 s10 s11 s12 s13 s14 s15 s16 s3 s17"
	for in, want := range map[string][]string{
		"a": {"a"}, "a b": {"a", "b"}, "a b a": {"a", "b"}, "b a b a": {"b", "a"},
		many: {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16", "s17"},
	} {
		got, err := ParseScope(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", " ", "a ", " a", "a  b", "a\tb", `a"b`, `a\b`, "é", "a \x7f"} {
		if got, err := ParseScope(bad); err == nil {
			t.Fatalf("%q accepted: %q", bad, got)
		}
	}
}

// The escaped URNs unescape to themselves through url.QueryUnescape, and a request
// spelling them otherwise (lower-case hex, raw colons) means the same.
func TestEscapedURNs(t *testing.T) {
	for esc, urn := range escapedURNs {
		if u, err := url.QueryUnescape(esc); err != nil || u != urn {
			t.Fatalf("%q unescapes to %q (%v), table says %q", esc, u, err, urn)
		}
		if got, err := unescape(esc); err != nil || got != urn {
			t.Fatalf("unescape(%q) = %q", esc, got)
		}
		for _, other := range []string{urn, strings.ReplaceAll(esc, "%3A", "%3a")} {
			if got, err := unescape(other); err != nil || got != urn {
				t.Fatalf("unescape(%q) = %q", other, got)
			}
		}
	}
	if len(escapedURNs) < 10 {
		t.Fatal("table too small")
	}
}

// decodeDialog reads a dialog identifier as encoding/json does.
func TestDecodeDialog(t *testing.T) {
	for _, in := range []string{`"abc"`, `"a\"b"`, `"\u0041"`, `"é"`, "\"\xff\"", `"a b"`, `""`, `5`, `null`, `"<&>"`, `"a\/b"`} {
		var got, want string
		ok := decodeDialog(json.RawMessage(in), &got)
		wantOK := json.Unmarshal([]byte(in), &want) == nil
		if ok != wantOK || got != want {
			t.Fatalf("%s: %q %v, encoding/json %q %v", in, got, ok, want, wantOK)
		}
	}
}

// The token response is encoding/json's document for TokenResponse, octet for octet,
// whether the token is written from its string or escaped.
func TestTokenResponseJSON(t *testing.T) {
	for _, r := range []TokenResponse{
		{AccessToken: "eyJhbGciOiJFZERTQSJ9.eyJ0eG4iOiJ4In0.c2ln-_", IssuedTokenType: TokenTypeTxnToken, TokenType: "N_A", ExpiresIn: 300, Scope: "trip.read trip.book"},
		{AccessToken: "a<b>&\"\\é\u2028\x01", IssuedTokenType: TokenTypeTxnToken, TokenType: "N_A", ExpiresIn: -1, Scope: "<s>"},
		{},
	} {
		var want strings.Builder
		if err := json.NewEncoder(&want).Encode(r); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		got.Write(r.AppendJSON(nil))
		if got.String() != want.String() {
			t.Fatalf("\n got %s\nwant %s", got.String(), want.String())
		}
	}
}
