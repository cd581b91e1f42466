package ttsservice

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit/kittest"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// witDomain is a trust domain's WIT issuer key, published as a JWKS file the TTS trusts.
type witDomain struct {
	td   string
	key  *keys.PrivateKey
	file string
}

func newWITDomain(t *testing.T, td string) *witDomain {
	k, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(k.Public())
	b, _ := set.MarshalJSON()
	return &witDomain{td: td, key: k, file: testkit.WriteTemp(t, td+".jwks.json", string(b))}
}

// workload returns an identifier, a key and a WIT for it.
func (d *witDomain) workload(t *testing.T, path string) (identifier.ID, *keys.PrivateKey, string) {
	id := identifier.MustParse("wimse://" + d.td + path)
	k, _ := keys.Generate(keys.ES256)
	w, _, err := wit.NewIssuer("https://wit."+d.td, func() *keys.PrivateKey { return d.key }).Issue(id, k.Public(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return id, k, w
}

// Identity chaining configured in two tts processes (run, as main runs them): AS A in
// the TTS of a.example issues a grant for the TTS of b.example, whose AS B finds AS A's
// keys through its RFC 8414 metadata, redeems the grant, and whose TTS accepts the
// access token and records the linked dialog.
func TestChainingTwoDomains(t *testing.T) {
	ctx := context.Background()
	da, db := newWITDomain(t, "a.example"), newWITDomain(t, "b.example")
	addrA, addrB := freeLoopback(t), freeLoopback(t)
	urlA, urlB := "http://"+addrA, "http://"+addrB
	cfgA, cfgB := twoDomainConfigs(da, db, addrA, addrB)
	procB := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", cfgB)}, nil)
	procA := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", cfgA)}, nil)
	mdA, mdB := discoverTwoDomains(t, ctx, procA, procB)

	a2, a2Key, a2WIT := da.workload(t, "/agent/a2")
	txn, err := selfSignedTxn(ctx, a2, a2Key, a2WIT, urlA, mdA.TokenEndpoint, "trip.read trip.book", "D1-cmd")
	if err != nil {
		t.Fatal(err)
	}
	cc := &chaining.Client{WIT: a2WIT, Key: a2Key}
	g, at := chainToDomainB(t, ctx, cc, mdA, mdB, txn.AccessToken)
	if getJSON(t, procB.URL+tts.PathReadyz, nil) != 200 {
		t.Fatal("TTS B not ready once AS A's metadata and keys answered")
	}
	txnInB(t, ctx, db, mdB, urlB, at.AccessToken)
	// A domain-A workload cannot get domain-B Txn-Tokens although TTS B trusts its WIT
	// (for AS B's client authentication): no policy rule names it.
	if _, err := (&txntoken.Client{TokenEndpoint: mdB.TokenEndpoint, WIT: a2WIT, Key: a2Key, Proof: proof.WPT}).Request(ctx,
		txntoken.Request{Audience: "b.example", Scope: "trip.read", SubjectToken: at.AccessToken, SubjectTokenType: tts.TokenTypeAccessToken}); err == nil {
		t.Fatal("a domain-A workload got a domain-B Txn-Token")
	}
	checkChainingLogs(t, procA.Stderr.String()+procB.Stderr.String(), txn.AccessToken, g.AccessToken, at.AccessToken)
}

// twoDomainConfigs: TTS A (AS A) issues grants for AS B; TTS B (AS B) redeems them,
// mapping A's subjects under the prefix "a.example:".
func twoDomainConfigs(da, db *witDomain, addrA, addrB string) (cfgA, cfgB string) {
	urlA, urlB := "http://"+addrA, "http://"+addrB
	cfgA = domainAYAML(da, addrA) + `chaining:
  peers:
    - issuer: ` + urlB + `
      audiences: [as.b.example]
  as_a:
    grant_lifetime: 30s
    peers:
      - issuer: ` + urlB + `
        scopes: [trip.read]
`
	cfgB = `development: true
listen: ` + addrB + `
trust_domains: [b.example]
jwks_retry: 1ns
wits:
  - {trust_domain: b.example, jwks_file: ` + db.file + `}
  - {trust_domain: a.example, jwks_file: ` + da.file + `}
policy:
  rules:
    - workload: "wimse://b.example/"
chaining:
  peers:
    - {issuer: ` + urlA + `, metadata: true}
  as_b:
    audience: b.example
    access_token_lifetime: 2m
    peers:
      - issuer: ` + urlA + `
        scopes: [trip.read, trip.book]
        subject: {mode: prefix, prefix: "a.example:"}
`
	return cfgA, cfgB
}

// discoverTwoDomains: AS A offers identity-chaining grants, AS B redeems them (and
// offers none itself).
func discoverTwoDomains(t *testing.T, ctx context.Context, procA, procB *kittest.Process) (mdA, mdB *oauth.Metadata) {
	mdA, err := oauth.Discover(ctx, nil, procA.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mdA.IdentityChainingRequestedTokenTypesSupported, chaining.TokenTypeJWT) {
		t.Fatalf("AS A metadata %+v", mdA)
	}
	mdB, err = oauth.Discover(ctx, nil, procB.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mdB.GrantTypesSupported, chaining.GrantTypeJWTBearer) || len(mdB.IdentityChainingRequestedTokenTypesSupported) != 0 {
		t.Fatalf("AS B metadata %+v", mdB)
	}
	return mdA, mdB
}

// chainToDomainB trades the domain-A Txn-Token for a grant at AS A (30 s, the scope
// narrowed to trip.read) and redeems it at AS B for an access token (2 min).
func chainToDomainB(t *testing.T, ctx context.Context, cc *chaining.Client, mdA, mdB *oauth.Metadata, txn string) (g *chaining.GrantResponse, at *chaining.AccessTokenResponse) {
	g, err := cc.Grant(ctx, chaining.GrantParams{TokenEndpoint: mdA.TokenEndpoint, TxnToken: txn, Audience: "as.b.example"})
	if err != nil {
		t.Fatal(err)
	}
	if g.ExpiresIn != 30 || g.Scope != "trip.read" {
		t.Fatalf("grant %+v", g)
	}
	at, err = cc.Redeem(ctx, mdB.TokenEndpoint, g.AccessToken, "")
	if err != nil {
		t.Fatal(err)
	}
	if at.ExpiresIn != 120 || at.Scope != "trip.read" {
		t.Fatalf("access token %+v", at)
	}
	return g, at
}

// txnInB: a domain-B workload gets a domain-B Txn-Token for the access token, whose
// subject is A's, prefixed.
func txnInB(t *testing.T, ctx context.Context, db *witDomain, mdB *oauth.Metadata, urlB, accessToken string) {
	b1, b1Key, b1WIT := db.workload(t, "/agent/b1")
	res, err := (&txntoken.Client{TokenEndpoint: mdB.TokenEndpoint, WIT: b1WIT, Key: b1Key, Proof: proof.HTTPSig}).Request(ctx,
		txntoken.Request{Audience: "b.example", Scope: "trip.read", SubjectToken: accessToken, SubjectTokenType: tts.TokenTypeAccessToken, Dialog: "D2-cmd"})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := keys.NewRemoteSet(ctx, mdB.JWKSURI)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := txntoken.NewVerifier(ks, "b.example", txntoken.WithIssuer(urlB)).Verify(ctx, res.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if claims.Dialog() != "D2-cmd" || claims.Sub != "a.example:alice@a.example" || claims.ReqWL != b1.String() {
		t.Fatalf("domain-B Txn-Token %+v", claims)
	}
}

// checkChainingLogs: both issuances are logged, the grant by its hash, and no token
// in full.
func checkChainingLogs(t *testing.T, logs, txn, grant, accessToken string) {
	for _, want := range []string{`"chaining grant issued"`, `"chaining access token issued"`, `"grant_sha256":"` + tokenhash.Of(grant) + `"`} {
		if !strings.Contains(logs, want) {
			t.Fatalf("logs lack %s", want)
		}
	}
	for _, tok := range []string{txn, grant, accessToken} {
		if strings.Contains(logs, tok) {
			t.Fatal("the logs must name tokens by hash only")
		}
	}
}

// chainingBaseYAML starts the chaining configurations the checks read: b.example's
// TTS in development, trusting its WIT issuer by a file that is never opened
// (condBase), with one policy rule.
const chainingBaseYAML = condBase + `    - workload: "wimse://b.example/"
`

// checkConfig runs tts --check-config on yaml.
func checkConfig(t *testing.T, yaml string) error {
	t.Helper()
	return Program.Run(context.Background(), []string{"--config", testkit.WriteTemp(t, "tts.yaml", yaml), "--check-config"}, nil, &testkit.SyncBuffer{}, &testkit.SyncBuffer{}, nil)
}

// The chaining section is strict and checked before anything opens (also by
// --check-config).
func TestChainingConfigErrors(t *testing.T) {
	for _, tc := range []struct{ chaining, want string }{
		{"chaining: {}\n", "as_a, as_b or both"},
		{"chaining:\n  as_a: {peers: [{issuer: https://b}]}\n", "not in chaining.peers"},
		{"chaining:\n  peers: [{issuer: https://b}]\n  as_a: {peers: [{issuer: https://b}]}\n  as_b: {peers: [{issuer: https://b, scopes: [x]}]}\n", "exactly one of jwks_url, jwks_file, metadata"},
		{"chaining:\n  peers: [{issuer: https://b, jwks_url: https://b/jwks, jwks_file: /x}]\n  as_b: {peers: [{issuer: https://b, scopes: [x]}]}\n", "exactly one of jwks_url, jwks_file, metadata"},
		{"chaining:\n  peers: [{issuer: https://b, metadata: true, jwks_file: /x}]\n  as_b: {peers: [{issuer: https://b, scopes: [x]}]}\n", "exactly one of jwks_url, jwks_file, metadata"},
		{"chaining:\n  peers: [{issuer: https://a, metadata: true}]\n  as_b: {peers: [{issuer: https://a}]}\n", "scopes: at least one"},
		{"chaining:\n  peers: [{issuer: https://a, metadata: true}, {issuer: https://c}]\n  as_b: {peers: [{issuer: https://a, scopes: [x]}]}\n", "used by neither"},
		{"chaining:\n  peers: [{issuer: https://b}]\n  as_a: {grant_lifetime: 10m, peers: [{issuer: https://b}]}\n", "grant_lifetime"},
		{"chaining:\n  peers: [{issuer: https://b}]\n  as_a: {peers: [{issuer: https://b, subject: {mode: prefix}}]}\n", "subject"},
		{"chaining:\n  peers: [{issuer: https://b}]\n  as_a: {peers: [{issuer: https://b}]}\nauth:\n  methods: [private_key_jwt]\n", "wit_httpsig or wit_wpt"},
		{"chaining:\n  peers: [{issuer: https://b, jwks: x}]\n  as_a: {peers: [{issuer: https://b}]}\n", "unknown field"},
		{"chaining:\n  peers: [{issuer: https://b}]\n  as_a: {peers: [{issuer: https://b, resources: [api.b.example]}]}\n", "not an absolute URI"},
	} {
		if err := checkConfig(t, chainingBaseYAML+tc.chaining); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: got %v, want %q", tc.chaining, err, tc.want)
		}
	}
	ok := chainingBaseYAML + "chaining:\n  peers: [{issuer: https://a, jwks_file: /x}, {issuer: https://c}]\n  as_a: {peers: [{issuer: https://c}]}\n  as_b: {peers: [{issuer: https://a, scopes: [x]}]}\n"
	if err := checkConfig(t, ok); err != nil {
		t.Fatal(err)
	}
}
