package tts

import (
	"encoding/json"
	"testing"

	"github.com/dialogtrust/dialogtrust/jose"
)

// Claims.MarshalJSON writes what encoding/json writes for the struct, octet for octet,
// whatever tctx and rctx hold.
func FuzzClaimsMarshal(f *testing.F) {
	for _, s := range []string{
		`{"dlg":"D1"}`, `{"a":{"b":[1,2.5e3,"<&>"]},"z":null}`, `{"s":"\u2028 é \" \\ \n"}`, `{"n":12345678901234567890}`,
		`{"w": [ 1 , 2 ] }`, `{"a":"b","a":"c"}`, `{"h":"<script>"}`, "{\"u\":\"\xe2\x80\xa8\"}", "{\"bad\":\"\xff\"}",
	} {
		f.Add(s, "alice", "wimse://a.example/x")
	}
	type plain Claims
	f.Fuzz(func(t *testing.T, ctx, sub, reqWL string) {
		var raw map[string]json.RawMessage
		if json.Unmarshal([]byte(ctx), &raw) != nil {
			return
		}
		var decoded map[string]any
		if decodeJSON([]byte(ctx), &decoded) != nil {
			return
		}
		tctx := map[string]any{}
		for k, v := range raw {
			tctx[k] = v // as the first token of a transaction holds them
		}
		if s, err := strconvUnquoteMember(raw); err == nil {
			tctx["str"] = s
		}
		iat, exp := jose.NumericDate(1800000000), jose.NumericDate(1800000300)
		for _, c := range []Claims{
			{Iss: "https://tts.example", Iat: &iat, Exp: &exp, Aud: jose.Audience{"a.example"}, Txn: "t", Sub: sub, Scope: "s", ReqWL: reqWL, Tctx: tctx, Rctx: decoded},
			{Iat: &iat, Aud: jose.Audience{"a", sub}, Sub: sub, ReqWL: reqWL, ReqChain: []string{reqWL, sub}, Ext: 1, Tctx: decoded, Rctx: tctx},
		} {
			got, err := c.MarshalJSON()
			want, wantErr := json.Marshal(plain(c))
			if (err == nil) != (wantErr == nil) || (err == nil && string(got) != string(want)) {
				t.Fatalf("\n got %s (%v)\nwant %s (%v)", got, err, want, wantErr)
			}
		}
	})
}

// strconvUnquoteMember returns the first string member of m decoded, for a Go string
// value in tctx (as dlg is held).
func strconvUnquoteMember(m map[string]json.RawMessage) (string, error) {
	for _, v := range m {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			return s, nil
		}
	}
	return "", json.Unmarshal([]byte("x"), new(string))
}
