package netjson_test

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// reference is what DecodeClaims answers without its fast path: DecodeObject, errors
// mapped as DecodeClaims maps them.
func reference(payload []byte, v any) error {
	if err := netjson.DecodeObject(payload, v); err != nil {
		if c := errcode.CodeOf(err); c != errcode.Unmapped {
			return err
		}
		return errcode.Wrap(errcode.InvalidEncoding, err, "claims are not the expected JSON")
	}
	return nil
}

// fastMatchesReference fails when the fast path accepts payload but the reference
// path refuses it or decodes it to something else, and when DecodeClaims (fast path,
// then reference) answers otherwise than the reference alone, codes included.
func fastMatchesReference[T any](t *testing.T, payload []byte) {
	t.Helper()
	var fast, ref, whole T
	refErr := reference(payload, &ref)
	if netjson.DecodePlain(payload, &fast) {
		if refErr != nil {
			t.Fatalf("%s: fast path accepted what the reference refuses: %v", payload, refErr)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("%s:\nfast %+v\n ref %+v", payload, fast, ref)
		}
	} else if !reflect.ValueOf(fast).IsZero() {
		t.Fatalf("%s: the fast path gave up but left %+v", payload, fast)
	}
	err := netjson.DecodeClaims(payload, &whole)
	if (err == nil) != (refErr == nil) || errcode.CodeOf(err) != errcode.CodeOf(refErr) || !reflect.DeepEqual(whole, ref) {
		t.Fatalf("%s: DecodeClaims %+v %v, reference %+v %v", payload, whole, err, ref, refErr)
	}
}

// The fast path decodes a WIT's plain claims as the reference does, and leaves all
// else to it. (The seeds are those of the WIT's former own fast path.)
func FuzzFastPathWIT(f *testing.F) {
	for _, s := range []string{
		`{"iss":"wimse://example.org","sub":"wimse://example.org/agent/a","iat":1800000000,"exp":1800003600,"jti":"Zm9v","cnf":{"jwk":{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}}}`,
		`{"sub":"s","nbf":0,"exp":1,"cnf":{}}`, `{"cnf":{"jwk":"x"}}`, `{"cnf":{"jwk":1}}`, `{"cnf":{"jwk":{}}}`,
		`{"cnf":{"jwk":{"a":{"b":1}}}}`, `{"cnf":{"jwk":{"a":"b","a":"c"}}}`, `{"cnf":{"jwk":{},"jwk":{}}}`,
		`{"cnf":{"JWK":{}}}`, `{"cnf":{"jkt":"x"}}`, `{"cnf":"x"}`, `{"cnf":1}`, `{"cnf":null}`, `{"iss":1}`,
		`{"sub":"a","sub":"b"}`, `{"SUB":"a"}`, `{"exp":"1"}`, `{"exp":01}`, `{"exp":1.5}`, `{"exp":-1}`,
		`{"exp":9007199254740993}`, `{"exp":999999999999999}`, `{"exp":1000000000000000}`, `{"iat":99999999999999999999}`,
		`{"jti":"a\"b"}`, `{"jti":"\u00e9"}`, `{"jti":"é"}`, `{ "jti":"a"}`, `{"jti":"a"} `, `{}`, `{`, `{"x":1}`,
		`{"jti":"a",}`, `{"jti":"a"}{}`, `{"iat":{}}`, `{"iss":{"a":1}}`,
		`{"sub":"a","exp":"soon"}`, `{"sub":5}`, `{"sub":"a","SUB":"b"}`, `{"cnf":null,"sub":"a"}`, `{"cnf":{"jwk": {}}}`,
		`[]`, `{"exp":1}x`, `{"sub":"a","extra":[1,2]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) { fastMatchesReference[wit.Claims](t, payload) })
}

// The same for a WPT's claims.
func FuzzFastPathWPT(f *testing.F) {
	for _, s := range []string{
		`{"aud":"https://tool.a.example/invoke","exp":1800000060,"jti":"Zm9vYmFy","wth":"abc-_123"}`,
		`{"aud":"a","exp":0,"jti":"j","wth":"w","ath":"a","tth":"t","dth":"d"}`,
		`{"aud":"a","exp":1,"jti":"j","wth":"w","oth":{"x":"y"}}`,
		`{"aud":["a"],"exp":1}`, `{"aud":"a","aud":"b"}`, `{"AUD":"a"}`, `{"exp":"1"}`, `{"exp":01}`, `{"exp":1.5}`,
		`{"exp":-1}`, `{"exp":9007199254740993}`, `{"exp":999999999999999}`, `{"exp":1000000000000000}`, `{"exp":99999999999999999999}`, `{"jti":null}`, `{"jti":"a\"b"}`,
		`{"jti":"\u00e9"}`, `{"jti":"é"}`, `{ "jti":"a"}`, `{"jti":"a"} `, `{}`, `{`, `{"x":1}`, `{"jti":"a",}`, `{"jti":"a"}{}`,
		`{"exp":1e3}`, `{"wth":""}`, `{"":"x"}`,
		`{"aud":"a","exp":"soon","jti":"j","wth":"w"}`, `{"aud":5}`, `{"aud":["a","b"],"exp":1,"jti":"j","wth":"w","oth":{"x":"y"}}`,
		`{"jti":"a","JTI":"b"}`, `[]`, `{"exp":1}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) { fastMatchesReference[wpt.Claims](t, payload) })
}

