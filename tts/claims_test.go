package tts

import (
	"encoding/json"
	"testing"

	"github.com/dialogtrust/dialogtrust/jose"
)

// Claims.MarshalJSON is encoding/json's output without reflection.
func TestClaimsMarshalMatchesReflection(t *testing.T) {
	type plain Claims
	iat, exp := jose.NumericDate(1800000000), jose.NumericDate(1800000300)
	for _, c := range []Claims{
		{},
		{Iss: "http://127.0.0.1:8081", Iat: &iat, Exp: &exp, Aud: jose.Audience{"a.example"}, Txn: "t", Sub: "alice", Scope: "a b", ReqWL: "wimse://a.example/x"},
		{Iat: &iat, Aud: jose.Audience{"a", "b"}, Sub: "<&>\"\\ é \u2028 \x01", Scope: "s", ReqWL: "w", ReqChain: []string{"x", "y"}, Ext: 2,
			Tctx: map[string]any{"dlg": "D1", "n": json.Number("12345678901234567890"), "raw": json.RawMessage(`{"a":[1,2]}`)},
			Rctx: map[string]any{"req_ip": "192.0.2.1"}},
	} {
		got, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(plain(c))
		if string(got) != string(want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	}
}
