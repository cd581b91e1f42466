package jose

// ScanPlainObject recognizes the plainest form of a JSON object, the form this project
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
func ScanPlainObject[T ~string | ~[]byte](b T, yield func(name, value Span) bool) bool {
	n := len(b)
	if n < 2 || b[0] != '{' || b[n-1] != '}' {
		return false
	}
	i := 1
	if n == 2 {
		return true
	}
	for {
		// name
		end, ok := plainStringEnd(b, i)
		if !ok || end >= n || b[end] != ':' {
			return false
		}
		name := Span{i + 1, end - 1}
		i = end + 1
		// value
		if i >= n {
			return false
		}
		switch c := b[i]; {
		case c == '"':
			end, ok = plainStringEnd(b, i)
			if !ok {
				return false
			}
		case c == '0':
			end = i + 1
		case c >= '1' && c <= '9':
			end = i + 1
			for end < n && b[end] >= '0' && b[end] <= '9' {
				end++
			}
		default:
			return false
		}
		if end >= n {
			return false
		}
		if !yield(name, Span{i, end}) {
			return false
		}
		switch b[end] {
		case ',':
			i = end + 1
		case '}':
			return end == n-1
		default:
			return false
		}
	}
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