// The same for a JWT authorization grant's claims (promoted jose.RegisteredClaims).
func FuzzFastPathGrant(f *testing.F) {
	for _, s := range []string{
		`{"iss":"https://as-a.example","sub":"alice@a.example","aud":"https://as-b.example","iat":1800000000,"exp":1800000060,"jti":"Zm9v","scope":"read write","requested_cnf":{"jkt":"abc-_"}}`,
		`{"iss":"a","nbf":0,"exp":1,"requested_cnf":{}}`, `{"requested_cnf":{"jkt":1}}`, `{"requested_cnf":{"jkt":"a","jkt":"b"}}`,
		`{"requested_cnf":{"JKT":"a"}}`, `{"requested_cnf":{"x":"a"}}`, `{"requested_cnf":{"jkt":{}}}`, `{"requested_cnf":"x"}`,
		`{"requested_cnf":null}`, `{"scope":""}`, `{"scope":1}`, `{"scope":null}`, `{"aud":["a"]}`, `{"aud":1}`, `{"aud":{}}`,
		`{"iss":"a","iss":"b"}`, `{"ISS":"a"}`, `{"Scope":"a"}`, `{"exp":"1"}`, `{"exp":01}`, `{"exp":1.5}`, `{"exp":-1}`,
		`{"exp":9007199254740993}`, `{"exp":999999999999999}`, `{"exp":1000000000000000}`, `{"iat":99999999999999999999}`,
		`{"jti":"a\"b"}`, `{"jti":"\u00e9"}`, `{"sub":"é"}`, `{ "jti":"a"}`, `{"jti":"a"} `, `{}`, `{`, `{"x":1}`,
		`{"jti":"a",}`, `{"jti":"a"}{}`, `{"iat":{}}`, `{"iss":{"a":1}}`,
		`{"iss":"a","exp":"soon"}`, `{"iss":5}`, `{"aud":["a","b"],"iss":"a"}`, `{"aud":[1]}`, `{"scope":null,"iss":"a"}`,
		`[]`, `{"exp":1}x`, `{"iss":"a","extra":[1,2]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) { fastMatchesReference[chaining.GrantClaims](t, payload) })
}

// counter decodes itself and declares its plain form as jose.NumericDate does, but
// is an int32: 15 digits do not fit, so the plan must not read it.
type counter int32

func (c *counter) UnmarshalJSON(b []byte) error {
	n, err := strconv.ParseInt(string(b), 10, 32)
	*c = counter(n)
	return err
}
func (counter) PlainJSONForm() netjson.PlainForm { return netjson.PlainInteger }

// unplanned decodes itself without declaring a plain form: never read directly.
type unplanned string

func (u *unplanned) UnmarshalJSON(b []byte) error { *u = unplanned("custom:" + string(b)); return nil }

type kinds struct {
	S     string          `json:"s"`
	P     *string         `json:"p,omitempty"`
	R     json.RawMessage `json:"r"`
	N     counter         `json:"n"`
	NP    *counter        `json:"np"`
	A     jose.Audience   `json:"a"`
	U     unplanned       `json:"u"`
	Q     string          `json:"q,string"`
	In    inner           `json:"in"`
	InP   *inner          `json:"inp"`
	M     map[string]string
	Named string
	inner
	*viaPointer
}

// viaPointer's fields are promoted through a pointer: known, never read directly.
type viaPointer struct {
	PE string `json:"pe"`
}

type inner struct {
	X  string            `json:"x"`
	T  *jose.NumericDate `json:"t"`
	In *inner            `json:"deeper"`
}

// Every kind of member the plan reads (and some it must not) decodes as the reference
// decodes it: strings, pointers held in one allocation, raw text, declared plain forms
// (an int32 one that overflows included), nested and embedded structs.
func FuzzFastPathAllKinds(f *testing.F) {
	for _, s := range []string{
		`{"s":"a","p":"b","r":{"k":"v"},"n":7,"np":8,"a":"aud","in":{"x":"y","t":1},"inp":{"deeper":{"x":"z"}},"x":"promoted","Named":"n"}`,
		`{"n":99999999999}`, `{"np":0}`, `{"u":"x"}`, `{"q":"\"1\""}`, `{"M":{}}`, `{"named":"x"}`, `{"r":"s"}`, `{"r":5}`,
		`{"in":{"deeper":{"deeper":{"deeper":{"x":"d"}}}}}`, `{"r":{"a":{"b":{"c":{"d":{}}}}}}`, `{"x":"a","in":{"x":"b"}}`,
		`{"a":"x","a":"y"}`, `{"inp":{},"inp":{}}`, `{"t":1}`,
		`{"unknown":"x","s":"a"}`, `{"zz":{"a":{"b":1}},"s":"a"}`, `{"zz":[1],"s":"a"}`, `{"S":"a"}`, `{"m":{}}`,
		`{"x1":1,"x1":2,"s":"a"}`, `{"in":{"y":"z","x":"a"}}`, `{"in":{"X":"a"}}`, `{"zz":null}`, `{"pe":"x"}`, `{"s":"a","pe":"x"}`, `{"PE":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) { fastMatchesReference[kinds](t, payload) })
}

