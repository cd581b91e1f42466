package plainjson

import (
	"encoding/json"
	"slices"
)

// AppendObject appends m as encoding/json writes a map[string]any: members sorted by
// name (octet order), each value as json.Marshal writes it. The values a token request
// puts there (strings, and JSON text as the client sent it) are written directly; any
// other value goes through json.Marshal.
func AppendObject(b []byte, m map[string]any) ([]byte, error) {
	var arr [8]string
	names := arr[:0]
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	b = append(b, '{')
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, name)
		b = append(b, ':')
		switch v := m[name].(type) {
		case string:
			b = AppendString(b, v)
		case json.RawMessage:
			if plainText(v) {
				b = append(b, v...)
				continue
			}
			enc, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
		default:
			enc, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
		}
	}
	return append(b, '}'), nil
}

// plainText reports JSON text that encoding/json would write unchanged: valid, with no
// white space to compact away and nothing it escapes for HTML safety ('<', '>', '&',
// and U+2028 and U+2029, whose UTF-8 encodings begin with 0xE2).
func plainText(v []byte) bool {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return false
		}
	}
	return json.Valid(v)
}

// AppendString appends s as a JSON string the way encoding/json writes it (including
// its HTML-safe escapes), falling back to encoding/json for anything but plain
// printable ASCII.
func AppendString(b []byte, s string) []byte {
	if !plainString(s) {
		enc, _ := json.Marshal(s)
		return append(b, enc...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainString reports a string encoding/json writes between quotes unchanged.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

// plainByte marks the octets encoding/json writes unchanged inside a string: printable
// ASCII but '"', '\\' and the HTML-sensitive '<', '>' and '&'. (A table: the token
// response repeats the whole Txn-Token, a kilobyte, through this test.)
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()
