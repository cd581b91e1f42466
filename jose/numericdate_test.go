package jose

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// The fast path of netjson.DecodeClaims reads plain NumericDates (PlainJSONForm) as
// UnmarshalJSON, the reader of every other path, does (RFC 7519 section 2, NumericDate),
// on both sides of 15 digits and of 2^53; and plain Audiences likewise.
func TestRFC7519Sec2_PlainFormsAgreeWithUnmarshalJSON(t *testing.T) {
	type claims struct {
		Exp *NumericDate `json:"exp"`
		Iat NumericDate  `json:"iat"`
		Aud Audience     `json:"aud"`
	}
	for _, in := range []string{`0`, `1`, `1764633600`, `999999999999999`, `1000000000000000`,
		`9007199254740992`, `9007199254740993`, `99999999999999999999`} {
		for _, payload := range []string{`{"exp":` + in + `,"iat":` + in + `}`, `{"aud":"a.example","exp":` + in + `}`} {
			var got, want claims
			err := netjson.DecodeClaims([]byte(payload), &got)
			wantErr := json.Unmarshal([]byte(payload), &want)
			if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %+v, %v; encoding/json %+v, %v", payload, got, err, want, wantErr)
			}
		}
	}
}
