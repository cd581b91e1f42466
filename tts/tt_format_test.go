package tts

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// oauth.md 1.6: 200, JSON, access_token the Txn-Token, issued_token_type txn_token,
// token_type N_A, no refresh_token; expires_in (Q2) and scope; Cache-Control no-store
// and Pragma no-cache.
func TestTT1_6_Response(t *testing.T) {
	e := newEnv(t)
	status, h, body := e.rawPost(e.workload("/agent/a1"), baseForm(tdA, "trip.read", e.accessToken("alice", "trip.read", 0), TokenTypeAccessToken), nil)
	if status != http.StatusOK || h.Get("Cache-Control") != "no-store" || h.Get("Pragma") != "no-cache" || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %v %s", status, h, body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m["issued_token_type"] != TokenTypeTxnToken || m["token_type"] != "N_A" || m["expires_in"] != float64(300) || m["scope"] != "trip.read" {
		t.Fatalf("response %v", m)
	}
	if _, ok := m["refresh_token"]; ok {
		t.Fatal("refresh_token present")
	}
	e.verify(m["access_token"].(string), tdA)
}

func decodeSegments(t *testing.T, tok string) (map[string]any, map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	var h, p map[string]any
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	pb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if json.Unmarshal(hb, &h) != nil || json.Unmarshal(pb, &p) != nil {
		t.Fatal("not a JWS")
	}
	return h, p
}

// oauth.md 1.7 header: typ txntoken+jwt and kid (the key in the JWKS).
func TestTT1_7_HeaderTypAndKid(t *testing.T) {
	e := newEnv(t)
	resp, _ := e.mustRequest(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken})
	h, _ := decodeSegments(t, resp.AccessToken)
	if h["typ"] != "txntoken+jwt" || h["kid"] != e.ttsKey.KID() || h["alg"] != "ES256" {
		t.Fatalf("header %v", h)
	}
}

// oauth.md 1.7 claims: iat, aud (the trust domain, one string), exp, txn, sub, scope,
// req_wl (one identifier), tctx, rctx, iss: every REQUIRED claim, with its type.
func TestTT1_7_RequiredClaims(t *testing.T) {
	e := newEnv(t)
	gw := e.workload("/edge-gateway")
	resp, _ := e.mustRequest(gw, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken,
		Dialog: "D1", Context: map[string]any{"req_ip": "192.0.2.7"}})
	_, p := decodeSegments(t, resp.AccessToken)
	for name, want := range map[string]any{"aud": tdA, "sub": "alice", "scope": "trip.read", "req_wl": gw.ID.String(), "iss": e.url} {
		if p[name] != want {
			t.Errorf("%s = %v, want %v", name, p[name], want)
		}
	}
	for _, name := range []string{"iat", "exp"} {
		if _, ok := p[name].(float64); !ok {
			t.Errorf("%s is not a NumericDate: %v", name, p[name])
		}
	}
	txn, _ := p["txn"].(string)
	if b, err := base64.RawURLEncoding.DecodeString(txn); err != nil || len(b) != 16 {
		t.Errorf("txn %q is not 128 random bits", txn)
	}
	if tctx, _ := p["tctx"].(map[string]any); tctx["dlg"] != "D1" {
		t.Errorf("tctx %v", p["tctx"])
	}
	if rctx, _ := p["rctx"].(map[string]any); rctx["req_ip"] != "192.0.2.7" {
		t.Errorf("rctx %v", p["rctx"])
	}
}

// oauth.md 1.7: the token must not be accepted outside its trust domain.
func TestTT1_7_NotAcceptedOutsideTrustDomain(t *testing.T) {
	e := newEnv(t)
	resp, _ := e.mustRequest(e.workload("/agent/a1"), txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: e.accessToken("alice", "trip.read", 0), SubjectTokenType: TokenTypeAccessToken})
	if _, err := e.verifier(tdB).Verify(t.Context(), resp.AccessToken); err == nil {
		t.Fatal("accepted in another trust domain")
	}
	tok, _ := jose.Parse(resp.AccessToken, 0)
	if strings.Contains(string(tok.Payload), `"aud":[`) {
		t.Fatal("aud is an array; one trust domain is one string (Q12)")
	}
}
