package hostproto

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// JSON-RPC 2.0, section 5 (Response object): the response's id is "the same value as
// the id member in the Request Object": ids are compared as values, not as texts.
func TestJSONRPC2Section5ResponseIDIsTheRequestIDsValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		same bool
	}{
		// Strings: by their decoded characters.
		{"the same string", `"r1"`, `"r1"`, true},
		{"an escaped solidus", `"a/b"`, `"a\/b"`, true},
		{"a \\u escape", `"a"`, `"\u0061"`, true},
		{"a \\u escape in upper case hex", `"\u00e9"`, `"\u00E9"`, true},
		{"a surrogate pair and its character", `"\ud83d\ude00"`, `"😀"`, true},
		{"an escaped quote and reverse solidus", `"q\"\\"`, `"q\u0022\u005c"`, true},
		{"different strings", `"r1"`, `"r2"`, false},
		{"a string and its prefix", `"r1"`, `"r"`, false},
		{"case matters", `"R1"`, `"r1"`, false},
		{"the empty string", `""`, `""`, true},
		// Unpaired surrogates decode to U+FFFD in encoding/json: not made one id.
		{"two unpaired surrogates", `"\ud800"`, `"\ud801"`, false},
		{"an unpaired surrogate and U+FFFD", `"\ud800"`, `"\ufffd"`, false},
		{"an unpaired surrogate, as written", `"\ud800"`, `"\ud800"`, true},
		{"a lone low surrogate and U+FFFD", `"\udc00"`, `"\ufffd"`, false},
		{"a high surrogate before a non-surrogate", `"\ud800\u0041"`, `"\ufffdA"`, false},
		// Numbers: by exact decimal value (the proxy's rule: 1 and 1.0 are one id).
		{"the same integer", `7`, `7`, true},
		{"an integer and its decimal form", `1`, `1.0`, true},
		{"an integer and its exponent form", `1`, `1e0`, true},
		{"an exponent with sign and capital E", `100`, `1E+2`, true},
		{"a negative exponent", `1`, `10e-1`, true},
		{"leading zeros in the exponent", `1e2`, `1e002`, true},
		{"negative zero", `0`, `-0`, true},
		{"zero with a fraction and an exponent", `0`, `0.000e5`, true},
		{"negative integers", `-42`, `-4.2e1`, true},
		{"a sign makes another number", `42`, `-42`, false},
		{"different integers", `7`, `8`, false},
		{"an integer and a fraction", `1`, `1.5`, false},
		{"the same fraction", `0.5`, `5e-1`, true},
		{"beyond 2^53, exactly", `9007199254740993`, `9007199254740992`, false},
		{"beyond 2^53, the same", `9007199254740993`, `9007199254740993.0`, true},
		{"beyond 2^64", `123456789012345678901234567890`, `1.2345678901234567890123456789e29`, true},
		{"beyond 2^64, one apart", `123456789012345678901234567890`, `123456789012345678901234567891`, false},
		{"beyond float64's range", `1e400`, `10e399`, true},
		{"beyond float64's range, apart", `1e400`, `1e401`, false},
		{"an exponent over the bound, as written", `1e1000000000000000000`, `1e1000000000000000000`, true},
		{"an exponent over the bound, written another way", `1e1000000000000000000`, `10e999999999999999999`, false},
		// Null only matches null; a string never matches a number.
		{"null and null", `null`, `null`, true},
		{"null and a string", `null`, `"null"`, false},
		{"null and zero", `null`, `0`, false},
		{"a string and a number", `"1"`, `1`, false},
		{"a number and a string", `7`, `"7"`, false},
		// White space around the value is not part of it.
		{"white space around", " 7\n", `7`, true},
		// Not ids: absent, malformed; others only as written.
		{"absent", ``, ``, false},
		{"malformed", `"r1`, `"r1`, false},
		{"a number and true", `1`, `true`, false},
		{"an array, as written", `[1, 2]`, `[1,2]`, true},
		{"an array and its element", `[1]`, `1`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SameID(json.RawMessage(tc.a), json.RawMessage(tc.b)); got != tc.same {
				t.Fatalf("SameID(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
			}
			if got := SameID(json.RawMessage(tc.b), json.RawMessage(tc.a)); got != tc.same {
				t.Fatalf("SameID(%s, %s) = %v, want %v (not symmetric)", tc.b, tc.a, got, tc.same)
			}
		})
	}
}

// Any two ids of the same compact text are one id, whatever their kind.
func FuzzSameJSONRPCIDKeepsEqualTexts(f *testing.F) {
	for _, s := range []string{`7`, `"a\/b"`, `"\ud800"`, `1e400`, `-0.0e-0`, `null`, `[1, {"a": 2}]`, `"\u0061"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) {
			return
		}
		c, err := CompactJSON(json.RawMessage(s))
		if err != nil {
			t.Fatal(err)
		}
		if !SameID(json.RawMessage(s), c) {
			t.Fatalf("%q and its compact form %q do not match", s, c)
		}
	})
}

// A number id with a long mantissa or exponent is compared without expanding it.
func TestJSONRPCIDNumberIsNotExpanded(t *testing.T) {
	long := "1" + strings.Repeat("0", 1<<20)
	if !SameID(json.RawMessage(long), json.RawMessage("1e"+itoa(1<<20))) {
		t.Fatal("10^(2^20) written two ways is not one id")
	}
	if !SameID(json.RawMessage("1e999999999999999"), json.RawMessage("10e999999999999998")) {
		t.Fatal("10^999999999999999 written two ways is not one id")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
