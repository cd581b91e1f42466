package ttsservice

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/oauth"
)

// ID-JAG configured in two tts processes (docs/tts.md, "ID-JAG"): TTS A issues ID-JAGs
// for TTS B (as_a.peers[].id_jag, resources) on a Txn-Token and on an ID token of a
// configured identity provider (as_a.id_token_issuers); TTS B redeems them
// (as_b.peers[].id_jag) for access tokens of the resource named (as_b.resources), and
// both say so in their metadata.
func TestIDJAGTwoDomains(t *testing.T) {
	ctx := context.Background()
	da, db := newWITDomain(t, "a.example"), newWITDomain(t, "b.example")
	idp := newWITDomain(t, "idp.example") // its key signs the ID tokens
	addrA, addrB := freeLoopback(t), freeLoopback(t)
	urlA, urlB := "http://"+addrA, "http://"+addrB
	const resource = "https://b.example/mcp"
	cfgA, cfgB := twoDomainConfigs(da, db, addrA, addrB)
	cfgA = strings.Replace(cfgA, "        scopes: [trip.read]\n", "        scopes: [trip.read]\n        id_jag: true\n        resources: ["+resource+"]\n", 1)
	cfgA += "    id_token_issuers:\n      - {issuer: https://idp.example, jwks_file: " + idp.file + "}\n"
	cfgB = strings.Replace(cfgB, "    audience: b.example\n", "    audience: b.example\n    resources: ["+resource+"]\n", 1)
	cfgB = strings.Replace(cfgB, "        scopes: [trip.read, trip.book]\n", "        scopes: [trip.read, trip.book]\n        id_jag: true\n", 1)
	for _, c := range []string{cfgA, cfgB} {
		if err := checkConfig(t, c); err != nil {
			t.Fatalf("check-config: %v", err)
		}
	}
	procB := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", cfgB)}, nil)
	procA := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", cfgA)}, nil)
	mdA, err := oauth.Discover(ctx, nil, procA.URL)
	if err != nil {
		t.Fatal(err)
	}
	mdB, err := oauth.Discover(ctx, nil, procB.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mdA.IdentityChainingRequestedTokenTypesSupported, chaining.TokenTypeIDJAG) ||
		!slices.Contains(mdB.AuthorizationGrantProfilesSupported, chaining.GrantProfileIDJAG) {
		t.Fatalf("metadata: A %+v, B %+v", mdA, mdB)
	}

	a2, a2Key, a2WIT := da.workload(t, "/agent/a2")
	cc := &chaining.Client{WIT: a2WIT, Key: a2Key}
	redeem := func(jag string) *chaining.AccessTokenResponse {
		t.Helper()
		at, err := cc.Redeem(ctx, mdB.TokenEndpoint, jag, "")
		if err != nil {
			t.Fatalf("redeem the ID-JAG: %v", err)
		}
		return at
	}
	// A Txn-Token as the subject (the Fletcher profile).
	txn, err := selfSignedTxn(ctx, a2, a2Key, a2WIT, urlA, mdA.TokenEndpoint, "trip.read trip.book", "")
	if err != nil {
		t.Fatal(err)
	}
	jag, err := cc.IDJAG(ctx, chaining.IDJAGParams{TokenEndpoint: mdA.TokenEndpoint, SubjectToken: txn.AccessToken,
		SubjectTokenType: oauth.TokenTypeTxnToken, Audience: urlB, Resource: resource})
	if err != nil {
		t.Fatalf("ID-JAG on a Txn-Token: %v", err)
	}
	if at := redeem(jag.AccessToken); at.Scope != "trip.read" || at.Resource != resource {
		t.Fatalf("access token %+v", at)
	}
	// An ID token of the configured identity provider, issued to a2.
	now := time.Now()
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(time.Hour).Unix())
	idt, err := jose.SignClaims("JWT", idp.key, true, jose.RegisteredClaims{Iss: "https://idp.example", Sub: "U019488227",
		Aud: jose.Audience{a2.String()}, Iat: &iat, Exp: &exp})
	if err != nil {
		t.Fatal(err)
	}
	jag, err = cc.IDJAG(ctx, chaining.IDJAGParams{TokenEndpoint: mdA.TokenEndpoint, SubjectToken: idt,
		SubjectTokenType: chaining.TokenTypeIDToken, Audience: urlB, Resource: resource})
	if err != nil {
		t.Fatalf("ID-JAG on an ID token: %v", err)
	}
	redeem(jag.AccessToken)
	// The same ID token for another workload: not issued to it.
	_, a3Key, a3WIT := da.workload(t, "/agent/a3")
	if _, err := (&chaining.Client{WIT: a3WIT, Key: a3Key}).IDJAG(ctx, chaining.IDJAGParams{TokenEndpoint: mdA.TokenEndpoint, SubjectToken: idt,
		SubjectTokenType: chaining.TokenTypeIDToken, Audience: urlB}); err == nil {
		t.Fatal("an ID token issued to a2 got a3 an ID-JAG")
	}
}

func TestIDJAGConfigErrors(t *testing.T) {
	for _, tc := range []struct{ chaining, want string }{
		{"chaining:\n  peers: [{issuer: https://c}]\n  as_a: {peers: [{issuer: https://c, id_jag: true, resources: [\"https://c/mcp#f\"]}]}\n", "not an absolute URI without a fragment"},
		{"chaining:\n  peers: [{issuer: https://c}]\n  as_a: {peers: [{issuer: https://c, id_jag: true}], id_token_issuers: [{issuer: https://idp}]}\n", "exactly one of jwks_url, jwks_file"},
		{"chaining:\n  peers: [{issuer: https://c}]\n  as_a: {peers: [{issuer: https://c, id_jag: true}], id_token_issuers: [{jwks_file: /x}]}\n", "an issuer is required"},
		{"chaining:\n  peers: [{issuer: https://c}]\n  as_a: {peers: [{issuer: https://c, id_jag: true, resources: [c/mcp]}]}\n", "not an absolute URI"},
		{"chaining:\n  peers: [{issuer: https://a, jwks_file: /x}]\n  as_b: {resources: [\"https://b/mcp#x\"], peers: [{issuer: https://a, scopes: [x], id_jag: true}]}\n", "not an absolute URI"},
	} {
		if err := checkConfig(t, chainingBaseYAML+tc.chaining); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: got %v, want %q", tc.chaining, err, tc.want)
		}
	}
}
