package hostproto

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// SameID reports whether two JSON-RPC ids are the same id: a response carries
// "the same value as the id member in the Request Object" (JSON-RPC 2.0, section 5), a
// value and not a text, so a server that writes the id again in its own way (another
// JSON library, a re-escaped string) still answers the request. The rule:
//
//   - a string matches a string of the same decoded characters: "a/b" and "a\/b",
//     "a" and "\u0061" are one id;
//   - a number matches a number of the same exact decimal value: 1, 1.0, 1e0 and 10e-1
//     are one id (section 5 wants numbers without fractional parts, and a server that
//     reads 1 as a float writes 1.0 back), -0 is 0, and nothing is rounded through
//     float64, so 9007199254740993 is not 9007199254740992;
//   - null matches only null;
//   - a string never matches a number.
//
// Where an id has no well-defined value to compare by, it matches only an id of the
// same compact text: a string that is not UTF-8 or holds an unpaired surrogate escape
// (encoding/json would decode every such string to U+FFFD, making different ids one),
// a number whose exponent has more than maxIDExponentDigits digits, and an object, array
// or boolean (no JSON-RPC id at all). So any two ids of the same compact text match. An
// absent or malformed id matches nothing. The work is linear in the ids' lengths (no
// exponent is expanded), and the ids are bounded by the bodies they come in (proxy.MaxBody).
func SameID(a, b json.RawMessage) bool {
	ia, okA := parseJSONRPCID(a)
	ib, okB := parseJSONRPCID(b)
	return okA && okB && ia.same(ib)
}

// jsonrpcID is an id read once to be compared with many (SameID).
type jsonrpcID struct {
	kind    byte   // '"' a string, '0' a number, 'n' null, 'o' anything else
	text    []byte // the id, valid JSON without surrounding white space ('o': compact)
	byValue bool   // str or num holds its value; else it is compared by text
	str     string
	num     decimalValue
}

// parseJSONRPCID reads raw as an id; false for an absent id or malformed JSON.
func parseJSONRPCID(raw json.RawMessage) (jsonrpcID, bool) {
	raw = bytes.Trim(raw, " \t\r\n") // JSON's white space only
	if len(raw) == 0 || !json.Valid(raw) {
		return jsonrpcID{}, false
	}
	id := jsonrpcID{text: raw}
	switch c := raw[0]; {
	case c == '"':
		id.kind = '"'
		id.str, id.byValue = idString(raw)
	case c == '-' || c >= '0' && c <= '9':
		id.kind = '0'
		id.num, id.byValue = idNumber(raw)
	case string(raw) == "null":
		id.kind = 'n'
	default: // an object, an array or a boolean: no JSON-RPC id, compared as written
		id.kind = 'o'
		id.text, _ = CompactJSON(raw)
	}
	return id, true
}

// same reports whether a and b are one id (SameID).
func (a jsonrpcID) same(b jsonrpcID) bool {
	switch {
	case a.kind != b.kind:
		return false
	case a.kind == 'n':
		return true
	case a.kind == 'o' || !a.byValue || !b.byValue:
		return bytes.Equal(a.text, b.text) // a valid JSON string or number has no insignificant white space
	case a.kind == '"':
		return a.str == b.str
	}
	return a.num == b.num
}

// idString is the decoded value of the JSON string s (valid JSON), and false where it
// has none to compare by: s is not UTF-8 or escapes an unpaired surrogate.
func idString(s []byte) (string, bool) {
	if !utf8.Valid(s) {
		return "", false
	}
	for i := 1; i < len(s)-1; i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++
			continue
		}
		u, _ := strconv.ParseUint(string(s[i+2:i+6]), 16, 16) // valid JSON: four hex digits
		switch {
		case u >= 0xDC00 && u <= 0xDFFF:
			return "", false // a low surrogate alone
		case u >= 0xD800 && u <= 0xDBFF:
			if i+12 > len(s)-1 || s[i+6] != '\\' || s[i+7] != 'u' {
				return "", false
			}
			lo, err := strconv.ParseUint(string(s[i+8:i+12]), 16, 16)
			if err != nil || lo < 0xDC00 || lo > 0xDFFF {
				return "", false
			}
			i += 11
		default:
			i += 5
		}
	}
	var v string
	if json.Unmarshal(s, &v) != nil {
		return "", false
	}
	return v, true
}

// maxIDExponentDigits bounds the exponent of a number id compared by value (leading
// zeros aside), so that it and the position of the decimal point (at most MaxBody) add
// in an int64.
const maxIDExponentDigits = 15

// decimalValue is a number as 0.digits × 10^exp with digits without leading or
// trailing zeros (so one value has one decimalValue); zero has no digits, no sign and
// exponent 0.
type decimalValue struct {
	negative bool
	digits   string
	exp      int64
}

// idNumber is the exact value of the JSON number n (valid JSON), and false where its
// exponent is over maxIDExponentDigits digits.
func idNumber(n []byte) (decimalValue, bool) {
	s := string(n)
	var v decimalValue
	if s[0] == '-' {
		v.negative, s = true, s[1:]
	}
	mantissa, exponent := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mantissa, exponent = s[:i], s[i+1:]
	}
	intPart, fracPart := mantissa, ""
	if i := strings.IndexByte(mantissa, '.'); i >= 0 {
		intPart, fracPart = mantissa[:i], mantissa[i+1:]
	}
	var exp int64
	if exponent != "" {
		neg := exponent[0] == '-'
		if exponent[0] == '+' || exponent[0] == '-' {
			exponent = exponent[1:]
		}
		for len(exponent) > 1 && exponent[0] == '0' {
			exponent = exponent[1:]
		}
		if len(exponent) > maxIDExponentDigits {
			return decimalValue{}, false
		}
		exp, _ = strconv.ParseInt(exponent, 10, 64) // at most 15 decimal digits
		if neg {
			exp = -exp
		}
	}
	digits := intPart + fracPart
	point := int64(len(intPart))
	for len(digits) > 0 && digits[0] == '0' {
		digits, point = digits[1:], point-1
	}
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if digits == "" {
		return decimalValue{}, true // zero, whatever its sign and exponent
	}
	v.digits, v.exp = digits, point+exp
	return v, true
}

// ValidID reports an id a JSON-RPC response can echo: a string or a number (MCP
// forbids null, and JSON-RPC keeps null for an id that could not be read).
func ValidID(id json.RawMessage) bool {
	var v any
	if len(id) == 0 || netjson.DecodeObject(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// RequestID is the id member of a JSON-RPC request body (nil without one).
func RequestID(body []byte) json.RawMessage {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &env)
	return env.ID
}

// CompactJSON is raw without insignificant white space, for comparing identifiers.
func CompactJSON(raw json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
