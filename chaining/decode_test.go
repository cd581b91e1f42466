package chaining

import (
	"reflect"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// The direct decoding of plain grant payloads gives what encoding/json gives, and
// leaves everything else to it.
func FuzzDecodeGrantClaims(f *testing.F) {
	for _, s := range []string{
		`{"iss":"https://as-a.example","sub":"alice@a.example","aud":"https://as-b.example","iat":1800000000,"exp":1800000060,"jti":"Zm9v","scope":"read write","requested_cnf":{"jkt":"abc-_"}}`,
		`{"iss":"a","nbf":0,"exp":1,"requested_cnf":{}}`, `{"requested_cnf":{"jkt":1}}`, `{"requested_cnf":{"jkt":"a","jkt":"b"}}`,
		`{"requested_cnf":{"JKT":"a"}}`, `{"requested_cnf":{"x":"a"}}`, `{"requested_cnf":{"jkt":{}}}`, `{"requested_cnf":"x"}`,
		`{"requested_cnf":null}`, `{"scope":""}`, `{"scope":1}`, `{"scope":null}`, `{"aud":["a"]}`, `{"aud":1}`, `{"aud":{}}`,
		`{"iss":"a","iss":"b"}`, `{"ISS":"a"}`, `{"Scope":"a"}`, `{"exp":"1"}`, `{"exp":01}`, `{"exp":1.5}`, `{"exp":-1}`,
		`{"exp":9007199254740993}`, `{"exp":999999999999999}`, `{"exp":1000000000000000}`, `{"iat":99999999999999999999}`,
		`{"jti":"a\"b"}`, `{"jti":"\u00e9"}`, `{"sub":"é"}`, `{ "jti":"a"}`, `{"jti":"a"} `, `{}`, `{`, `{"x":1}`,
		`{"jti":"a",}`, `{"jti":"a"}{}`, `{"iat":{}}`, `{"iss":{"a":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var fast GrantClaims
		if !decodePlainGrantClaims(payload, &fast) {
			return
		}
		var ref GrantClaims
		if err := jose.DecodeClaims(payload, &ref); err != nil {
			t.Fatalf("%s: plain path accepted what encoding/json refuses: %v", payload, err)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("%s:\nplain %+v\n json %+v", payload, fast, ref)
		}
	})
}

// decodeGrantClaims answers non-plain payloads exactly as jose.DecodeClaims does,
// codes too.
func TestDecodeGrantClaimsFallback(t *testing.T) {
	for _, s := range []string{
		`{"iss":"a","exp":"soon"}`, `{"iss":5}`, `{"exp":-1}`, `{"iss":"a","ISS":"b"}`, `{"iss":"a","iss":"b"}`,
		`{"requested_cnf":{"jkt":"a","jkt":"b"}}`, `{"requested_cnf":{"JKT":"a"}}`, `{"aud":["a","b"],"iss":"a"}`,
		`{"aud":[1]}`, `{"scope":null,"iss":"a"}`, `[]`, `{"exp":1}x`, `{"iss":"a","extra":[1,2]}`,
	} {
		var got, want GrantClaims
		err := decodeGrantClaims([]byte(s), &got)
		wantErr := jose.DecodeClaims([]byte(s), &want)
		if errcode.CodeOf(err) != errcode.CodeOf(wantErr) || (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %+v %v, want %+v %v", s, got, err, want, wantErr)
		}
	}
}

// The claims AS A writes (as Grant.issue builds them) take the direct path (else it
// would be dead code), and decode to what it signed.
func TestIssuedGrantClaimsArePlain(t *testing.T) {
	key, _ := keys.Generate(keys.EdDSA)
	holder, _ := keys.Generate(keys.ES256)
	iat, exp := jose.NumericDate(1800000000), jose.NumericDate(1800000060)
	sc := "read write"
	issued := &GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: "https://as-a.example", Sub: "alice@a.example",
		Aud: jose.Audience{"https://as-b.example"}, Iat: &iat, Exp: &exp},
		Jti: newJTI(), Scope: &sc, RequestedCnf: &Confirmation{JKT: Thumbprint(holder.Public())}}
	raw, err := jose.SignClaims(GrantTyp, key, true, issued)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jose.Parse(raw, MaxAssertion)
	if err != nil {
		t.Fatal(err)
	}
	var g GrantClaims
	if !decodePlainGrantClaims(tok.Payload, &g) {
		t.Fatalf("an issued grant payload is not decoded directly: %s", tok.Payload)
	}
	if !reflect.DeepEqual(&g, issued) {
		t.Fatalf("decoded %+v, issued %+v", g, *issued)
	}
}
