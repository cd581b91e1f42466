package tts

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// untypedIDToken is an ID token as some identity providers sign it: no typ header.
func untypedIDToken(t *testing.T, k *keys.PrivateKey, aud string, now time.Time, typ string) string {
	t.Helper()
	h := map[string]string{"alg": k.Alg(), "kid": k.KID()}
	if typ != "" {
		h["typ"] = typ
	}
	hdr, _ := json.Marshal(h)
	pl, _ := json.Marshal(map[string]any{"iss": rsaIdP, "sub": "alice", "aud": aud, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(hdr) + "." + enc(pl)
	sig, err := k.Sign([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + enc(sig)
}

// RFC 8725 section 3.11 (explicit typing) holds for subject tokens too, unless an
// issuer is configured to allow untyped tokens, and then only with an audience check.
func TestTT1_4_UntypedIDTokensOnlyWhereConfigured(t *testing.T) {
	k, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(k.Public())
	now := time.Unix(1_800_000_000, 0)
	hopts := HandlerOptions{Now: func() time.Time { return now }}
	const aud = "tts-client"
	strict, _ := NewJWTHandler(TokenTypeIDToken, []JWTIssuer{{Issuer: rsaIdP, Keys: set, Scope: []string{"profile.read"}, Audiences: []string{aud}}}, hopts)
	lax, err := NewJWTHandler(TokenTypeIDToken, []JWTIssuer{{Issuer: rsaIdP, Keys: set, Scope: []string{"profile.read"}, Audiences: []string{aud}, AllowUntyped: true}}, hopts)
	if err != nil {
		t.Fatal(err)
	}
	untyped := untypedIDToken(t, k, aud, now, "")
	if _, err := strict.Validate(t.Context(), untyped, nil); errcode.CodeOf(err) != errcode.WrongType {
		t.Fatalf("untyped ID token, default: %v", err)
	}
	if s, err := lax.Validate(t.Context(), untyped, nil); err != nil || s.Sub != "alice" {
		t.Fatalf("untyped ID token, allowed: %v %v", s, err)
	}
	// A present typ must still be the expected one.
	if _, err := lax.Validate(t.Context(), untypedIDToken(t, k, aud, now, "at+jwt"), nil); errcode.CodeOf(err) != errcode.WrongType {
		t.Fatalf("typ at+jwt as an ID token: %v", err)
	}
	// The audience check is what keeps an untyped token of another kind out.
	if _, err := lax.Validate(t.Context(), untypedIDToken(t, k, "someone-else", now, ""), nil); errcode.CodeOf(err) != errcode.AudienceMismatch {
		t.Fatalf("untyped token for another audience: %v", err)
	}
	if _, err := NewJWTHandler(TokenTypeIDToken, []JWTIssuer{{Issuer: rsaIdP, Keys: set, AllowUntyped: true}}, hopts); err == nil {
		t.Fatal("AllowUntyped without audiences was accepted")
	}
	// Nowhere else: jose refuses an untyped token unless asked.
	tok, _ := jose.Parse(untyped, 0)
	if err := tok.CheckHeader(jose.Options{Typ: "JWT"}); errcode.CodeOf(err) != errcode.WrongType {
		t.Fatalf("jose without AllowUntyped: %v", err)
	}
}
