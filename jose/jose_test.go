package jose_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

var b64 = base64.RawURLEncoding

func set(t testing.TB, ks ...*keys.PublicKey) keys.KeySet {
	t.Helper()
	s, err := keys.NewStaticSet(ks...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// handMade signs an arbitrary header with key (nil key: empty signature part "x").
func handMade(t testing.TB, header map[string]any, payload string, key *keys.PrivateKey) string {
	t.Helper()
	hb, _ := json.Marshal(header)
	in := b64.EncodeToString(hb) + "." + b64.EncodeToString([]byte(payload))
	if key == nil {
		return in + "." + b64.EncodeToString([]byte("sig"))
	}
	sig, err := key.Sign([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + b64.EncodeToString(sig)
}

func wantCode(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	if got := errcode.CodeOf(err); got != code {
		t.Fatalf("got %v (%v), want %s", got, err, code)
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	for _, alg := range []string{keys.ES256, keys.EdDSA, keys.Ed25519} {
		k := testkit.NewKey(t, alg)
		tok, err := jose.Sign("wit+jwt", k, true, []byte(`{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, set(t, k.Public()))
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		if string(got.Payload) != `{"a":1}` || got.Kid != k.KID() || got.Alg != alg {
			t.Fatalf("%s: unexpected token %+v", alg, got)
		}
	}
}

// RFC 8725 section 3.11 / wimse.md 2.5 step 3: explicit typing, compared
// case-insensitively, with or without "application/".
func TestRFC8725Sec3_11_ExplicitTypeRequired(t *testing.T) {
	k := testkit.NewKey(t, keys.ES256)
	ks := set(t, k.Public())
	for typ, ok := range map[string]bool{
		"wit+jwt": true, "WIT+JWT": true, "application/wit+jwt": true, "Application/Wit+Jwt": true,
		"jwt": false, "JWT": false, "wpt+jwt": false, "application/": false, "": false, "wit+jwt ": false,
	} {
		tok := handMade(t, map[string]any{"typ": typ, "alg": "ES256", "kid": k.KID()}, "{}", k)
		_, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, ks)
		if ok && err != nil {
			t.Errorf("typ %q rejected: %v", typ, err)
		}
		if !ok {
			if errcode.CodeOf(err) != errcode.WrongType {
				t.Errorf("typ %q: got %v, want wrong_type", typ, err)
			}
		}
	}
	// No typ at all.
	tok := handMade(t, map[string]any{"alg": "ES256", "kid": k.KID()}, "{}", k)
	_, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, ks)
	wantCode(t, err, errcode.WrongType)
}

// creds-02 section 5.1 / wimse.md 2.5 step 4: alg "none" MUST NOT be used.
func TestCreds02Sec5_1_AlgNoneRejected(t *testing.T) {
	k := testkit.NewKey(t, keys.ES256)
	for _, alg := range []string{"none", "None", "NONE"} {
		hb, _ := json.Marshal(map[string]any{"typ": "wit+jwt", "alg": alg, "kid": k.KID()})
		tok := b64.EncodeToString(hb) + "." + b64.EncodeToString([]byte("{}")) + "."
		_, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, set(t, k.Public()))
		if err == nil {
			t.Fatalf("alg %q accepted", alg)
		}
		// With a non-empty signature part too.
		tok += "AAAA"
		_, err = jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, set(t, k.Public()))
		wantCode(t, err, errcode.UnsupportedAlg)
	}
}

// wimse.md 2.5 step 4: never a MAC. The classic attack signs HS256 with the public key
// as the HMAC secret; it must fail before any signature check.
func TestCreds02Sec5_1_HMACWithPublicKeyAsSecretRejected(t *testing.T) {
	k := testkit.NewKey(t, keys.ES256)
	pubJSON, _ := json.Marshal(k.Public())
	for _, alg := range []string{"HS256", "HS384", "HS512"} {
		hb, _ := json.Marshal(map[string]any{"typ": "wit+jwt", "alg": alg, "kid": k.KID()})
		in := b64.EncodeToString(hb) + "." + b64.EncodeToString([]byte(`{"sub":"x"}`))
		for _, secret := range [][]byte{pubJSON, []byte(k.Public().Thumbprint())} {
			m := hmac.New(sha256.New, secret)
			m.Write([]byte(in))
			tok := in + "." + b64.EncodeToString(m.Sum(nil))
			_, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, set(t, k.Public()))
			wantCode(t, err, errcode.UnsupportedAlg)
		}
	}
}

// wimse.md WIT-1: keys never come from the token. A token that carries its own key in
// jwk (or points at one with jku/x5u/x5c) is refused even though that key signed it.
func TestCreds02Sec3_KeyHeadersRejected(t *testing.T) {
	trusted := testkit.NewKey(t, keys.ES256)
	attacker := testkit.NewKey(t, keys.ES256)
	attackerJWK, _ := json.Marshal(attacker.Public())
	for name, val := range map[string]any{
		"jwk": json.RawMessage(attackerJWK), "jku": "https://attacker.example/jwks", "x5u": "https://attacker.example/cert", "x5c": []string{"MIIB"},
	} {
		tok := handMade(t, map[string]any{"typ": "wit+jwt", "alg": "ES256", name: val}, "{}", attacker)
		_, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, set(t, trusted.Public()))
		wantCode(t, err, errcode.ForbiddenHeader)
	}
}

func TestCritRejected(t *testing.T) {
	k := testkit.NewKey(t, keys.EdDSA)
	tok := handMade(t, map[string]any{"typ": "wit+jwt", "alg": "EdDSA", "crit": []string{"exp"}, "exp": 1}, "{}", k)
	_, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, set(t, k.Public()))
	wantCode(t, err, errcode.UnsupportedCritical)
}

// Key selection is by kid only, from trust configuration.
func TestKeyChosenByKidFromTrustOnly(t *testing.T) {
	a, b := testkit.NewKey(t, keys.ES256), testkit.NewKey(t, keys.ES256)
	ks := set(t, a.Public(), b.Public())
	tok, _ := jose.Sign("wit+jwt", a, true, []byte("{}"))
	if _, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, ks); err != nil {
		t.Fatal(err)
	}
	// Unknown kid.
	tok = handMade(t, map[string]any{"typ": "wit+jwt", "alg": "ES256", "kid": "other"}, "{}", a)
	_, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, ks)
	wantCode(t, err, errcode.UnknownKey)
	// No kid while the set has two keys: ambiguous, refused.
	tok, _ = jose.Sign("wit+jwt", a, false, []byte("{}"))
	_, err = jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, ks)
	wantCode(t, err, errcode.UnknownKey)
	// Kid of b, signed by a.
	tok = handMade(t, map[string]any{"typ": "wit+jwt", "alg": "ES256", "kid": b.KID()}, "{}", a)
	_, err = jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, ks)
	wantCode(t, err, errcode.InvalidSignature)
}

// Exactly one algorithm per key: an EdDSA token is never checked with an ES256 key,
// and the allow-list is enforced.
func TestAlgTiedToKey(t *testing.T) {
	ec := testkit.NewKey(t, keys.ES256)
	ed := testkit.NewKey(t, keys.EdDSA)
	tok := handMade(t, map[string]any{"typ": "wit+jwt", "alg": "EdDSA", "kid": ec.KID()}, "{}", ed)
	_, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, set(t, ec.Public()))
	wantCode(t, err, errcode.UnsupportedAlg)

	tok, _ = jose.Sign("wit+jwt", ed, true, []byte("{}"))
	_, err = jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt", Algs: []string{"ES256"}}, set(t, ed.Public()))
	wantCode(t, err, errcode.UnsupportedAlg)

	for _, alg := range []string{"RS256", "PS256", "ES384", "A128KW", "dir"} {
		tok := handMade(t, map[string]any{"typ": "wit+jwt", "alg": alg, "kid": ec.KID()}, "{}", ec)
		_, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, set(t, ec.Public()))
		wantCode(t, err, errcode.UnsupportedAlg)
	}
}

// EdDSA and Ed25519 name one algorithm; with ExactAlg (the WPT rule) the names must match.
func TestEd25519AlgNames(t *testing.T) {
	k := testkit.NewKey(t, keys.EdDSA)
	renamed := handMade(t, map[string]any{"typ": "wpt+jwt", "alg": "Ed25519"}, "{}", k)
	if _, err := jose.Verify(context.Background(), renamed, jose.Options{Typ: "wpt+jwt"}, k.Public()); err != nil {
		t.Fatalf("Ed25519 name refused for an EdDSA key: %v", err)
	}
	_, err := jose.Verify(context.Background(), renamed, jose.Options{Typ: "wpt+jwt", ExactAlg: true}, k.Public())
	wantCode(t, err, errcode.UnsupportedAlg)
}

func TestMalformedAndBounded(t *testing.T) {
	k := testkit.NewKey(t, keys.ES256)
	good, _ := jose.Sign("wit+jwt", k, true, []byte("{}"))
	parts := strings.Split(good, ".")
	cases := map[string]struct {
		tok  string
		code errcode.Code
	}{
		"two parts":        {parts[0] + "." + parts[1], errcode.MalformedToken},
		"four parts":       {good + ".x", errcode.MalformedToken},
		"empty signature":  {parts[0] + "." + parts[1] + ".", errcode.MalformedToken},
		"padding":          {parts[0] + "=." + parts[1] + "." + parts[2], errcode.InvalidEncoding},
		"std alphabet":     {parts[0] + "." + parts[1] + "." + strings.NewReplacer("-", "+", "_", "/").Replace(parts[2]) + "+", errcode.InvalidEncoding},
		"header not JSON":  {b64.EncodeToString([]byte("nope")) + "." + parts[1] + "." + parts[2], errcode.InvalidEncoding},
		"header array":     {b64.EncodeToString([]byte("[]")) + "." + parts[1] + "." + parts[2], errcode.InvalidEncoding},
		"duplicate member": {b64.EncodeToString([]byte(`{"typ":"wit+jwt","alg":"ES256","typ":"jwt"}`)) + "." + parts[1] + "." + parts[2], errcode.InvalidEncoding},
		"typ not string":   {b64.EncodeToString([]byte(`{"typ":1,"alg":"ES256"}`)) + "." + parts[1] + "." + parts[2], errcode.InvalidEncoding},
		// RFC 7515 section 5.2: any member named twice, escaped spellings included.
		"duplicate escaped": {b64.EncodeToString([]byte(`{"typ":"wit+jwt","alg":"ES256","\u0061lg":"EdDSA"}`)) + "." + parts[1] + "." + parts[2], errcode.InvalidEncoding},
		"duplicate unread":  {b64.EncodeToString([]byte(`{"typ":"wit+jwt","alg":"ES256","x5t":"a","x5t":"b"}`)) + "." + parts[1] + "." + parts[2], errcode.InvalidEncoding},
		"too long":          {good + strings.Repeat("A", jose.DefaultMaxTokenSize), errcode.TokenTooLong},
	}
	for name, c := range cases {
		_, err := jose.Verify(context.Background(), c.tok, jose.Options{Typ: "wit+jwt"}, set(t, k.Public()))
		if got := errcode.CodeOf(err); got != c.code {
			t.Errorf("%s: got %v (%v), want %s", name, got, err, c.code)
		}
	}
}

func FuzzParse(f *testing.F) {
	k, _ := keys.Generate(keys.ES256)
	good, _ := jose.Sign("wit+jwt", k, true, []byte(`{"sub":"wimse://a.example/x"}`))
	f.Add(good)
	f.Add("a.b.c")
	f.Add("..")
	f.Add(b64.EncodeToString([]byte(`{"typ":"wit+jwt","alg":"ES256","alg":"x"}`)) + ".e30.AA")
	ks, _ := keys.NewStaticSet(k.Public())
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := jose.Verify(context.Background(), s, jose.Options{Typ: "wit+jwt"}, ks)
		if err == nil && tok == nil {
			t.Fatal("nil token without error")
		}
		if err != nil && errcode.CodeOf(err) == errcode.Unmapped {
			t.Fatalf("rejection without a code: %v", err)
		}
		if err == nil && s != good {
			// Only a genuinely signed token verifies; the fuzzer cannot forge ES256.
			if _, err2 := jose.Parse(s, 0); err2 != nil {
				t.Fatal("verified but does not parse")
			}
		}
	})
}

// RFC 9864 section 2: "Ed25519" is an alias of "EdDSA" for Ed25519 keys only. On a
// P-256 key it is refused, and so is "Ed448" on an Ed25519 key, before any signature
// is checked.
func TestRFC9864Sec2_Ed25519NameOnlyForEd25519Keys(t *testing.T) {
	ec, ed := testkit.NewKey(t, keys.ES256), testkit.NewKey(t, keys.EdDSA)
	onP256 := handMade(t, map[string]any{"typ": "wit+jwt", "alg": "Ed25519", "kid": ec.KID()}, "{}", ed)
	_, err := jose.Verify(context.Background(), onP256, jose.Options{Typ: "wit+jwt"}, set(t, ec.Public()))
	wantCode(t, err, errcode.UnsupportedAlg)
	ed448 := handMade(t, map[string]any{"typ": "wit+jwt", "alg": "Ed448", "kid": ed.KID()}, "{}", ed)
	_, err = jose.Verify(context.Background(), ed448, jose.Options{Typ: "wit+jwt"}, set(t, ed.Public()))
	wantCode(t, err, errcode.UnsupportedAlg)
	tok, err := jose.Parse(ed448, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, tok.VerifyWith(ed.Public(), false), errcode.UnsupportedAlg)
}

// RFC 9864 section 2: "Ed25519" is the fully-specified name of EdDSA over Ed25519, the
// algorithm RFC 8037 polymorphically names "EdDSA". An allow-list naming either admits
// a token under the other name for an Ed25519 key, as the key rule (VerifyWith) does;
// it admits no other algorithm (Ed448, ES256), and the key must still be Ed25519.
func TestRFC9864Sec2_AllowListAdmitsBothNamesOfEd25519(t *testing.T) {
	ed, ec := testkit.NewKey(t, keys.EdDSA), testkit.NewKey(t, keys.ES256)
	ctx := context.Background()
	for _, c := range []struct{ allowed, alg string }{
		{keys.EdDSA, keys.Ed25519},
		{keys.Ed25519, keys.EdDSA},
		{keys.EdDSA, keys.EdDSA},
		{keys.Ed25519, keys.Ed25519},
	} {
		tok := handMade(t, map[string]any{"typ": "wit+jwt", "alg": c.alg, "kid": ed.KID()}, "{}", ed)
		if _, err := jose.Verify(ctx, tok, jose.Options{Typ: "wit+jwt", Algs: []string{c.allowed}}, set(t, ed.Public())); err != nil {
			t.Fatalf("Algs [%s] refused alg %s on an Ed25519 key: %v", c.allowed, c.alg, err)
		}
	}
	for _, allowed := range []string{keys.EdDSA, keys.Ed25519} {
		ed448 := handMade(t, map[string]any{"typ": "wit+jwt", "alg": "Ed448", "kid": ed.KID()}, "{}", ed)
		_, err := jose.Verify(ctx, ed448, jose.Options{Typ: "wit+jwt", Algs: []string{allowed}}, set(t, ed.Public()))
		wantCode(t, err, errcode.UnsupportedAlg)
		es := handMade(t, map[string]any{"typ": "wit+jwt", "alg": keys.ES256, "kid": ec.KID()}, "{}", ec)
		_, err = jose.Verify(ctx, es, jose.Options{Typ: "wit+jwt", Algs: []string{allowed}}, set(t, ec.Public()))
		wantCode(t, err, errcode.UnsupportedAlg)
		onP256 := handMade(t, map[string]any{"typ": "wit+jwt", "alg": keys.Ed25519, "kid": ec.KID()}, "{}", ed)
		_, err = jose.Verify(ctx, onP256, jose.Options{Typ: "wit+jwt", Algs: []string{allowed}}, set(t, ec.Public()))
		wantCode(t, err, errcode.UnsupportedAlg)
	}
	// An ES256-only list admits neither name of Ed25519.
	tok := handMade(t, map[string]any{"typ": "wit+jwt", "alg": keys.Ed25519, "kid": ed.KID()}, "{}", ed)
	_, err := jose.Verify(ctx, tok, jose.Options{Typ: "wit+jwt", Algs: []string{keys.ES256}}, set(t, ed.Public()))
	wantCode(t, err, errcode.UnsupportedAlg)
}

// Issue 24 point 4: a compact JWS of three parts with one of them empty is reported as
// such, not as a token that lacks parts: an empty signature (an unsigned token) says so.
func TestIssue24EmptyPartNamed(t *testing.T) {
	k := testkit.NewKey(t, keys.ES256)
	good, _ := jose.Sign("wit+jwt", k, true, []byte("{}"))
	parts := strings.Split(good, ".")
	for tok, want := range map[string]string{
		parts[0] + "." + parts[1] + ".": "compact JWS with an empty signature (unsigned)",
		"." + parts[1] + "." + parts[2]: "compact JWS with an empty header",
		parts[0] + "." + parts[1]:       "not a compact JWS of three parts",
		good + ".x":                     "not a compact JWS of three parts",
	} {
		_, err := jose.Parse(tok, 0)
		if errcode.CodeOf(err) != errcode.MalformedToken || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q...: %v, want %q", tok, err, want)
		}
	}
}
