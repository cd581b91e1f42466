package interop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/interop/internal/hydra"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// The dialogs of Figure 5: D1 in a.example, D2 the linked dialog in b.example. Long
// and distinctive, so that finding D1 in what reaches b.example cannot be chance.
const (
	dialogD1 = "figure5.D1.original-dialog.a-example"
	dialogD2 = "figure5.D2.linked-dialog.b-example"
)

// Hydra's OAuth clients in b.example, registered through its admin API.
const (
	// hydraAgentsClient is how a.example's agents authenticate to Hydra when they
	// redeem AS A's grants: fosite requires client authentication for jwt-bearer.
	hydraAgentsClient = "a-example-agents"
	// hydraBatchClient is a b.example service with client credentials of its own.
	hydraBatchClient = "b-example-batch"
)

// hydraDomains is the two trust domains of Figure 5 with Ory Hydra as AS B: one
// development wit-issuer for both domains' workloads, TTS A (a.example, also AS A),
// Hydra (b.example's AS) and TTS B (b.example), each a real process on loopback.
type hydraDomains struct {
	hydra            *hydra.Server
	ttsA, ttsB       *oauth.Metadata
	witURL           string
	agentsSecret     string
	batchSecret      string
	asAIssuerAsAudID string // AS A's name of a peer whose grants carry Hydra's issuer as aud
}

