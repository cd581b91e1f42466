package chaining

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
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
	f.Add(url.Values{"grant_type": {oauth.GrantTypeTokenExchange}, "requested_token_type": {TokenTypeIDJAG}, "subject_token": {"a.b.c"},
		"subject_token_type": {TokenTypeIDToken}, "audience": {"https://as.b.example"}, "resource": {"https://b.example/mcp"}}.Encode())
	f.Add(url.Values{"grant_type": {oauth.GrantTypeTokenExchange}, "requested_token_type": {TokenTypeIDJAG}, "subject_token": {"a.b.c"},
		"subject_token_type": {TokenTypeIDToken}, "resource": {"https://as.b.example"}}.Encode())
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
		if r.RequestedTokenType == TokenTypeIDJAG && r.Audience == "" {
			t.Fatal("an ID-JAG request without audience (ID-JAG section 4.3: REQUIRED)")
		}
	})
}

// FuzzIDJAGClaims: any payload decodes or is refused with a code, and an ID-JAG that
// passes checkIDJAG names the client and, with resources, is for one that is served.
func FuzzIDJAGClaims(f *testing.F) {
	for _, ex := range draftIDJAGExamples {
		f.Add([]byte(ex.payload), "f53f191f9311af35", "")
	}
	f.Add([]byte(`{"client_id":"c","resource":["https://r.example/a","x"],"authorization_details":{"a":1}}`), "c", "https://r.example/a")
	f.Add([]byte(`{"client_id":"c","resource":"https://r.example/a","authorization_details":[1]}`), "c", "")
	b := &JWTBearer{cfg: JWTBearerConfig{Audiences: []string{"r.example", "https://r.example/a", "https://api.chat.example/"}}}
	f.Fuzz(func(t *testing.T, payload []byte, client, requested string) {
		var g GrantClaims
		if err := netjson.DecodeClaims(payload, &g); err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("rejection without a code: %v", err)
			}
			return
		}
		jag, err := b.checkIDJAG(&g, client, requested)
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("rejection without a code: %v", err)
			}
			return
		}
		if g.ClientID == "" || g.ClientID != client {
			t.Fatalf("client_id %q passed for client %q", g.ClientID, client)
		}
		if !slices.Contains(b.cfg.Audiences, jag.audience) && jag.audience != requested {
			t.Fatalf("access token for %q, which is not served", jag.audience)
		}
		if len(g.Resource) > 0 && !slices.Contains(g.Resource, jag.audience) {
			t.Fatalf("access token for %q, not among the ID-JAG's resources %v", jag.audience, g.Resource)
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
