package jose

import "testing"

// The fast paths' reader of plain digits agrees with UnmarshalJSON, the reader of
// every other path (RFC 7519 section 2, NumericDate), on both sides of 15 digits and
// of 2^53.
func TestRFC7519Sec2_ParsePlainNumericDateAgreesWithUnmarshalJSON(t *testing.T) {
	for _, digits := range []string{"0", "1", "1764633600", "999999999999999", "1000000000000000",
		"9007199254740992", "9007199254740993", "99999999999999999999"} {
		var want NumericDate
		wantOK := want.UnmarshalJSON([]byte(digits)) == nil
		got, ok := ParsePlainNumericDate(digits)
		if ok != wantOK || (ok && got != want) {
			t.Errorf("%s: got %d, %v; UnmarshalJSON %d, %v", digits, got, ok, want, wantOK)
		}
	}
}
