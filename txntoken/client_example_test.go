package txntoken_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Agent A1 of trust domain a.example asks its TTS for a Txn-Token recording dialog D1,
// with a self_signed subject token for its user, authenticated by its WIT and an HTTP
// signature (the default proof).
func ExampleClient() {
	ctx := context.Background()

	// The trust domain's WIT issuer, and A1's WIT for its key.
	issuerKey, _ := keys.Generate(keys.ES256)
	issuerKeys, _ := keys.NewStaticSet(issuerKey.Public())
	trust := keys.NewTrust().AddTrustDomain("a.example", issuerKeys)
	witIssuer := wit.NewIssuer("https://a.example/wit-issuer", func() *keys.PrivateKey { return issuerKey })
	a1, _ := identifier.Parse("wimse://a.example/agent/a1")
	a1Key, _ := keys.Generate(keys.ES256)
	a1WIT, _, _ := witIssuer.Issue(a1, a1Key.Public(), time.Hour)

	// A TTS for a.example on a loopback server.
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	ttsKey, _ := keys.Generate(keys.ES256)
	replay := store.NewMemory()
	service, err := tts.New(tts.Config{
		Issuer:          issuer,
		TrustDomains:    []string{"a.example"},
		Keys:            keys.NewRing(ttsKey, time.Now),
		Authenticators:  oauth.WIMSEAuthenticators(wit.NewValidator(trust), replay, issuer+tts.PathToken),
		SubjectHandlers: []tts.SubjectTokenHandler{tts.NewSelfSignedHandler([]string{issuer}, tts.SelfSignedOptions{})},
		Replay:          replay,
		Policy:          tts.Policy{Rules: []tts.Rule{{Workload: "wimse://a.example/"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.Config.Handler = service.Handler()
	srv.Start()
	defer srv.Close()

	// The client: the endpoint from the TTS's metadata, A1's credentials.
	md, err := oauth.Discover(ctx, nil, issuer)
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &txntoken.Client{TokenEndpoint: md.TokenEndpoint, WIT: a1WIT, Key: a1Key}
	subject, _ := txntoken.NewSelfSignedToken(a1Key, a1, "alice@a.example", md.Issuer, "trip.read", 5*time.Minute, time.Now())
	res, err := client.Request(ctx, txntoken.Request{
		Audience: "a.example", Scope: "trip.read", Dialog: "D1",
		SubjectToken: subject, SubjectTokenType: oauth.TokenTypeSelfSigned,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.IssuedTokenType, res.TokenType, res.Scope)
	// Output: urn:ietf:params:oauth:token-type:txn_token N_A trip.read
}