// The claims each issuer of the project writes take the fast path (else it would be
// dead code for that kind), and decode to what was signed.
func TestIssuedClaimsTakeTheFastPath(t *testing.T) {
	for _, alg := range []string{keys.ES256, keys.EdDSA} {
		signer, _ := keys.Generate(alg)
		holder, _ := keys.Generate(alg)
		iss := wit.NewIssuer("https://wit-issuer.a.example", func() *keys.PrivateKey { return signer })
		raw, issued, err := iss.Issue(identifier.MustParse("wimse://a.example/agent/a"), holder.Public(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var c wit.Claims
		if payload := payloadOf(t, raw); !netjson.DecodePlain(payload, &c) || !reflect.DeepEqual(&c, issued) {
			t.Fatalf("%s: an issued WIT payload %s decodes directly to %+v, issued %+v", alg, payload, c, *issued)
		}

		txn := "txn.token.value"
		proof, err := wpt.New(holder, raw, "https://tool.a.example/invoke", wpt.Bound{TxnToken: &txn})
		if err != nil {
			t.Fatal(err)
		}
		var p wpt.Claims
		if payload := payloadOf(t, proof); !netjson.DecodePlain(payload, &p) || p.Tth == "" || len(p.Aud) != 1 {
			t.Fatalf("%s: a WPT payload %s is not decoded directly: %+v", alg, payload, p)
		}
	}
	key, _ := keys.Generate(keys.EdDSA)
	holder, _ := keys.Generate(keys.ES256)
	iat, exp := jose.NumericDate(1800000000), jose.NumericDate(1800000060)
	sc := "read write"
	issued := &chaining.GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: "https://as-a.example", Sub: "alice@a.example",
		Aud: jose.Audience{"https://as-b.example"}, Iat: &iat, Exp: &exp},
		Jti: "Zm9vYmFy", Scope: &sc, RequestedCnf: &chaining.Confirmation{JKT: chaining.Thumbprint(holder.Public())}}
	raw, err := jose.SignClaims(chaining.GrantTyp, key, true, issued)
	if err != nil {
		t.Fatal(err)
	}
	var g chaining.GrantClaims
	if payload := payloadOf(t, raw); !netjson.DecodePlain(payload, &g) || !reflect.DeepEqual(&g, issued) {
		t.Fatalf("an issued grant payload %s decodes directly to %+v, issued %+v", payload, g, *issued)
	}

	// An access token of AS B, read whole and as the TTS reads a subject token (its
	// registered claims and scope: the other members are passed over, as the reference
	// path ignores them).
	at := &chaining.AccessTokenClaims{Iss: "https://as-b.example", Sub: "alice@a.example", Aud: jose.Audience{"https://tool.b.example"},
		ClientID: "wimse://a.example/agent/a", Scope: "read", Iat: &iat, Exp: &exp, Jti: "YmFy", Cnf: &chaining.Confirmation{JKT: "abc"}}
	raw, err = jose.SignClaims("at+jwt", key, true, at)
	if err != nil {
		t.Fatal(err)
	}
	var a chaining.AccessTokenClaims
	if payload := payloadOf(t, raw); !netjson.DecodePlain(payload, &a) || !reflect.DeepEqual(&a, at) {
		t.Fatalf("an access token payload %s decodes directly to %+v, issued %+v", payload, a, *at)
	}
	var sub struct {
		jose.RegisteredClaims
		Scope *string `json:"scope"`
	}
	if payload := payloadOf(t, raw); !netjson.DecodePlain(payload, &sub) || *sub.Scope != "read" || sub.Sub != at.Sub {
		t.Fatalf("an access token payload %s as a subject token: %+v", payload, sub)
	}
}

