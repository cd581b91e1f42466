package wpt

import (
	"reflect"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
)

// The direct decoding of plain payloads gives what encoding/json gives, and leaves
// everything else to it.
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range []string{
		`{"aud":"https://tool.a.example/invoke","exp":1800000060,"jti":"Zm9vYmFy","wth":"abc-_123"}`,
		`{"aud":"a","exp":0,"jti":"j","wth":"w","ath":"a","tth":"t","dth":"d"}`,
		`{"aud":"a","exp":1,"jti":"j","wth":"w","oth":{"x":"y"}}`,
		`{"aud":["a"],"exp":1}`, `{"aud":"a","aud":"b"}`, `{"AUD":"a"}`, `{"exp":"1"}`, `{"exp":01}`, `{"exp":1.5}`,
		`{"exp":-1}`, `{"exp":9007199254740993}`, `{"exp":999999999999999}`, `{"exp":1000000000000000}`, `{"exp":99999999999999999999}`, `{"jti":null}`, `{"jti":"a\"b"}`,
		`{"jti":"\u00e9"}`, `{"jti":"é"}`, `{ "jti":"a"}`, `{"jti":"a"} `, `{}`, `{`, `{"x":1}`, `{"jti":"a",}`, `{"jti":"a"}{}`,
		`{"exp":1e3}`, `{"wth":""}`, `{"":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var fast Claims
		if !decodePlainClaims(payload, &fast) {
			return
		}
		var ref Claims
		if err := jose.DecodeClaims(payload, &ref); err != nil {
			t.Fatalf("%s: plain path accepted what encoding/json refuses: %v", payload, err)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("%s:\nplain %+v\n json %+v", payload, fast, ref)
		}
	})
}

// decodeClaims answers non-plain payloads exactly as jose.DecodeClaims does, codes too.
func TestDecodeClaimsFallback(t *testing.T) {
	for _, s := range []string{
		`{"aud":"a","exp":"soon","jti":"j","wth":"w"}`, `{"aud":5}`, `{"exp":-1}`, `{"aud":["a","b"],"exp":1,"jti":"j","wth":"w","oth":{"x":"y"}}`,
		`{"aud":"a","aud":"b"}`, `{"jti":"a","JTI":"b"}`, `[]`, `{"exp":1}x`,
	} {
		var got, want Claims
		err := decodeClaims([]byte(s), &got)
		wantErr := jose.DecodeClaims([]byte(s), &want)
		if errcode.CodeOf(err) != errcode.CodeOf(wantErr) || (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %+v %v, want %+v %v", s, got, err, want, wantErr)
		}
	}
}
