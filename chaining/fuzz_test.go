package chaining

import (
	"net/url"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// FuzzParseJWTBearerRequest: the jwt-bearer request parser never panics, keeps its
// bounds, rejects only with a code, and reads the grant_type the token endpoint routes
// on: the handler never sees another value than the dispatcher did.
func FuzzParseJWTBearerRequest(f *testing.F) {
	f.Add(url.Values{"grant_type": {GrantTypeJWTBearer}, "assertion": {"eyJ.eyJ.sig"}}.Encode())
	f.Add(url.Values{"grant_type": {GrantTypeJWTBearer}, "assertion": {"a.b.c"}, "scope": {"trip.read trip.book"}, "resource": {"https://b.example/"}}.Encode())
	f.Add("grant_type=" + url.QueryEscape(GrantTypeJWTBearer) + "&assertion=a.b.c&assertion=d.e.f")
	f.Add("grant_type=" + url.QueryEscape(GrantTypeJWTBearer) + "&grant_type=" + url.QueryEscape(oauth.GrantTypeTokenExchange))
	f.Add("grant_type=%zz&assertion=a.b.c")
	f.Add("assertion=" + strings.Repeat("a", MaxAssertion+1))
	f.Add("scope=a++b&grant_type=" + url.QueryEscape(GrantTypeJWTBearer) + "&assertion=a.b.c")
	f.Add("resource=%23frag&grant_type=" + url.QueryEscape(GrantTypeJWTBearer) + "&assertion=a.b.c")
	f.Fuzz(func(t *testing.T, body string) {
		r, err := ParseJWTBearerRequest([]byte(body))
		p, ok := routingParams(body)
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("rejection without a code: %v", err)
			}
			return
		}
		if !ok || p["grant_type"] != GrantTypeJWTBearer {
			t.Fatalf("parsed as jwt-bearer, routed as %q (ok %v)", p["grant_type"], ok)
		}
		if len(r.Assertion) > MaxAssertion || strings.Count(r.Assertion, ".") != 2 {
			t.Fatalf("assertion bound or shape not kept")
		}
		for _, s := range r.Scope {
			if s == "" || strings.ContainsAny(s, " \"\\") {
				t.Fatalf("bad scope token %q", s)
			}
		}
		if r.Resource != "" && strings.Contains(r.Resource, "#") {
			t.Fatalf("resource with a fragment %q", r.Resource)
		}
	})
}

// FuzzParseGrantRequest: the same for the token exchange request of AS A.
func FuzzParseGrantRequest(f *testing.F) {
	f.Add(url.Values{"grant_type": {oauth.GrantTypeTokenExchange}, "requested_token_type": {TokenTypeJWT}, "subject_token": {"a.b.c"},
		"subject_token_type": {oauth.TokenTypeTxnToken}, "audience": {"https://as.b.example"}}.Encode())
	f.Add(url.Values{"grant_type": {oauth.GrantTypeTokenExchange}, "subject_token": {"a.b.c"}, "subject_token_type": {oauth.TokenTypeTxnToken},
		"resource": {"https://as.b.example/token"}, "scope": {"x"}}.Encode())
	f.Add("grant_type=" + url.QueryEscape(oauth.GrantTypeTokenExchange) + "&actor_token=x")
	f.Fuzz(func(t *testing.T, body string) {
		r, err := ParseGrantRequest([]byte(body))
		p, ok := routingParams(body)
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("rejection without a code: %v", err)
			}
			return
		}
		if !ok || p["grant_type"] != oauth.GrantTypeTokenExchange || p["requested_token_type"] != r.RequestedTokenType {
			t.Fatalf("parsed and routed differently: %v %+v", p, r)
		}
		if r.SubjectToken == "" || r.Audience == "" && r.Resource == "" || len(r.SubjectToken) > MaxSubjectToken {
			t.Fatal("a REQUIRED parameter or bound was not kept")
		}
	})
}

// routingParams is what the token endpoint routes on: the parameters of the one parse
// (ok false when the body does not parse; the TTS then refuses it).
func routingParams(body string) (map[string]string, bool) {
	tr, err := oauth.ParseTokenRequest([]byte(body))
	if err != nil {
		return nil, false
	}
	return map[string]string{"grant_type": tr.GrantType, "requested_token_type": tr.RequestedTokenType}, true
}
