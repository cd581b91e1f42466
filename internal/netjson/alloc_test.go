package netjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// benchNum decodes itself, as jose.NumericDate does (the name check does not enter it, and it declares no PlainForm).
type benchNum int64

func (n *benchNum) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, (*int64)(n)) }

// benchClaims has the shape of a WIT's claims: strings, custom-decoded times, and a
// nested object holding a json.RawMessage.
type benchClaims struct {
	Iss string    `json:"iss,omitempty"`
	Sub string    `json:"sub"`
	Iat *benchNum `json:"iat,omitempty"`
	Exp *benchNum `json:"exp"`
	Jti string    `json:"jti,omitempty"`
	Cnf *struct {
		JWK json.RawMessage `json:"jwk"`
	} `json:"cnf"`
}

const benchPayload = `{"iss":"https://issuer.example","sub":"wimse://example.org/agent/a","iat":1764600000,"exp":1764603600,"jti":"0123456789abcdef","cnf":{"jwk":{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}}`

// checkNames runs on every token a service reads: it should not allocate for a
// token of the plain shape the project writes.
func TestCheckNamesDoesNotAllocate(t *testing.T) {
	var c benchClaims
	data := []byte(benchPayload)
	if err := checkNames(data, &c); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = checkNames(data, &c) }); n != 0 {
		t.Errorf("checkNames allocates %v times per run, want 0", n)
	}
}

func BenchmarkCheckNames(b *testing.B) {
	var c benchClaims
	data := []byte(benchPayload)
	b.ReportAllocs()
	for b.Loop() {
		if err := checkNames(data, &c); err != nil {
			b.Fatal(err)
		}
	}
}

// A struct of more than 64 fields keeps the duplicate check past the bit set (the
// fields beyond it are tracked by name), for raw and escaped names alike.
func TestDuplicateBeyondSixtyFourFields(t *testing.T) {
	var sf []reflect.StructField
	for i := range 70 {
		sf = append(sf, reflect.StructField{
			Name: fmt.Sprintf("F%d", i),
			Type: reflect.TypeFor[string](),
			Tag:  reflect.StructTag(fmt.Sprintf(`json:"f%d"`, i)),
		})
	}
	v := reflect.New(reflect.StructOf(sf)).Interface()
	var all []string
	for i := range 70 {
		all = append(all, fmt.Sprintf(`"f%d":"x"`, i))
	}
	whole := "{" + strings.Join(all, ",") + "}"
	if err := DecodeObject([]byte(whole), v); err != nil {
		t.Fatalf("70 distinct members: %v", err)
	}
	for _, in := range []string{
		`{"f1":"a","f69":"b","f69":"c"}`,
		`{"f69":"b","f\u0036\u0039":"c"}`,
		`{"f0":"b","\u0066\u0030":"c"}`,
	} {
		var de *DuplicateError
		if err := DecodeObject([]byte(in), v); !errors.As(err, &de) {
			t.Errorf("%s: %v, want a DuplicateError", in, err)
		}
	}
	var ne *NameError
	if err := DecodeObject([]byte(`{"F69":"x"}`), v); !errors.As(err, &ne) || ne.Field != "f69" {
		t.Errorf(`{"F69":"x"}: %v, want a NameError for f69`, err)
	}
}
