package chaining

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
)

// The ID-JAGs the draft gives as examples (draft-ietf-oauth-identity-assertion-authz-grant,
// editor's copy of -04), claims as printed: each, signed by its IdP, passes AS B's
// checks (verifyGrant, checkIDJAG) at an AS configured as the example's resource
// authorization server, for the example's client, and is refused for any other client.
// The examples name plain client identifiers, which no WIT carries: the HTTP round trip
// with a WIT is TestIDJAG4_3_TxnTokenSubjectRoundTrip; this checks the claims.
var draftIDJAGExamples = []struct {
	section, payload, resource string
}{
	{"3.1", `{"jti":"9e43f81b64a33f20116179","iss":"https://acme.idp.example","sub":"U019488227","aud":"https://acme.chat.example/","client_id":"f53f191f9311af35","exp":1311281970,"iat":1311280970,"resource":"https://acme.chat.example/api","scope":"chat.read chat.history","auth_time":1311280970,"amr":["mfa","phrh","hwk","user"]}`, "https://acme.chat.example/api"},
	{"4.3.4.1", `{"jti":"9e43f81b64a33f20116179","iss":"https://acme.idp.example/","sub":"U019488227","aud":"https://acme.chat.example/","client_id":"f53f191f9311af35","exp":1311281970,"iat":1311280970,"resource":"https://api.chat.example/","scope":"chat.read chat.history","auth_time":1311280970,"amr":["mfa","phrh","hwk","user"]}`, "https://api.chat.example/"},
	{"4.3.4.2", `{"jti":"9e43f81b64a33f20116179","iss":"https://acme.idp.example/","sub":"U019488227","aud":"https://acme.chat.example/","client_id":"f53f191f9311af35","exp":1311281970,"iat":1311280970,"authorization_details":[{"type":"chat_read","actions":["read"],"locations":["https://api.chat.example/channels"]},{"type":"chat_history","actions":["read"],"datatypes":["message"]}],"auth_time":1311280970}`, ""},
	{"A.4.2.5", `{"jti":"9e43f81b64a33f20116179","iss":"https://idp.cyberdyne-corp.example/","sub":"1997e829-2029-41d4-a716-446655440000","aud":"https://authorization-server.saas-tool.example/","resource":"https://api.saas-tool.example/","client_id":"https://ai-agent-app.example/","exp":1984445160,"iat":1984445100,"scope":"agent.read agent.write"}`, "https://api.saas-tool.example/"},
}

func TestIDJAG3_1_DraftExamples(t *testing.T) {
	for _, ex := range draftIDJAGExamples {
		t.Run(ex.section, func(t *testing.T) {
			var c struct {
				Iss, ClientID string
				Aud           string
				Iat           int64
			}
			var raw map[string]any
			if err := json.Unmarshal([]byte(ex.payload), &raw); err != nil {
				t.Fatal(err)
			}
			c.Iss, c.Aud, c.ClientID, c.Iat = raw["iss"].(string), raw["aud"].(string), raw["client_id"].(string), int64(raw["iat"].(float64))
			idpKey, _ := keys.Generate(keys.ES256)
			set, _ := keys.NewStaticSet(idpKey.Public())
			asKey, _ := keys.Generate(keys.ES256)
			now := time.Unix(c.Iat+5, 0)
			auds := []string{"https://resource.default.example/"}
			if ex.resource != "" {
				auds = append(auds, ex.resource)
			}
			b, err := NewJWTBearer(JWTBearerConfig{Issuer: c.Aud, Keys: keys.NewRing(asKey, func() time.Time { return now }),
				Authenticators: []oauth.Authenticator{nil}, Replay: store.NewMemory(), Audiences: auds,
				MaxGrantAge: time.Hour, Now: func() time.Time { return now },
				Peers: []BearerPeer{{Issuer: c.Iss, Keys: set, Typs: []string{IDJAGTyp}, Scopes: []string{"chat.read", "agent.read"}, AllowUnbound: true}}})
			if err != nil {
				t.Fatal(err)
			}
			tok, err := jose.Sign(IDJAGTyp, idpKey, true, []byte(ex.payload))
			if err != nil {
				t.Fatal(err)
			}
			_, g, err := b.verifyGrant(context.Background(), tok, now)
			if err != nil {
				t.Fatalf("section %s example: %v", ex.section, err)
			}
			if !g.isIDJAG {
				t.Fatal("not taken for an ID-JAG")
			}
			jag, err := b.checkIDJAG(g, c.ClientID, "")
			if err != nil {
				t.Fatalf("section %s example: %v", ex.section, err)
			}
			want := ex.resource
			if want == "" {
				want = auds[0]
			}
			if jag.audience != want {
				t.Errorf("access token for %q, want %q", jag.audience, want)
			}
			if _, err := b.checkIDJAG(g, "another-client", ""); errcode.CodeOf(err) != errcode.GrantClientMismatch {
				t.Errorf("another client: %v", err)
			}
			// The same claims at another AS: aud is not its issuer identifier.
			other := *b
			other.cfg.Issuer = "https://other-as.example/"
			if _, _, err := other.verifyGrant(context.Background(), tok, now); errcode.CodeOf(err) != errcode.AudienceMismatch {
				t.Errorf("at another AS: %v", err)
			}
		})
	}
}
