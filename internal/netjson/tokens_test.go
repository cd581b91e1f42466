package netjson_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// upper returns claims with the names in names upper-cased.
func upper(claims map[string]any, names ...string) map[string]any {
	out := make(map[string]any, len(claims))
	for k, v := range claims {
		out[k] = v
	}
	for _, n := range names {
		out[strings.ToUpper(n)] = out[n]
		delete(out, n)
	}
	return out
}

// RFC 7519 section 4: claim names are case-sensitive. Each token kind the project reads
// is offered with its claims spelled in upper case, through the path that reads it: each
// is refused (an upper-cased required claim is never read as the claim).
func TestRFC7519Sec4_ClaimNamesAreCaseSensitive(t *testing.T) {
	ctx := context.Background()
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	w := d.Workload(t, "/agent/a1", keys.EdDSA)
	now := clock.Now().Unix()
	cnf := map[string]any{"jwk": json.RawMessage(mustJSON(t, w.Key.Public()))}

	witClaims := map[string]any{"iss": "https://issuer.a.example", "sub": w.ID.String(), "iat": now, "exp": now + 600, "jti": "w1", "cnf": cnf}
	validator := d.Validator()
	wptVerifier := wpt.NewVerifier(validator, wpt.WithAudiences("https://b.example/api"), wpt.WithClock(clock.Now))
	wptClaims := map[string]any{"aud": "https://b.example/api", "exp": now + 60, "jti": "p1", "wth": tokenhash.Of(w.WIT)}

	for _, tc := range []struct {
		name  string
		check func(t *testing.T, claims map[string]any) error
		good  map[string]any
		names []string
	}{
		{"WIT", func(t *testing.T, c map[string]any) error {
			raw, err := jose.SignClaims(wit.Type, d.Key, true, c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = validator.Validate(ctx, raw)
			return err
		}, witClaims, []string{"sub", "exp", "cnf"}},
		{"WPT", func(t *testing.T, c map[string]any) error {
			raw, err := jose.SignClaims(wpt.Type, w.Key, false, c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = wptVerifier.VerifyProof(ctx, raw, w.Key.Public(), w.WIT, wpt.Bound{})
			return err
		}, wptClaims, []string{"aud", "exp", "jti", "wth"}},
		{"WIT request", decodeInto[witissuer.RequestClaims], map[string]any{"aud": "https://issuer.a.example", "iat": now, "jti": "r1", "cnf": cnf, "sub": w.ID.String()}, []string{"iat", "cnf", "sub"}},
		{"client assertion", decodeInto[oauth.AssertionClaims], map[string]any{"iss": w.ID.String(), "sub": w.ID.String(), "aud": "https://issuer.a.example", "exp": now + 60, "jti": "c1"}, []string{"iss", "sub", "aud"}},
		{"grant", decodeInto[chaining.GrantClaims], map[string]any{"iss": "https://as.a.example", "sub": "alice", "aud": "https://as.b.example", "exp": now + 60, "jti": "g1"}, []string{"sub", "aud", "exp"}},
		{"access token", decodeInto[chaining.AccessTokenClaims], map[string]any{"iss": "https://as.b.example", "sub": "alice", "aud": "https://api.b.example", "client_id": "c", "scope": "s", "iat": now, "exp": now + 60, "jti": "a1"}, []string{"aud", "scope", "client_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(t, tc.good); err != nil {
				t.Fatalf("the claims as spelled by the spec are refused: %v", err)
			}
			for _, n := range tc.names {
				err := tc.check(t, upper(tc.good, n))
				if err == nil {
					t.Errorf("%s spelled %s was read as %s", tc.name, strings.ToUpper(n), n)
				}
			}
			err := tc.check(t, upper(tc.good, tc.names...))
			if errcode.CodeOf(err) != errcode.InvalidEncoding {
				t.Errorf("all upper-cased: %v, want invalid_encoding", err)
			}
		})
	}

	t.Run("WIT request body", func(t *testing.T) {
		if _, err := witissuer.ParseBody([]byte(`{"request":"a.b.c"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := witissuer.ParseBody([]byte(`{"REQUEST":"a.b.c"}`)); errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Fatalf(`{"REQUEST":...} was read as the request: %v`, err)
		}
	})
	t.Run("handoff offer envelope", func(t *testing.T) {
		// An A2A message/send carries the offer under params.message; spelled METHOD and
		// PARAMS it is not JSON-RPC at all, and no offer is found in it.
		h, err := dialog.JSONRPCHandoff([]byte(`{"jsonrpc":"2.0","METHOD":"message/send","PARAMS":{"message":{}}}`))
		if h != nil || err != nil {
			t.Fatalf("upper-cased JSON-RPC members were read: %v %v", h, err)
		}
		_, err = dialog.JSONRPCHandoff([]byte(`{"jsonrpc":"2.0","method":"message/send","params":{"MESSAGE":{}}}`))
		if errcode.CodeOf(err) != errcode.InvalidRequest {
			t.Fatalf("params.MESSAGE was read as params.message: %v", err)
		}
	})
	// Txn-Tokens are decoded with DecodeKeepingNumbers, which checks the names the same
	// way: TestRFC7519Sec4_TxnTokenClaimNamesAreCaseSensitive there.
}

func decodeInto[T any](_ *testing.T, claims map[string]any) error {
	b, err := json.Marshal(claims)
	if err != nil {
		return err
	}
	var v T
	return netjson.DecodeClaims(b, &v)
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 7519 section 4: claim names within a claims set MUST be unique; a parser may
// reject duplicates or keep the last. A WIT and a WPT with a claim named twice are
// refused (invalid_encoding), so no two parsers can read them differently.
func TestRFC7519Sec4_DuplicateClaimNamesAreRefused(t *testing.T) {
	ctx := context.Background()
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	d := testkit.NewDomain(t, "a.example", keys.ES256, clock)
	w := d.Workload(t, "/agent/a1", keys.EdDSA)
	other := d.Workload(t, "/agent/a2", keys.EdDSA)
	now := clock.Now().Unix()
	jwk := mustJSON(t, w.Key.Public())
	good := fmt.Sprintf(`{"iss":"https://issuer.a.example","sub":%q,"iat":%d,"exp":%d,"jti":"w1","cnf":{"jwk":%s}}`, w.ID.String(), now, now+600, jwk)
	dup := fmt.Sprintf(`{"iss":"https://issuer.a.example","sub":%q,"iat":%d,"exp":%d,"jti":"w1","cnf":{"jwk":%s},"sub":%q}`, w.ID.String(), now, now+600, jwk, other.ID.String())
	validator := d.Validator()
	for _, tc := range []struct {
		payload string
		ok      bool
	}{{good, true}, {dup, false}} {
		raw, err := jose.Sign(wit.Type, d.Key, true, []byte(tc.payload))
		if err != nil {
			t.Fatal(err)
		}
		_, err = validator.Validate(ctx, raw)
		switch {
		case tc.ok && err != nil:
			t.Fatalf("the WIT without duplicates is refused: %v", err)
		case !tc.ok && errcode.CodeOf(err) != errcode.InvalidEncoding:
			t.Fatalf("a WIT naming sub twice: %v, want invalid_encoding", err)
		}
	}
	wptVerifier := wpt.NewVerifier(validator, wpt.WithAudiences("https://b.example/api"), wpt.WithClock(clock.Now))
	p := fmt.Sprintf(`{"aud":"https://b.example/api","exp":%d,"jti":"p1","jti":"p2","wth":%q}`, now+60, tokenhash.Of(w.WIT))
	raw, err := jose.Sign(wpt.Type, w.Key, false, []byte(p))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wptVerifier.VerifyProof(ctx, raw, w.Key.Public(), w.WIT, wpt.Bound{}); errcode.CodeOf(err) != errcode.InvalidEncoding {
		t.Fatalf("a WPT naming jti twice: %v, want invalid_encoding", err)
	}
}
