package netjson

// This file holds the hand-written scanning of JSON text: the plain form the fast path
// of DecodeClaims and DecodeMembers reads (scanObject, scanNested), and the walkers of
// already validated JSON package handoff splits objects with. (names.go has the
// validating walk driven by Go types, plain.go the fast path's decoding.)

// scanObject recognizes the plainest form of a JSON object, the form this project
// writes its own claims and context in, so that a hot path can skip the reflection of
// encoding/json for it:
//
//	{"name":value,"name":value,...}
//
// with no white space anywhere, every name a plain string (see below), and every value
// a plain string, or a non-negative integer written with digits only and no leading
// zero. A plain string is a quote, printable ASCII other than the quote and the
// backslash, and a quote: JSON text that decodes to exactly the octets between its
// quotes. (The empty object {} is plain too.)
//
// For such a text it calls yield with the spans of each member's name (without its
// quotes) and value (its JSON text: a string with its quotes, or the digits) in b, in
// order, and returns true;
// yield returning false stops the scan, which then returns false. For any other text,
// including valid JSON that is merely not plain (white space, escapes, non-ASCII,
// nested values, true, false, null, fractions), it returns false. The caller then
// decodes the text with encoding/json, which remains the reference: a plain text is
// valid JSON, and what the caller makes of the members must equal what encoding/json
// would decode from them (the callers' tests compare the two on fuzzed input).
//
// Duplicate names are reported as they appear; callers that must refuse or merge them
// handle that, or return false from yield and let encoding/json decide.
func scanObject[T ~string | ~[]byte](b T, yield func(name, value Span) bool) bool {
	return scanNestedObject(b, 0, yield)
}

// Span is the octets Start to End (exclusive) of a scanned text.
type Span struct{ Start, End int }

// plainStringEnd: b[i] must open a plain string; it returns the index after its
// closing quote.
func plainStringEnd[T ~string | ~[]byte](b T, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return 0, false
		}
	}
	return 0, false
}

// The scanners below walk JSON text that json.Valid has already accepted (package
// handoff splits objects into members with them); on other text their results mean
// nothing.

// IsSpace reports whether c is JSON white space (RFC 8259 section 2).
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first octet at or after i that is not white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// StringEnd returns the index just past the JSON string starting at b[i] == '"'.
func StringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// ValueEnd returns the index just past the JSON value starting at b[i]. b is valid JSON.
func ValueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = StringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && !IsSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	return i
}

// DeeperThan reports whether the JSON text s nests objects and arrays deeper than max.
// Brackets inside strings are skipped; s need not be valid JSON (it is checked before
// it is decoded, so that a decoder never recurses deeper).
func DeeperThan(s string, max int) bool {
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// scanNestedObject is scanObject where a member's value may also be an object of the
// same plain form, nested at most depth levels below b (depth 0 is scanObject exactly).
// It yields the outermost object's members only, a nested object as one value (its
// whole text), so that a caller can take it as a json.RawMessage or scan it in turn.
// (A WIT's claims carry cnf.jwk, two objects deep, and are otherwise plain.)
func scanNestedObject[T ~string | ~[]byte](b T, depth int, yield func(name, value Span) bool) bool {
	end, ok := scanNested(b, 0, depth, yield)
	return ok && end == len(b)
}

// scanNested scans the plain object at b[i] (objects nested at most depth deeper) and
// returns the index after it; yield, when not nil, gets its members.
func scanNested[T ~string | ~[]byte](b T, i, depth int, yield func(name, value Span) bool) (int, bool) {
	return walkObject(b, i, func(name Span, at int) (int, bool) {
		end, ok := plainValueEnd(b, at, depth)
		if !ok || (yield != nil && !yield(name, Span{at, end})) {
			return 0, false
		}
		return end, true
	})
}

// walkObject walks the plain object at b[i] (no white space, plain names): for each
// member it calls member with the span of its name (without the quotes) and the index
// where its value starts, and member returns the index after the value, or false to
// stop. It returns the index after the object. The plain scanners and the fast path of
// DecodeClaims share it.
func walkObject[T ~string | ~[]byte](b T, i int, member func(name Span, at int) (int, bool)) (int, bool) {
	n := len(b)
	if i >= n || b[i] != '{' {
		return 0, false
	}
	i++
	if i < n && b[i] == '}' {
		return i + 1, true
	}
	for {
		end, ok := plainStringEnd(b, i)
		if !ok || end >= n || b[end] != ':' {
			return 0, false
		}
		if end, ok = member(Span{i + 1, end - 1}, end+1); !ok || end >= n {
			return 0, false
		}
		switch b[end] {
		case ',':
			i = end + 1
		case '}':
			return end + 1, true
		default:
			return 0, false
		}
	}
}

// plainValueEnd returns the index after the plain value at b[i]: a plain string, a
// non-negative integer (digits, no leading zero), or, when depth > 0, a plain object
// nested at most depth-1 deeper.
func plainValueEnd[T ~string | ~[]byte](b T, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return plainStringEnd(b, i)
	case c == '0':
		return i + 1, true
	case c >= '1' && c <= '9':
		end := i + 1
		for end < len(b) && b[end] >= '0' && b[end] <= '9' {
			end++
		}
		return end, true
	case c == '{' && depth > 0:
		return scanNested(b, i, depth-1, nil)
	}
	return 0, false
}
