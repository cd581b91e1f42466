package wit

import (
	"reflect"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// The direct decoding of plain payloads gives what encoding/json gives, and leaves
// everything else to it.
func FuzzDecodeClaims(f *testing.F) {
	for _, s := range []string{
		`{"iss":"wimse://example.org","sub":"wimse://example.org/agent/a","iat":1800000000,"exp":1800003600,"jti":"Zm9v","cnf":{"jwk":{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}}`,
		`{"sub":"s","nbf":0,"exp":1,"cnf":{}}`, `{"cnf":{"jwk":"x"}}`, `{"cnf":{"jwk":1}}`, `{"cnf":{"jwk":{}}}`,
		`{"cnf":{"jwk":{"a":{"b":1}}}}`, `{"cnf":{"jwk":{"a":"b","a":"c"}}}`, `{"cnf":{"jwk":{},"jwk":{}}}`,
		`{"cnf":{"JWK":{}}}`, `{"cnf":{"jkt":"x"}}`, `{"cnf":"x"}`, `{"cnf":1}`, `{"cnf":null}`, `{"iss":1}`,
		`{"sub":"a","sub":"b"}`, `{"SUB":"a"}`, `{"exp":"1"}`, `{"exp":01}`, `{"exp":1.5}`, `{"exp":-1}`,
		`{"exp":9007199254740993}`, `{"exp":999999999999999}`, `{"exp":1000000000000000}`, `{"iat":99999999999999999999}`,
		`{"jti":"a\"b"}`, `{"jti":"\u00e9"}`, `{"jti":"é"}`, `{ "jti":"a"}`, `{"jti":"a"} `, `{}`, `{`, `{"x":1}`,
		`{"jti":"a",}`, `{"jti":"a"}{}`, `{"iat":{}}`, `{"iss":{"a":1}}`,
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
		`{"sub":"a","exp":"soon"}`, `{"sub":5}`, `{"exp":-1}`, `{"sub":"a","SUB":"b"}`, `{"sub":"a","sub":"b"}`,
		`{"cnf":{"jwk":{},"jwk":{}}}`, `{"cnf":{"JWK":{}}}`, `{"cnf":null,"sub":"a"}`, `{"cnf":{"jwk": {}}}`,
		`[]`, `{"exp":1}x`, `{"sub":"a","extra":[1,2]}`,
	} {
		var got, want Claims
		err := decodeClaims([]byte(s), &got)
		wantErr := jose.DecodeClaims([]byte(s), &want)
		if errcode.CodeOf(err) != errcode.CodeOf(wantErr) || (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %+v %v, want %+v %v", s, got, err, want, wantErr)
		}
	}
}

// The claims an Issuer writes take the direct path (else it would be dead code), and
// decode to what it signed.
func TestIssuedClaimsArePlain(t *testing.T) {
	for _, alg := range []string{keys.ES256, keys.EdDSA} {
		signer, _ := keys.Generate(alg)
		holder, _ := keys.Generate(alg)
		iss := NewIssuer("https://wit-issuer.a.example", func() *keys.PrivateKey { return signer })
		raw, issued, err := iss.Issue(identifier.MustParse("wimse://a.example/agent/a"), holder.Public(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jose.Parse(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		var c Claims
		if !decodePlainClaims(tok.Payload, &c) {
			t.Fatalf("%s: an issued WIT payload is not decoded directly: %s", alg, tok.Payload)
		}
		if !reflect.DeepEqual(&c, issued) {
			t.Fatalf("%s: decoded %+v, issued %+v", alg, c, *issued)
		}
	}
}
