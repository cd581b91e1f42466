package txntoken

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/jose"
)

// draft-ietf-oauth-transaction-tokens-10, section "JWT Body Claims" (new in -10): "A
// Txn-Token MAY contain additional claims not defined in this specification. Recipients
// of a Txn-Token MUST ignore any claims they do not understand." A token carrying
// claims of other specifications, private ones and ones of unexpected JSON types
// verifies, and the claims the receiver does understand come back unchanged.
func TestTT10_JWTBodyClaims_UnknownClaimsIgnored(t *testing.T) {
	f := newFixture(t)
	raw, err := json.Marshal(f.claims())
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{
		"act":                  map[string]any{"sub": "wimse://a.example/agent/a0"},
		"example.com/priority": "high",
		"azd":                  []any{1, "two", nil, true},
		"nonce":                12345678901234567890.0,
		"cnf":                  map[string]any{"jkt": "abc"},
		"ext_null":             nil,
	} {
		body[k] = v
	}
	payload, _ := json.Marshal(body)
	tok, err := jose.Sign(Type, f.key, true, payload)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.verifier(tdA, WithIssuer(ttsIssuer)).Verify(t.Context(), tok)
	if err != nil {
		t.Fatalf("a Txn-Token with claims the receiver does not understand: %v", err)
	}
	if got.Sub != "alice" || got.Txn != "t" || got.Scope != "trip.read" || got.Dialog() != "D1" || got.ReqWL != "wimse://a.example/agent/a1" {
		t.Fatalf("understood claims changed: %+v", got)
	}
}

// The body of the -10 example Txn-Token (section "Example"; its comments removed), signed
// with a key of ours: every claim the draft shows, rctx with an RFC 8176 authn value, a
// nested tctx, verifies for the receiver in trust-domain.example at its iat.
func TestTT10_Example_TxnTokenBody(t *testing.T) {
	f := newFixture(t)
	body := `{
  "iat": 1686536226,
  "aud": "trust-domain.example",
  "exp": 1686536586,
  "txn": "97053963-771d-49cc-a4e3-20aad399c312",
  "sub": "d084sdrt234fsaw34tr23t",
  "req_wl": "apigateway.trust-domain.example",
  "rctx": {
    "req_ip": "69.151.72.123",
    "authn": "face"
  },
  "scope" : "trade.stocks",
  "tctx": {
    "action": "BUY",
    "ticker": "MSFT",
    "quantity": "100",
    "customer_type": {
      "geo": "US",
      "level": "VIP"
    }
  }
}`
	tok, err := jose.Sign(Type, f.key, true, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	f.now = time.Unix(1686536226, 0)
	got, err := f.verifier("trust-domain.example").Verify(t.Context(), tok)
	if err != nil {
		t.Fatalf("the -10 example body: %v", err)
	}
	ct, _ := got.Tctx["customer_type"].(map[string]any)
	if got.Sub != "d084sdrt234fsaw34tr23t" || got.ReqWL != "apigateway.trust-domain.example" || got.Rctx["authn"] != "face" ||
		got.Tctx["ticker"] != "MSFT" || ct["level"] != "VIP" {
		t.Fatalf("%+v", got)
	}
	// The same token at its exp is refused (the example's 360 s lifetime).
	f.now = time.Unix(1686536586+120, 0)
	if _, err := f.verifier("trust-domain.example").Verify(t.Context(), tok); err == nil {
		t.Fatal("the example token accepted two minutes after its exp")
	}
}
