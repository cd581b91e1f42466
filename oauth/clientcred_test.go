package oauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// A TokenClient with a Credential authenticates as an authorization server outside WIMSE
// knows it (RFC 6749 section 2.3) and sends no WIT or proof; the caller's form is not
// changed.
func TestTokenClientCredentials(t *testing.T) {
	var got *http.Request
	var form url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		got, form = r, r.PostForm
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"at","token_type":"Bearer","expires_in":60}`))
	}))
	defer srv.Close()
	key, _ := keys.Generate(keys.ES256)
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name  string
		cred  oauth.ClientCredential
		check func(t *testing.T)
	}{
		{"client_secret_basic, form-urlencoded before base64 (2.3.1)", oauth.ClientSecretBasic{ClientID: "app:1", Secret: "s e/c+"}, func(t *testing.T) {
			b, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(got.Header.Get("Authorization"), "Basic "))
			if string(b) != "app%3A1:s+e%2Fc%2B" || form.Has("client_id") {
				t.Fatalf("Authorization %q, form %v", b, form)
			}
		}},
		{"public client", oauth.PublicClient{ClientID: "idp-client"}, func(t *testing.T) {
			if form.Get("client_id") != "idp-client" || got.Header.Get("Authorization") != "" {
				t.Fatalf("form %v", form)
			}
		}},
		{"private_key_jwt", oauth.ClientAssertion{ClientID: "cc-client", Key: key, Audience: "https://as.example", Now: func() time.Time { return now }}, func(t *testing.T) {
			if form.Get("client_assertion_type") != oauth.ClientAssertionTypeJWTBearer {
				t.Fatalf("form %v", form)
			}
			tok, err := jose.Parse(form.Get("client_assertion"), 0)
			if err != nil || tok.Typ != oauth.ClientAssertionType {
				t.Fatalf("assertion %v %+v", err, tok)
			}
			if err := tok.VerifyWith(key.Public(), false); err != nil {
				t.Fatal(err)
			}
			var c map[string]any
			_ = json.Unmarshal(tok.Payload, &c)
			if c["iss"] != "cc-client" || c["sub"] != "cc-client" || c["aud"] != "https://as.example" || c["jti"] == "" ||
				c["exp"].(float64) != float64(now.Add(time.Minute).Unix()) {
				t.Fatalf("claims %v", c)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller := url.Values{"grant_type": {"client_credentials"}}
			tc2 := &oauth.TokenClient{TokenEndpoint: srv.URL, Credential: tc.cred}
			if _, err := tc2.Token(context.Background(), caller); err != nil {
				t.Fatal(err)
			}
			tc.check(t)
			if got.Header.Get("Signature") != "" || got.Header.Get("Workload-Identity-Token") != "" || got.Header.Get("Wpt") != "" {
				t.Fatalf("a WIT proof went with a client credential: %v", got.Header)
			}
			if len(caller) != 1 {
				t.Fatalf("the caller's form was changed: %v", caller)
			}
		})
	}
	for _, bad := range []oauth.ClientCredential{oauth.ClientSecretBasic{}, oauth.PublicClient{}, oauth.ClientAssertion{ClientID: "x", Key: key}} {
		if _, err := (&oauth.TokenClient{TokenEndpoint: srv.URL, Credential: bad}).Token(context.Background(), url.Values{}); errcode.CodeOf(err) != errcode.MissingCredential {
			t.Errorf("%T incomplete: %v", bad, err)
		}
	}
}
