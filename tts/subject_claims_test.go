package tts

import (
	"fmt"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// The JWT subject token's claims (jose.RegisteredClaims embedded, and scope) decode as
// direct fields would: a registered claim named twice, or spelled in another case, is
// invalid_encoding (RFC 7519 section 4), and jti, which this handler does not check, is
// not looked at, whatever its type or number of copies.
func TestTT1_4_JWTSubjectClaimNames(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := keys.NewStaticSet(k.Public())
	h, err := NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: idpIss, Keys: set}}, HandlerOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	exp := now.Add(time.Hour).Unix()
	for _, tc := range []struct {
		payload string
		want    errcode.Code // "" accepted
	}{
		{fmt.Sprintf(`{"iss":%q,"sub":"alice","aud":"x","iat":%d,"exp":%d,"scope":"trip.read"}`, idpIss, now.Unix(), exp), ""},
		{fmt.Sprintf(`{"iss":%q,"sub":"alice","exp":%d,"jti":7,"jti":[1]}`, idpIss, exp), ""},
		{fmt.Sprintf(`{"iss":%q,"sub":"alice","sub":"mallory","exp":%d}`, idpIss, exp), errcode.InvalidEncoding},
		{fmt.Sprintf(`{"iss":%q,"sub":"alice","exp":%d,"exp":%d}`, idpIss, exp, exp+1), errcode.InvalidEncoding},
		{fmt.Sprintf(`{"iss":%q,"sub":"alice","exp":%d,"scope":"a","scope":"b"}`, idpIss, exp), errcode.InvalidEncoding},
		{fmt.Sprintf(`{"iss":%q,"SUB":"alice","exp":%d}`, idpIss, exp), errcode.InvalidEncoding},
		{fmt.Sprintf(`{"iss":%q,"sub":"alice","Exp":%d}`, idpIss, exp), errcode.InvalidEncoding},
		{fmt.Sprintf(`{"iss":%q,"sub":"alice"}`, idpIss), errcode.MissingClaim},
	} {
		tok, err := jose.Sign("at+jwt", k, true, []byte(tc.payload))
		if err != nil {
			t.Fatal(err)
		}
		s, err := h.Validate(t.Context(), tok, nil)
		switch got := errcode.CodeOf(err); {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.payload, err)
		case tc.want == "" && s.Sub != "alice":
			t.Errorf("%s: sub %q", tc.payload, s.Sub)
		case tc.want != "" && got != tc.want:
			t.Errorf("%s: %v, want %s", tc.payload, err, tc.want)
		}
	}
}