func startHydraDomains(t *testing.T) *hydraDomains {
	t.Helper()
	ctx := context.Background()
	hydraBin := proc.Binary(t, hydra.EnvBinary)
	bin := proc.BuildBinaries(t, "github.com/dialogtrust/dialogtrust/cmd/tts", "github.com/dialogtrust/dialogtrust/cmd/wit-issuer")
	dir := t.TempDir()
	d := &hydraDomains{agentsSecret: randomSecret(t), batchSecret: randomSecret(t), asAIssuerAsAudID: "hydra-by-issuer.b.example"}

	// The development wit-issuer, for a.example's agents and b.example's services.
	d.witURL = startDevWITIssuer(t, bin, dir, "a.example", "b.example")

	d.hydra = hydra.Start(t, hydraBin)

	// TTS A is also AS A. Hydra's jwt-bearer handler accepts only its token endpoint
	// URL as aud, so the peer's issuer (the grant's aud) is that URL, and a.example's
	// agents name it by the logical name b.example-as. The second peer is the same Hydra
	// named by its issuer identifier, which our own AS B would accept as aud but Hydra
	// does not: the refusal test uses it.
	ttsACfg := proc.WriteFile(t, dir, "tts-a.yaml", devTTSConfig("a.example", d.witURL)+selfSignedPolicyYAML+fmt.Sprintf(`chaining:
  peers:
    - issuer: %[1]q
      audiences: [b.example-as]
    - issuer: %[2]q
      audiences: [%[3]q]
  as_a:
    grant_lifetime: 60s
    peers:
      - issuer: %[1]q
        scopes: [trip.read]
        workloads: ["wimse://a.example/agent/"]
      - issuer: %[2]q
        scopes: [trip.read]
        workloads: ["wimse://a.example/agent/"]
log: {level: info}
`, d.hydra.TokenURL, d.hydra.Issuer, d.asAIssuerAsAudID))
	d.ttsA = startTTS(t, bin, dir, "tts-a", ttsACfg)

	// TTS B takes Hydra's JWT access tokens (typ JWT, RS256, keys from Hydra's JWKS)
	// as subject tokens. A jwt-bearer access token's aud is the grant's (Hydra's token
	// URL); a client-credentials one's is the audience the client asked for.
	ttsBCfg := proc.WriteFile(t, dir, "tts-b.yaml", devTTSConfig("b.example", d.witURL)+fmt.Sprintf(`subject_tokens:
  jwt_issuers:
    - issuer: %[1]q
      jwks_url: %[2]q
      types: [access_token]
      typ: JWT
      audiences: [%[3]q, b.example]
      subject_prefix: "hydra:"
      rsa: {default_alg: RS256}
policy:
  lifetime: 5m
  rules:
    - workload: "wimse://b.example/"
      subject_token_types: [access_token]
      details: ["*"]
log: {level: info}
`, d.hydra.Issuer, d.hydra.JWKSURL, d.hydra.TokenURL))
	d.ttsB = startTTS(t, bin, dir, "tts-b", ttsBCfg)

	// Hydra's side of the trust relationship: every signing key AS A publishes, for
	// assertions of AS A about alice@a.example, limited to trip.read.
	jwks := fetchJWKS(t, d.ttsA.JWKSURI)
	if len(jwks) == 0 {
		t.Fatal("TTS A publishes no keys")
	}
	for _, k := range jwks {
		if err := d.hydra.Trust(ctx, hydra.TrustIssuer{Issuer: d.ttsA.Issuer, Subject: "alice@a.example", Scope: []string{"trip.read"},
			JWK: k, ExpiresAt: time.Now().Add(time.Hour).UTC().Truncate(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.hydra.CreateClient(ctx, hydra.Client{ID: hydraAgentsClient, Secret: d.agentsSecret, GrantTypes: []string{oauth.GrantTypeJWTBearer},
		Scope: "trip.read", TokenEndpointAuthMethod: "client_secret_basic", AccessTokenStrategy: "jwt"}); err != nil {
		t.Fatal(err)
	}
	if err := d.hydra.CreateClient(ctx, hydra.Client{ID: hydraBatchClient, Secret: d.batchSecret, GrantTypes: []string{"client_credentials"},
		Scope: "trip.read", Audience: []string{"b.example"}, TokenEndpointAuthMethod: "client_secret_basic", AccessTokenStrategy: "jwt"}); err != nil {
		t.Fatal(err)
	}
	return d
}

// startDevWITIssuer runs the wit-issuer binary in development mode for the trust
// domains, issuing a WIT to any workload of theirs that asks (auth.dev), and returns
// its URL.
func startDevWITIssuer(t *testing.T, bin, dir string, domains ...string) string {
	t.Helper()
	prefixes := make([]string, len(domains))
	for i, d := range domains {
		prefixes[i] = fmt.Sprintf("%q", "wimse://"+d+"/")
	}
	cfg := proc.WriteFile(t, dir, "wit-issuer.yaml", fmt.Sprintf(`listen: 127.0.0.1:0
trust_domains: [%s]
keys: {alg: ES256}
store: {type: memory}
auth:
  dev:
    prefixes: [%s]
routes:
  - path: /v1/wit
    methods: [dev]
log: {level: info}
`, strings.Join(domains, ", "), strings.Join(prefixes, ", ")))
	p := proc.StartProcess(t, "wit-issuer", filepath.Join(bin, "wit-issuer"), dir, []string{"--config", cfg}, nil)
	return strings.Fields(p.WaitLine(t, "wit-issuer listening on ", 30*time.Second))[0]
}

// devTTSConfig is the head of a development TTS configuration for domain: its keys
// and store in memory, and its workloads authenticated with the WITs of the
// development wit-issuer at witURL (startDevWITIssuer).
func devTTSConfig(domain, witURL string) string {
	return fmt.Sprintf(`development: true
listen: 127.0.0.1:0
trust_domains: [%[1]s]
keys: {alg: ES256}
store: {type: memory}
wits:
  - trust_domain: %[1]s
    jwks_url: %[2]s/.well-known/jwks.json
jwks_retry: 1s
auth:
  methods: [wit_httpsig, wit_wpt]
`, domain, witURL)
}

// startTTS runs the tts binary with cfg, waits for /readyz, and returns its metadata.
func startTTS(t *testing.T, bin, dir, name, cfg string) *oauth.Metadata {
	t.Helper()
	p := proc.StartProcess(t, name, filepath.Join(bin, "tts"), dir, []string{"--config", cfg}, nil)
	u := strings.Fields(p.WaitLine(t, "tts listening on ", 30*time.Second))[0]
	p.WaitHTTP(t, u+tts.PathReadyz, 30*time.Second)
	md, err := oauth.Discover(context.Background(), nil, u)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

func fetchJWKS(t *testing.T, url string) []json.RawMessage {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	return set.Keys
}

func randomSecret(t *testing.T) string {
	t.Helper()
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// workload is a WIT of the development wit-issuer and its key.
type workload struct {
	id  identifier.ID
	wit string
	key *keys.PrivateKey
}

func (d *hydraDomains) workload(t *testing.T, id string) workload {
	t.Helper()
	wit, key := devWorkload(t, d.witURL, id)
	return workload{id: identifier.MustParse(id), wit: wit, key: key}
}

// chainingClient is the agent's chaining.Client; its transport authenticates it to
// Hydra's token endpoint (and only there) as hydraAgentsClient.
func (d *hydraDomains) chainingClient(w workload) *chaining.Client {
	return &chaining.Client{WIT: w.wit, Key: w.key, HTTPClient: &http.Client{Timeout: 10 * time.Second,
		Transport: &hydra.BasicAuth{TokenURL: d.hydra.TokenURL, ClientID: hydraAgentsClient, Secret: d.agentsSecret}}}
}

// txnTokenA is A2's Txn-Token of dialog D1 in a.example, for alice.
func (d *hydraDomains) txnTokenA(t *testing.T, a2 workload, dialog string) string {
	t.Helper()
	self, err := txntoken.NewSelfSignedToken(a2.key, a2.id, "alice@a.example", d.ttsA.Issuer, "trip.read trip.book", 5*time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := &txntoken.Client{TokenEndpoint: d.ttsA.TokenEndpoint, WIT: a2.wit, Key: a2.key}
	resp, err := c.Request(context.Background(), txntoken.Request{Audience: "a.example", Scope: "trip.read trip.book",
		SubjectToken: self, SubjectTokenType: oauth.TokenTypeSelfSigned, Dialog: dialog})
	if err != nil {
		t.Fatal(err)
	}
	return resp.AccessToken
}

// decodeJWT returns a JWT's header and claims, unverified, for inspection.
func decodeJWT(t *testing.T, raw string) (*jose.Token, map[string]any) {
	t.Helper()
	tok, err := jose.Parse(raw, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(tok.Payload, &claims); err != nil {
		t.Fatal(err)
	}
	return tok, claims
}

func verifyTxnTokenB(t *testing.T, md *oauth.Metadata, raw string) *txntoken.Claims {
	t.Helper()
	ctx := context.Background()
	ks, err := keys.NewRemoteSet(ctx, md.JWKSURI)
	if err != nil {
		t.Fatal(err)
	}
	c, err := txntoken.NewVerifier(ks, "b.example", txntoken.WithIssuer(md.Issuer)).Verify(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHydra runs Figure 5 of dialog-binding section 11 with Ory Hydra v2.3.0 as AS B:
// A2 turns its Txn-Token of D1 into a JWT authorization grant at AS A (TTS A), Hydra
// redeems the grant (RFC 7523, trust relationship registered through its admin API)
// for a JWT access token of b.example, and B1 exchanges that access token at TTS B for
// a Txn-Token of the linked dialog D2. Also: Hydra's client-credentials tokens as
// subject tokens, and Hydra's refusals as chaining.Client reports them.
func TestHydra(t *testing.T) {
	d := startHydraDomains(t)
	ctx := context.Background()
	a2 := d.workload(t, "wimse://a.example/agent/a2")
	b1 := d.workload(t, "wimse://b.example/service/b1")
	ttsB := &txntoken.Client{TokenEndpoint: d.ttsB.TokenEndpoint, WIT: b1.wit, Key: b1.key}

	t.Run("Figure5", func(t *testing.T) { d.figure5Linked(t) })

	t.Run("GrantAndAccessToken", func(t *testing.T) {
		txnA := d.txnTokenA(t, a2, dialogD1)
		cc := d.chainingClient(a2)
		// Step 1: the grant, for Hydra (by its logical name at AS A).
		g, err := cc.Grant(ctx, chaining.GrantParams{TokenEndpoint: d.ttsA.TokenEndpoint, TxnToken: txnA, Audience: "b.example-as", Scope: "trip.read"})
		if err != nil {
			t.Fatal(err)
		}
		gt, gc := decodeJWT(t, g.AccessToken)
		if gt.Typ != chaining.GrantTyp || gc["iss"] != d.ttsA.Issuer || gc["sub"] != "alice@a.example" || gc["aud"] != d.hydra.TokenURL {
			t.Fatalf("grant header typ %q, claims %v", gt.Typ, gc)
		}
		// Step 2: Hydra redeems it for a JWT access token of b.example.
		at, err := cc.Redeem(ctx, d.hydra.TokenURL, g.AccessToken, "trip.read")
		if err != nil {
			t.Fatal(err)
		}
		ht, hc := decodeJWT(t, at.AccessToken)
		if ht.Alg != "RS256" || ht.Typ != "JWT" || hc["iss"] != d.hydra.Issuer || hc["sub"] != "alice@a.example" ||
			hc["client_id"] != hydraAgentsClient || hc["scope"] != "trip.read" || at.Scope != "trip.read" {
			t.Fatalf("Hydra's access token: header alg %q typ %q, claims %v, response scope %q", ht.Alg, ht.Typ, hc, at.Scope)
		}
		if aud, _ := hc["aud"].([]any); !slices.Contains(aud, any(d.hydra.TokenURL)) {
			t.Fatalf("Hydra's access token aud %v: expected the grant's (its token URL)", hc["aud"])
		}
		// Domain separation (section 13): neither D1 nor the Txn-Token of a.example, nor
		// its tctx, reaches b.example in the grant or in Hydra's token.
		for name, tok := range map[string]string{"grant": g.AccessToken, "Hydra's access token": at.AccessToken} {
			_, c := decodeJWT(t, tok)
			payload, _ := json.Marshal(c)
			if strings.Contains(string(payload), dialogD1) || strings.Contains(string(payload), txnA) || c["tctx"] != nil || c["txn"] != nil {
				t.Fatalf("%s carries domain A's dialog or Txn-Token: %s", name, payload)
			}
		}
		// Steps 3-4: A2 hands the access token to B1 with the proposal of D2; B1
		// exchanges it at TTS B.
		resp, err := ttsB.Request(ctx, txntoken.Request{Audience: "b.example", Scope: "trip.read", SubjectToken: at.AccessToken,
			SubjectTokenType: oauth.TokenTypeAccessToken, Dialog: dialogD2})
		if err != nil {
			t.Fatal(err)
		}
		c := verifyTxnTokenB(t, d.ttsB, resp.AccessToken)
		if c.Dialog() != dialogD2 || c.Sub != "hydra:alice@a.example" || c.Scope != "trip.read" || c.ReqWL != b1.id.String() {
			t.Fatalf("B1's Txn-Token: %+v", c)
		}
		if err := txntoken.DialogMatches(c, dialogD1); errcode.CodeOf(err) != errcode.DialogMismatch {
			t.Fatalf("B1's Txn-Token matched D1: %v", err)
		}
	})

	t.Run("ClientCredentials", func(t *testing.T) {
		tok := func(audience string) string {
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &hydra.BasicAuth{TokenURL: d.hydra.TokenURL, ClientID: hydraBatchClient, Secret: d.batchSecret}}
			form := "grant_type=client_credentials&scope=trip.read"
			if audience != "" {
				form += "&audience=" + audience
			}
			res, err := hc.Post(d.hydra.TokenURL, "application/x-www-form-urlencoded", strings.NewReader(form))
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var out oauth.TokenResponse
			if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusOK || out.AccessToken == "" {
				t.Fatalf("client credentials at Hydra: HTTP %d, %v", res.StatusCode, err)
			}
			return out.AccessToken
		}
		resp, err := ttsB.Request(ctx, txntoken.Request{Audience: "b.example", Scope: "trip.read", SubjectToken: tok("b.example"),
			SubjectTokenType: oauth.TokenTypeAccessToken, Dialog: "D3"})
		if err != nil {
			t.Fatal(err)
		}
		if c := verifyTxnTokenB(t, d.ttsB, resp.AccessToken); c.Sub != "hydra:"+hydraBatchClient || c.Dialog() != "D3" || c.Scope != "trip.read" {
			t.Fatalf("Txn-Token of a client-credentials subject: %+v", c)
		}
		// Without audience Hydra's token names no one (aud []): TTS B refuses it.
		_, err = ttsB.Request(ctx, txntoken.Request{Audience: "b.example", Scope: "trip.read", SubjectToken: tok(""),
			SubjectTokenType: oauth.TokenTypeAccessToken})
		if errcode.CodeOf(err) != errcode.AudienceMismatch {
			t.Fatalf("a token for no audience: %v", err)
		}
	})

	// Hydra's refusals reach the caller of chaining.Client as Hydra wrote them: a
	// foreign AS sends no dialogtrust code, so the code is token_refused, the kind failed
	// (HTTP 400), and the detail carries Hydra's error and error_description.
	refused := func(t *testing.T, err error, oauthErr string, description string) {
		t.Helper()
		if errcode.CodeOf(err) != errcode.TokenRefused || errcode.KindOf(err) != errcode.Failed {
			t.Fatalf("code %s, kind %s: %v", errcode.CodeOf(err), errcode.KindOf(err), err)
		}
		if !strings.Contains(err.Error(), "token endpoint: "+oauthErr+": ") || !strings.Contains(err.Error(), description) {
			t.Fatalf("Hydra's error %s (%q) not visible: %v", oauthErr, description, err)
		}
	}
	t.Run("ReplayedJTI", func(t *testing.T) {
		cc := d.chainingClient(a2)
		g, err := cc.Grant(ctx, chaining.GrantParams{TokenEndpoint: d.ttsA.TokenEndpoint, TxnToken: d.txnTokenA(t, a2, "D4"), Audience: "b.example-as"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cc.Redeem(ctx, d.hydra.TokenURL, g.AccessToken, "trip.read"); err != nil {
			t.Fatal(err)
		}
		_, err = cc.Redeem(ctx, d.hydra.TokenURL, g.AccessToken, "trip.read")
		refused(t, err, "jti_known", "The jti was already used.")
	})
	// Hydra does not read requested_cnf: a grant AS A bound to A2's WIT key is redeemed
	// for any caller holding the Hydra client's secret. The binding at Hydra is to its
	// OAuth client, not to the workload (docs/hydra.md); this documents it, and fails
	// if a later Hydra starts enforcing the claim.
	t.Run("RequestedCnfNotEnforced", func(t *testing.T) {
		g, err := d.chainingClient(a2).Grant(ctx, chaining.GrantParams{TokenEndpoint: d.ttsA.TokenEndpoint, TxnToken: d.txnTokenA(t, a2, "D6"), Audience: "b.example-as"})
		if err != nil {
			t.Fatal(err)
		}
		a3 := d.workload(t, "wimse://a.example/agent/a3")
		if _, err := d.chainingClient(a3).Redeem(ctx, d.hydra.TokenURL, g.AccessToken, "trip.read"); err != nil {
			t.Fatalf("another workload's redemption: %v", err)
		}
	})
	t.Run("AudienceNotTokenURL", func(t *testing.T) {
		cc := d.chainingClient(a2)
		g, err := cc.Grant(ctx, chaining.GrantParams{TokenEndpoint: d.ttsA.TokenEndpoint, TxnToken: d.txnTokenA(t, a2, "D5"), Audience: d.asAIssuerAsAudID})
		if err != nil {
			t.Fatal(err)
		}
		if _, c := decodeJWT(t, g.AccessToken); c["aud"] != d.hydra.Issuer {
			t.Fatalf("grant aud %v", c["aud"])
		}
		_, err = cc.Redeem(ctx, d.hydra.TokenURL, g.AccessToken, "trip.read")
		// Hydra's description is RFC 6749's text of invalid_grant followed by fosite's hint
		// (which names the token URL); the client keeps the first 256 octets of it.
		refused(t, err, "invalid_grant", "The provided authorization grant (e.g., authorization code, resource owner credentials) or refresh token is invalid")
		if !d.hydra.Process.WaitOutput(`MUST contain an \"aud\" (audience) claim containing a value \"`+d.hydra.TokenURL+`\"`, 30*time.Second) {
			t.Fatal("Hydra's log does not give the reason: the aud is not its token URL")
		}
	})
}

// witSource is id's WIT source at the development wit-issuer.
func (d *hydraDomains) witSource(t *testing.T, id string) wit.Source {
	t.Helper()
	wc, _, err := witissuer.NewClient(context.Background(), nil, d.witURL)
	if err != nil {
		t.Fatal(err)
	}
	wc.Subject = id
	return wc.Source()
}

// wits validates the WITs of both domains (one development wit-issuer signs them).
func (d *hydraDomains) wits(ctx context.Context) *wit.Validator {
	trust := keys.NewTrust()
	for _, td := range []string{"a.example", "b.example"} {
		trust.AddTrustDomain(td, keys.NewLazyRemoteSet(ctx, d.witURL+"/.well-known/jwks.json", time.Second, time.Now))
	}
	return wit.NewValidator(trust)
}

// atB1 is one request B1 received, as received, and its step 4.
type atB1 struct {
	v       *dialog.Verified
	bearer  string
	headers http.Header
	body    []byte
	txn     *oauth.TokenResponse
	err     error
}

// startB1 runs B1 of b.example (wimse://b.example/service/b1): a dialog.Receiver with
// a Registry that verifies the sender's WIT and HTTP signature (audience B1's URL) and
// the Dialog-Context from its initiator, creates the linked dialog, signs its
// responses, and then exchanges the Bearer access token at TTS B for a Txn-Token of
// the dialog (step 4; Hydra's access tokens are subject tokens there). It returns B1's
// URL and what it received, one value per request.
func (d *hydraDomains) startB1(t *testing.T, wits *wit.Validator, b1Src wit.Source) (string, <-chan atB1) {
	t.Helper()
	got := make(chan atB1, 8)
	b1 := httptest.NewUnstartedServer(nil)
	b1URL := "http://" + b1.Listener.Addr().String() + "/task"
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(wits, httpsig.WithAudiences(b1URL), httpsig.WithReplay(store.NewMemory()))),
		dialog.WithRegistry(dialog.NewRegistry(store.NewMemoryRecords())),
		dialog.WithResponseSigner(func(ctx context.Context) (*httpsig.Signer, error) {
			cred, err := b1Src.Credential(ctx)
			if err != nil {
				return nil, err
			}
			return httpsig.NewSigner(cred.Key, cred.WIT), nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	b1TTS := &txntoken.Client{TokenEndpoint: d.ttsB.TokenEndpoint, WITSource: b1Src, Proof: proof.HTTPSig}
	b1.Config.Handler = rc.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := atB1{v: dialog.FromRequest(r), headers: r.Header.Clone()}
		res.body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		switch {
		case res.v == nil || res.v.Context == nil || !res.v.Sender.Equal(res.v.Context.Initiator()):
			res.err = fmt.Errorf("no Dialog-Context from its initiator: %+v", res.v)
		case res.v.Signature == nil || !res.v.Signature.Covers(`"authorization"`):
			res.err = fmt.Errorf("the access token is not covered by the signature")
		case !strings.EqualFold(scheme, "Bearer") || tok == "":
			res.err = fmt.Errorf("no bearer token")
		default:
			res.bearer = tok
			res.txn, res.err = b1TTS.Request(r.Context(), txntoken.Request{Audience: "b.example", Scope: "trip.read", SubjectToken: tok,
				SubjectTokenType: oauth.TokenTypeAccessToken, Dialog: res.v.Context.DLG()})
		}
		got <- res
		w.Header().Set("Content-Type", "application/json")
		if res.err != nil {
			w.WriteHeader(http.StatusForbidden)
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	b1.Start()
	t.Cleanup(b1.Close)
	return b1URL, got
}

// figure5Linked runs Figure 5 with the agents' own code: A2's agent.Linker (steps 1-3:
// grant at AS A, redemption at Hydra, the first request of D2 to B1 with a
// Dialog-Context proposing D2, Hydra's access token as Bearer, signed with A2's WIT),
// and B1, a dialog.Receiver that verifies A2's signature and Dialog-Context and then
// exchanges the access token at TTS B (step 4). B1 cannot use agent.LinkAcceptor:
// that verifies our AS B's access tokens (cnf.jkt bound to the sender's WIT key,
// client_id the sender), and Hydra's carry neither.
func (d *hydraDomains) figure5Linked(t *testing.T) {
	ctx := context.Background()
	wits := d.wits(ctx)
	a2ID, b1ID := identifier.MustParse("wimse://a.example/agent/a2"), "wimse://b.example/service/b1"
	a2Src, b1Src := d.witSource(t, a2ID.String()), d.witSource(t, b1ID)
	b1URL, got := d.startB1(t, wits, b1Src)

	// A2 holds a Txn-Token of D1 (domain A).
	cred, err := a2Src.Credential(ctx)
	if err != nil {
		t.Fatal(err)
	}
	txnA := d.txnTokenA(t, workload{id: a2ID, wit: cred.WIT, key: cred.Key}, dialogD1)
	l := &agent.Linker{Self: a2ID,
		Transport: &agent.Transport{Source: a2Src, RequireSignedResponse: true, Responses: httpsig.NewVerifier(wits)},
		Tokens: &chaining.Client{HTTPClient: &http.Client{Timeout: 10 * time.Second,
			Transport: &hydra.BasicAuth{TokenURL: d.hydra.TokenURL, ClientID: hydraAgentsClient, Secret: d.agentsSecret}}}}
	first, err := http.NewRequest(http.MethodPost, b1URL, strings.NewReader(`{"task":"book a hotel in domain B"}`))
	if err != nil {
		t.Fatal(err)
	}
	first.Header.Set("Content-Type", "application/json")
	linked, err := l.Link(ctx, agent.LinkConfig{TxnToken: txnA, GrantEndpoint: d.ttsA.TokenEndpoint, PeerIssuer: "b.example-as",
		PeerTokenEndpoint: d.hydra.TokenURL, PeerTrustDomain: "b.example", Scope: "trip.read", Request: first, Dialog: dialogD2})
	if err != nil {
		t.Fatal(err)
	}
	linked.Response.Body.Close()
	var res atB1
	select {
	case res = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("B1 received no request")
	}
	if res.err != nil || linked.Response.StatusCode != http.StatusOK {
		t.Fatalf("B1: HTTP %d, %v", linked.Response.StatusCode, res.err)
	}
	if res.bearer != linked.AccessToken || !res.v.Sender.Equal(a2ID) || res.v.Context.DLG() != dialogD2 || linked.Dialog.DLG() != dialogD2 {
		t.Fatalf("B1 verified sender %s, dialog %s", res.v.Sender, res.v.Context.DLG())
	}
	// Nothing of D1 reached B1 (the linker's guard refuses it too; this checks what
	// was received).
	for name, vals := range res.headers {
		for _, v := range vals {
			if strings.Contains(v, txnA) || strings.Contains(v, dialogD1) {
				t.Fatalf("B1 received %s of domain A: %s", name, v)
			}
		}
	}
	c := verifyTxnTokenB(t, d.ttsB, res.txn.AccessToken)
	if c.Dialog() != dialogD2 || c.Sub != "hydra:alice@a.example" || c.Scope != "trip.read" || c.ReqWL != b1ID {
		t.Fatalf("B1's Txn-Token: %+v", c)
	}
}
