package agent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Agent a1 of trust domain a.example calls agent a2 in dialog D1. The http.Client's
// Transport attaches a1's WIT and the Dialog-Context and signs the request with the key
// the WIT is bound to; a2's dialog.Receiver verifies all of it before its handler runs.
func ExampleTransport() {
	d := newTrustDomain("a.example")
	a1 := identifier.MustParse("wimse://a.example/agent/a1")

	// a2: a receiver in front of its handler. The audience it accepts is its own URL,
	// known once the server listens.
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	defer srv.Close()
	srv.Config.Handler = d.receiver(srv.URL + "/task").Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := dialog.FromRequest(r)
		fmt.Println("a2 verified sender:", v.Sender, "proof:", v.Proof)
		fmt.Println("a2 verified dialog:", v.Context.DLG(), "initiator:", v.Context.Initiator())
	}))

	// a1: its WIT source (here fetching from the domain's issuer; in production from
	// the wit-issuer) and a Transport that signs with it. Responses verifies a signed
	// response, should a2 send one.
	client := &http.Client{Transport: &agent.Transport{
		Source:    d.source(a1),
		Responses: httpsig.NewVerifier(d.validator()),
	}}

	// The dialog travels on the request's context.
	dc, _ := dialog.New("D1", a1)
	req, _ := http.NewRequestWithContext(agent.WithDialog(context.Background(), dc), http.MethodPost, srv.URL+"/task", nil)
	res, err := client.Do(req)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	res.Body.Close()
	fmt.Println("a1 got:", res.Status)
	// Output:
	// a2 verified sender: wimse://a.example/agent/a1 proof: httpsig
	// a2 verified dialog: D1 initiator: wimse://a.example/agent/a1
	// a1 got: 200 OK
}

// trustDomain is a WIT issuer and the trust configuration that trusts its key. The
// Transport signs with the wall clock, so the example keeps the default clocks.
type trustDomain struct {
	issuer *wit.Issuer
	trust  *keys.Trust
}

func newTrustDomain(td string) *trustDomain {
	k, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(k.Public())
	return &trustDomain{
		issuer: wit.NewIssuer("https://"+td+"/wit-issuer", func() *keys.PrivateKey { return k }),
		trust:  keys.NewTrust().AddTrustDomain(td, set),
	}
}

func (d *trustDomain) validator() *wit.Validator { return wit.NewValidator(d.trust) }

// source gives workload id a WIT bound to a key generated for it.
func (d *trustDomain) source(id identifier.ID) wit.Source {
	return wit.NewRefreshingSource(func(_ context.Context, key *keys.PrivateKey) (string, time.Time, error) {
		tok, claims, err := d.issuer.Issue(id, key.Public(), time.Hour)
		if err != nil {
			return "", time.Time{}, err
		}
		return tok, claims.Exp.Time(), nil
	})
}

// receiver verifies HTTP signatures addressed to aud, each nonce once.
func (d *trustDomain) receiver(aud string) *dialog.Receiver {
	rc, err := dialog.NewReceiver(dialog.WithHTTPSignatures(httpsig.NewVerifier(d.validator(),
		httpsig.WithAudiences(aud), httpsig.WithReplay(store.NewMemory()))))
	if err != nil {
		panic(err)
	}
	return rc
}
