package oauth

import (
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

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

// Issue 12 point 5: a member named twice in request_details or request_context, at any
// depth and however it is spelled, is refused (invalid_request), never "last wins".
func TestDecodeContextDuplicateMembers(t *testing.T) {
	for _, tc := range []struct{ param, value string }{
		{"request_details", `{"dlg":"A","dlg":"B"}`},
		{"request_details", `{"dlg":"A","\u0064lg":"B"}`},
		{"request_details", `{"a":{"b":1,"b":2}}`},
		{"request_details", `{"a":[1,{"x":{"c":1,"c":2}}]}`},
		{"request_context", `{"ip":"1","ip":"2"}`},
		{"request_context", `{"req":{"ip":"1","ip":"2"}}`},
	} {
		r, err := ParseTokenRequest([]byte(url.Values{tc.param: {tc.value}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		err = r.DecodeContext()
		if errcode.CodeOf(err) != errcode.InvalidRequest || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("%s=%s: %v (dlg %q), want invalid_request naming the repeated member", tc.param, tc.value, err, r.Dialog())
		}
	}
	for _, ok := range []string{`{"a":{"b":1},"c":{"b":2}}`, `{"a":[{"b":1},{"b":2}]}`, `{"dlg":"A","x":"\u0041"}`} {
		r, _ := ParseTokenRequest([]byte(url.Values{"request_details": {ok}}.Encode()))
		if err := r.DecodeContext(); err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
	}
}

// Issue 12 point 5: request_details.dlg is held to the Dialog-Context dlg grammar, so
// that every tctx.dlg can be carried by a Dialog-Context field.
func TestDecodeContextDialogGrammar(t *testing.T) {
	for _, bad := range []string{`"a\"b"`, `"` + strings.Repeat("d", MaxDialogLength+1) + `"`, `"a b"`, `"a/b"`, `"a,b"`, `"a;b"`, `""`, `1`, `"\u00e9"`} {
		r, _ := ParseTokenRequest([]byte(url.Values{"request_details": {`{"dlg":` + bad + `}`}}.Encode()))
		if err := r.DecodeContext(); errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Fatalf("dlg %s: %v (dlg %q), want invalid_request", bad, err, r.Dialog())
		}
	}
	for _, good := range []string{"7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37", "urn:uuid:7f3c9a2e", "D1_a.b~c", strings.Repeat("d", MaxDialogLength)} {
		r, _ := ParseTokenRequest([]byte(url.Values{"request_details": {`{"dlg":"` + good + `"}`}}.Encode()))
		if err := r.DecodeContext(); err != nil || r.Dialog() != good {
			t.Fatalf("dlg %s: %v %q", good, err, r.Dialog())
		}
	}
}
