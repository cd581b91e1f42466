package txntoken_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// A receiver in trust domain a.example verifies the Txn-Token of a request, then checks
// that it was issued for the dialog the request is in.
func Example() {
	// The TTS's signing key, and the key set a receiver would fetch from its JWKS.
	ttsKey, _ := keys.Generate(keys.ES256)
	ttsKeys, _ := keys.NewStaticSet(ttsKey.Public())
	now := time.Unix(1800000000, 0)

	// A Txn-Token as the TTS of a.example issues it, recording dialog D1.
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(5*time.Minute).Unix())
	token, _ := jose.SignClaims(txntoken.Type, ttsKey, true, txntoken.Claims{
		Iss: "https://tts.a.example", Iat: &iat, Exp: &exp, Aud: jose.Audience{"a.example"},
		Txn: "97053963-771d-49cc-a4e3-20aad399c312", Sub: "user@a.example", Scope: "trip.book",
		ReqWL: "wimse://a.example/agent/a1", Tctx: map[string]any{txntoken.DialogMember: "D1"},
	})

	// The receiver: its trust domain, the TTS's keys and issuer, an injected clock.
	v := txntoken.NewVerifier(ttsKeys, "a.example", txntoken.WithIssuer("https://tts.a.example"),
		txntoken.WithClock(func() time.Time { return now.Add(time.Minute) }))

	r := httptest.NewRequest(http.MethodPost, "https://a2.a.example/book", nil)
	r.Header.Set(txntoken.HeaderName, token)
	claims, err := v.VerifyRequest(context.Background(), r)
	if err != nil {
		fmt.Println("refused:", errcode.CodeOf(err))
		return
	}
	fmt.Println("sub:", claims.Sub, "scope:", claims.Scope, "dialog:", claims.Dialog())
	fmt.Println("in D1:", txntoken.DialogMatches(claims, "D1") == nil)
	fmt.Println("in D2:", errcode.CodeOf(txntoken.DialogMatches(claims, "D2")))

	// Ten minutes on, the token has expired.
	late := txntoken.NewVerifier(ttsKeys, "a.example", txntoken.WithClock(func() time.Time { return now.Add(10 * time.Minute) }))
	_, err = late.Verify(context.Background(), token)
	fmt.Println("later:", errcode.CodeOf(err))
	// Output:
	// sub: user@a.example scope: trip.book dialog: D1
	// in D1: true
	// in D2: dialog_mismatch
	// later: expired
}
