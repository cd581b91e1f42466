package jose

import "github.com/dialogtrust/dialogtrust/internal/plainjson"

// ScanPlainObject recognizes the plainest form of a JSON object and reports its
// members' spans; see the scanner it calls for the form.
//
// Deprecated: it was exported only for this module's own packages, which now use its
// one internal copy; it will be removed.
func ScanPlainObject[T ~string | ~[]byte](b T, yield func(name, value Span) bool) bool {
	return plainjson.ScanObject(b, yield)
}

// Span is the octets Start to End (exclusive) of a scanned text.
//
// Deprecated: see ScanPlainObject.
type Span = plainjson.Span
