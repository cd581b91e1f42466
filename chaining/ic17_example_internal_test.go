package chaining

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
)

// The JWT authorization grant of draft-ietf-oauth-identity-chaining-17 section 2.3.4
// (AS A's token exchange response, presented again in section 2.4.4's assertion
// request) and the JWK of AS A the section gives, verbatim: ES256, kid "2813308004", no
// typ, no alg in the JWK.
const (
	ic17ExampleGrant = "eyJhbGciOiJFUzI1NiIsImtpZCI6IjI4MTMzMDgwMDQifQ." +
		"eyJpc3MiOiJodHRwczovL2FzLmEuZXhhbXBsZS9hdXRoIiwiZXhwIjoxNjk1Mjg3NzUyLCJpYXQiOjE2OTUyODc2OTIsInN1YiI6ImpvaG5kb2VAYS5leGFtcGxlIiwiYXVkIjoiaHR0cHM6Ly9hcy5iLmV4YW1wbGUvYXV0aCJ9." +
		"Li8Rh-c-R0xirbuXlX8x6sQkZRqJIms9U8Rk8cL7uh1Mm232O6mwz1osPEMNef4OFUW-qTfA0C9QdeIl-e0KsA"
	ic17ExampleJWKS = `{"keys":[{"kty":"EC","crv":"P-256","kid":"2813308004","use":"sig",` +
		`"x":"MXfMrj_tgPJHxkfmDAx0m74E-T-DuLYCNdmuqtpfP_E","y":"YX82bI52OPBED1h_1HpsxAyWzrQ7DChAAVX9Q9E8uYQ"}]}`
)

// Section 2.4.2: AS B validates the grant per RFC 7523 section 3. The draft's example
// grant passes every check the draft makes (iss a trusted AS A, its key by kid, the
// ES256 signature, sub, aud naming AS B's issuer https://as.b.example/auth, exp within
// the window) at AS B's verifier, set up as a peer opened to untyped grants for that
// audience; dialogtrust then refuses it for what the draft leaves optional and
// dialogtrust requires: a jti (single use, section 5.5; the Txn-Token chaining profile
// makes it REQUIRED). Its signature checked byte for byte, a tampered payload fails.
func TestIC17Sec2_4_ExampleGrant(t *testing.T) {
	set, err := keys.ParseJWKS([]byte(ic17ExampleJWKS))
	if err != nil {
		t.Fatal(err)
	}
	ring := keys.NewRing(mustGenerate(t), nil)
	iat := time.Unix(1695287692, 0)
	b, err := NewJWTBearer(JWTBearerConfig{Issuer: "https://as.b.example/auth", Keys: ring,
		Authenticators: []oauth.Authenticator{nil} /* never called: verifyGrant only */, Replay: store.NewMemory(), Audiences: []string{"b.example"},
		Peers: []BearerPeer{{Issuer: "https://as.a.example/auth", Keys: set, Scopes: []string{"read"},
			AllowUntyped: true, Audiences: []string{"https://as.b.example/auth"}}},
		Now: func() time.Time { return iat }})
	if err != nil {
		t.Fatal(err)
	}
	peer, g, err := b.verifyGrant(context.Background(), ic17ExampleGrant, iat.Add(30*time.Second))
	if peer == nil || g == nil {
		t.Fatalf("the example grant did not reach the claim checks: %v", err)
	}
	if g.Iss != "https://as.a.example/auth" || g.Sub != "johndoe@a.example" || !g.Aud.Contains("https://as.b.example/auth") ||
		int64(*g.Exp) != 1695287752 || int64(*g.Iat) != 1695287692 {
		t.Fatalf("example claims %+v", g)
	}
	if errcode.CodeOf(err) != errcode.MissingClaim || !strings.Contains(err.Error(), "jti") {
		t.Fatalf("the example grant: %v, want missing_claim for its jti", err)
	}
	// After its exp the same grant is refused for its time, before any claim rule.
	_, _, err = b.verifyGrant(context.Background(), ic17ExampleGrant, iat.Add(2*time.Minute))
	if errcode.CodeOf(err) != errcode.Expired {
		t.Fatalf("expired example grant: %v", err)
	}
	// One payload character changed: the signature no longer verifies.
	parts := strings.Split(ic17ExampleGrant, ".")
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(claims), "johndoe@", "janedoe@", 1)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + parts[2]
	_, _, err = b.verifyGrant(context.Background(), tampered, iat)
	if errcode.CodeOf(err) != errcode.InvalidSignature {
		t.Fatalf("tampered example grant: %v", err)
	}
}

func mustGenerate(t *testing.T) *keys.PrivateKey {
	t.Helper()
	k, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
