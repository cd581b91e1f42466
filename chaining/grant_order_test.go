package chaining_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/tts"
)

// postAs sends form to the side's token endpoint with the credential cred sets (none
// when nil).
func postAs(t *testing.T, s *side, form url.Values, cred func(*http.Request)) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.endpoint(), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cred != nil {
		cred(req)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return res.StatusCode, m
}

// Issue 23 point 7 (the endpoint authenticates once): AS A's and AS B's parameter
// rules still come before client authentication, as they did when each grant
// authenticated its client itself: a malformed request is refused on its parameters
// whatever its credential (none, or a bad HTTP signature).
func TestIssue23_7_ChainingParametersBeforeAuthentication(t *testing.T) {
	e := newEnv(t, envOpts{quiet: true})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read", "D1")
	grant := e.mustGrant(a2, txn, "")
	asA := func(k, v string) url.Values {
		f := url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeJWT},
			"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {e.b.url}}
		if v == "" {
			f.Del(k)
		} else {
			f.Set(k, v)
		}
		return f
	}
	asB := func(k, v string) url.Values {
		f := url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}}
		f.Set(k, v)
		return f
	}
	creds := map[string]func(*http.Request){
		"none": nil,
		"a bad signature": func(r *http.Request) {
			r.Header.Set("Signature-Input", `sig=("@method");created=1`)
			r.Header.Set("Signature", "sig=:AAAA:")
			r.Header.Set("Workload-Identity-Token", "a.b.c")
		},
	}
	for name, tc := range map[string]struct {
		side *side
		form url.Values
		code errcode.Code
	}{
		"AS A subject_token_type": {e.a, asA("subject_token_type", oauth.TokenTypeAccessToken), errcode.UnsupportedTokenType},
		"AS A actor_token":        {e.a, asA("actor_token", "x"), errcode.InvalidRequest},
		"AS A no audience":        {e.a, asA("audience", ""), errcode.InvalidRequest},
		"AS B assertion":          {e.b, asB("assertion", "not-a-jws"), errcode.InvalidRequest},
		"AS B resource":           {e.b, asB("resource", "https://r.example/#f"), errcode.InvalidRequest},
	} {
		for cname, cred := range creds {
			t.Run(name+"/"+cname, func(t *testing.T) {
				st, body := postAs(t, tc.side, tc.form, cred)
				if st != http.StatusBadRequest || body["error"] != oauth.ErrInvalidRequest || body["code"] != string(tc.code) {
					t.Fatalf("%d %v, want 400 invalid_request %s", st, body, tc.code)
				}
			})
		}
	}
	// The grant was not consumed by the refusals.
	if _, err := e.redeem(a2, grant, ""); err != nil {
		t.Fatal(err)
	}
}

// Identity chaining binds the grant and the access token to the client's WIT key: a
// client authenticated without a WIT (private_key_jwt) is invalid_client at AS B, and
// a client_id that is not the authenticated workload is invalid_client at AS A and AS
// B; neither spends the grant.
func TestChaining2_4_ClientMustBeItsWIT(t *testing.T) {
	k, _ := keys.Generate(keys.EdDSA)
	batch := identifier.MustParse("wimse://a.example/registered/batch")
	e := newEnv(t, envOpts{quiet: true, bearer: func(c *chaining.JWTBearerConfig) {
		set, _ := keys.NewStaticSet(k.Public())
		p, err := oauth.NewPrivateKeyJWT([]string{c.Issuer}, []oauth.RegisteredClient{{ID: batch, Keys: set}}, c.Replay, c.Now, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.Authenticators = append(c.Authenticators, p)
	}})
	a2 := e.a.dom.Workload(t, "/agent/a2", keys.ES256)
	txn := e.txnToken(a2, "trip.read", "D1")
	grant := e.mustGrant(a2, txn, "")

	assertion, err := oauth.NewClientAssertion(k, batch, e.b.url, time.Minute, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, body := postAs(t, e.b, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant},
		"client_assertion_type": {oauth.ClientAssertionTypeJWTBearer}, "client_assertion": {assertion}}, nil)
	if st != http.StatusUnauthorized || body["error"] != oauth.ErrInvalidClient || body["code"] != string(errcode.Unauthenticated) ||
		!strings.Contains(body["error_description"].(string), "requires a WIT") {
		t.Fatalf("private_key_jwt at AS B: %d %v", st, body)
	}

	other := "wimse://a.example/agent/other"
	st, _, m := rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}, "client_id": {other}})
	if st != http.StatusUnauthorized || m["error"] != oauth.ErrInvalidClient || m["code"] != string(errcode.InvalidClaim) {
		t.Fatalf("client_id at AS B: %d %v", st, m)
	}
	st, _, m = rawPost(t, e, e.a, a2, url.Values{"grant_type": {tts.GrantTypeTokenExchange}, "requested_token_type": {chaining.TokenTypeJWT},
		"subject_token": {txn}, "subject_token_type": {tts.TokenTypeTxnToken}, "audience": {e.b.url}, "client_id": {other}})
	if st != http.StatusUnauthorized || m["error"] != oauth.ErrInvalidClient || m["code"] != string(errcode.InvalidClaim) {
		t.Fatalf("client_id at AS A: %d %v", st, m)
	}
	// The client's own identifier as client_id is accepted, and the grant is unspent.
	if st, _, m = rawPost(t, e, e.b, a2, url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}, "client_id": {a2.ID.String()}}); st != http.StatusOK {
		t.Fatalf("own client_id at AS B: %d %v", st, m)
	}
}