func payloadOf(t *testing.T, raw string) []byte {
	t.Helper()
	tok, err := jose.Parse(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Payload
}

// The fast path of DecodeMembers gives what encoding/json gives into a
// map[string]json.RawMessage. (Moved from package oauth, whose request parameters
// are decoded here.)
func FuzzPlainMembers(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"dlg":"7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37"}`, `{"a":1,"b":"c"}`, `{"a":"b","a":"c"}`, `{"a":{"b":1}}`,
		`{"a":"\u0041"}`, `{"":1}`, `{"a":01}`, `{"a":"b"} `,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := netjson.PlainMembers(s)
		if !ok {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &want); err != nil || want == nil {
			t.Fatalf("%q: plain path accepted what encoding/json refuses: %v", s, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nplain %q\n json %q", s, got, want)
		}
	})
}

func TestFirstDuplicate(t *testing.T) {
	for s, want := range map[string]string{`{}`: "", `[]`: "", `1`: "", `{"a":1,"a":2}`: "a", `{"a":{"b":[{"c":1,"c":1}]}}`: "c", `[{"x":1},{"x":1}]`: "", `{"a":1,"\u0061":2}`: "a"} {
		got, err := netjson.FirstDuplicate(s)
		if err != nil || got != want {
			t.Fatalf("%s: %q %v, want %q", s, got, err, want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":1}x`, `{"a":}`} {
		if _, err := netjson.FirstDuplicate(bad); err == nil {
			t.Fatalf("%q: no error", bad)
		}
	}
}

// Payloads of the plain form each issuer writes, for the benchmarks.
const (
	benchWIT   = `{"iss":"https://wit-issuer.a.example","sub":"wimse://a.example/agent/a","iat":1800000000,"exp":1800003600,"jti":"Zm9vYmFyYmF6","cnf":{"jwk":{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","alg":"EdDSA"}}}`
	benchWPT   = `{"aud":"https://tool.a.example/invoke","exp":1800000060,"jti":"Zm9vYmFy","wth":"abc-_123abc-_123abc-_123abc-_123abc-_12345","tth":"abc-_123abc-_123abc-_123abc-_123abc-_12345"}`
	benchGrant = `{"iss":"https://as-a.example","sub":"alice@a.example","aud":"https://as-b.example","iat":1800000000,"exp":1800000060,"jti":"Zm9v","scope":"read write","requested_cnf":{"jkt":"abc-_123abc-_123abc-_123abc-_123abc-_12345"}}`
)

func benchDecode[T any](b *testing.B, payload string) {
	p := []byte(payload)
	b.ReportAllocs()
	for b.Loop() {
		var c T
		if err := netjson.DecodeClaims(p, &c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeClaimsWIT(b *testing.B)   { benchDecode[wit.Claims](b, benchWIT) }
func BenchmarkDecodeClaimsWPT(b *testing.B)   { benchDecode[wpt.Claims](b, benchWPT) }
func BenchmarkDecodeClaimsGrant(b *testing.B) { benchDecode[chaining.GrantClaims](b, benchGrant) }

// The fast path allocates what the hand-written decoder of each kind did: the claims
// value (here, as there, it escapes as an any), the one copy of the text, one block for
// the values pointer members point to, and a copy of each json.RawMessage.
func TestFastPathAllocations(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload string
		decode  func([]byte) error
		max     float64
	}{
		{"WIT", benchWIT, func(p []byte) error { var c wit.Claims; return netjson.DecodeClaims(p, &c) }, 4},
		{"WPT", benchWPT, func(p []byte) error { var c wpt.Claims; return netjson.DecodeClaims(p, &c) }, 3},
		{"grant", benchGrant, func(p []byte) error { var c chaining.GrantClaims; return netjson.DecodeClaims(p, &c) }, 3},
	} {
		p := []byte(tc.payload)
		if err := tc.decode(p); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = tc.decode(p) }); n > tc.max {
			t.Errorf("%s: %v allocations per decode, want at most %v", tc.name, n, tc.max)
		}
	}
}
