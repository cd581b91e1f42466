package txntoken

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/netjson"
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
		if netjson.DecodeKeepingNumbers([]byte(ctx), &decoded) != nil {
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

// AppendJSON appends to what the buffer holds and writes MarshalJSON's document.
func TestClaimsAppendJSON(t *testing.T) {
	iat := jose.NumericDate(1800000000)
	c := Claims{Iat: &iat, Aud: jose.Audience{"a.example"}, Txn: "t", Sub: "s", Scope: "x", ReqWL: "w", Tctx: map[string]any{"dlg": "D1"}}
	doc, _ := c.MarshalJSON()
	got, err := c.AppendJSON([]byte("prefix:"))
	if err != nil || string(got) != "prefix:"+string(doc) {
		t.Fatalf("%s %v", got, err)
	}
	const want = `{"iat":1800000000,"exp":null,"aud":"a.example","txn":"t","sub":"s","scope":"x","req_wl":"w","tctx":{"dlg":"D1"}}`
	if string(doc) != want {
		t.Fatalf("\n got %s\nwant %s", doc, want)
	}
}

// oauth.md 1.7: one trust domain is one aud string, never an array of one (Q12).
func TestClaimsOneTrustDomainIsOneString(t *testing.T) {
	doc, _ := Claims{Aud: jose.Audience{"a.example"}}.MarshalJSON()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil || m["aud"] != "a.example" {
		t.Fatalf("aud written as %v in %s", m["aud"], doc)
	}
}

// dialog-binding section 10: tctx.dlg, a string, is the dialog; anything else is none.
func TestClaimsDialog(t *testing.T) {
	var none *Claims
	for c, want := range map[*Claims]string{
		none: "", {}: "", {Tctx: map[string]any{"dlg": "D1"}}: "D1",
		{Tctx: map[string]any{"dlg": json.Number("1")}}: "", {Tctx: map[string]any{"dialog": "D1"}}: "",
		{Rctx: map[string]any{"dlg": "D1"}}: "",
	} {
		if got := c.Dialog(); got != want {
			t.Fatalf("%+v: Dialog() = %q, want %q", c, got, want)
		}
	}
}

func TestClaimsScopeList(t *testing.T) {
	if got := (&Claims{Scope: "trip.read  trip.book"}).ScopeList(); !slices.Equal(got, []string{"trip.read", "trip.book"}) {
		t.Fatalf("%q", got)
	}
	if got := (&Claims{}).ScopeList(); len(got) != 0 {
		t.Fatalf("%q", got)
	}
}

// oauth.md 1.8 with 1.1: req_chain when present; else req_wl, a -08 comma list of
// identifiers split; anything else kept whole.
func TestClaimsCallChain(t *testing.T) {
	a, b, c := "wimse://a.example/a1", "wimse://a.example/a2", "wimse://a.example/a3"
	for _, tc := range []struct {
		claims Claims
		want   []string
	}{
		{Claims{}, nil},
		{Claims{ReqWL: c}, []string{c}},
		{Claims{ReqWL: c, ReqChain: []string{a, b, c}}, []string{a, b, c}},
		{Claims{ReqWL: a + "," + b}, []string{a, b}},
		{Claims{ReqWL: a + ", " + b}, []string{a, b}},
		{Claims{ReqWL: a + ",not an identifier"}, []string{a + ",not an identifier"}},
		{Claims{ReqWL: "plain"}, []string{"plain"}},
	} {
		got := tc.claims.CallChain()
		if !slices.Equal(got, tc.want) {
			t.Fatalf("%+v: %q, want %q", tc.claims, got, tc.want)
		}
	}
	// The chain returned is a copy: changing it leaves the claims alone.
	cl := Claims{ReqChain: []string{a, b}}
	cl.CallChain()[0] = "x"
	if cl.ReqChain[0] != a {
		t.Fatal("CallChain returned the claims' own slice")
	}
}
