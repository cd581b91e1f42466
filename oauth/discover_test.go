package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// Discover reads the RFC 8414 metadata with the well-known suffix between host and
// path (section 3.1), and refuses a document whose issuer is not the one asked for
// (section 3.3) or whose links leave the issuer's origin.
func TestDiscover(t *testing.T) {
	ctx := context.Background()
	var origin string
	docs := map[string]func() oauth.Metadata{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(rw, r)
			return
		}
		if r.URL.Path == "/.well-known/oauth-authorization-server/broken" {
			_, _ = rw.Write([]byte("{not json"))
			return
		}
		_ = json.NewEncoder(rw).Encode(doc())
	}))
	defer srv.Close()
	origin = srv.URL
	md := func(issuer, token, jwks string) func() oauth.Metadata {
		return func() oauth.Metadata {
			return oauth.Metadata{Issuer: issuer, TokenEndpoint: token, JWKSURI: jwks, GrantTypesSupported: []string{oauth.GrantTypeTokenExchange}}
		}
	}
	docs["/.well-known/oauth-authorization-server"] = md(origin, origin+"/token", origin+"/jwks")
	docs["/.well-known/oauth-authorization-server/tenant/a"] = md(origin+"/tenant/a", origin+"/tenant/a/token", origin+"/tenant/a/jwks")
	docs["/.well-known/oauth-authorization-server/other-issuer"] = md("https://as.example", origin+"/token", origin+"/jwks")
	docs["/.well-known/oauth-authorization-server/foreign-token"] = md(origin+"/foreign-token", "https://evil.example/token", origin+"/jwks")
	docs["/.well-known/oauth-authorization-server/foreign-jwks"] = md(origin+"/foreign-jwks", origin+"/token", "https://evil.example/jwks")
	docs["/.well-known/oauth-authorization-server/broken"] = md("", "", "")

	for _, issuer := range []string{origin, origin + "/", origin + "/tenant/a", origin + "/tenant/a/"} {
		got, err := oauth.Discover(ctx, nil, issuer)
		if err != nil || got.Issuer != strings.TrimSuffix(issuer, "/") || got.TokenEndpoint != got.Issuer+"/token" || len(got.GrantTypesSupported) != 1 {
			t.Fatalf("%s: %v %+v", issuer, err, got)
		}
	}
	for _, tc := range []struct {
		issuer string
		code   errcode.Code
		kind   errcode.Kind
	}{
		{origin + "/other-issuer", errcode.IssuerMismatch, errcode.Failed},
		{origin + "/foreign-token", errcode.IssuerMismatch, errcode.Failed},
		{origin + "/foreign-jwks", errcode.IssuerMismatch, errcode.Failed},
		{origin + "/broken", errcode.InvalidEncoding, errcode.Failed},
		{origin + "/missing", errcode.ASUnavailable, errcode.Incomplete},
		{"http://127.0.0.1:1", errcode.ASUnavailable, errcode.Incomplete},
		{"ftp://as.example", errcode.InvalidRequest, errcode.Failed},
		{"/relative", errcode.InvalidRequest, errcode.Failed},
		{origin + "?tenant=a", errcode.InvalidRequest, errcode.Failed},
		{origin + "#a", errcode.InvalidRequest, errcode.Failed},
	} {
		_, err := oauth.Discover(ctx, nil, tc.issuer)
		if errcode.CodeOf(err) != tc.code || errcode.KindOf(err) != tc.kind {
			t.Errorf("%s: %v, want %s (%s)", tc.issuer, err, tc.code, tc.kind)
		}
	}
}
