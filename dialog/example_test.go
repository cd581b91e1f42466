package dialog_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/dialogtrust/dialogtrust/agent"
	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/wit"
)

// Tool t1 of trust domain a.example puts a Receiver in front of its handler: the
// handler runs only for a request whose WIT, proof and Dialog-Context verified, and reads
// what was verified with dialog.FromRequest. Anything else is answered with a problem
// document carrying a stable code.
func ExampleReceiver_Middleware() {
	d := newExampleDomain("a.example")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := dialog.FromRequest(r)
		fmt.Println("handler: sender", v.Sender, "dialog", v.Context.DLG())
	})

	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	defer srv.Close()
	// The audience is the tool's own URL, from configuration (never from Host).
	rc, err := dialog.NewReceiver(
		dialog.WithHTTPSignatures(httpsig.NewVerifier(d.validator(), httpsig.WithAudiences(srv.URL+"/invoke"), httpsig.WithReplay(store.NewMemory()))),
		dialog.RequireDialog(),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv.Config.Handler = rc.Middleware(handler)

	// Agent a1 calls the tool in dialog D1 through a signing agent.Transport.
	a1 := identifier.MustParse("wimse://a.example/agent/a1")
	signed := &http.Client{Transport: &agent.Transport{Source: d.source(a1), Responses: httpsig.NewVerifier(d.validator())}}
	dc, _ := dialog.New("D1", a1)
	req, _ := http.NewRequestWithContext(agent.WithDialog(context.Background(), dc), http.MethodPost, srv.URL+"/invoke", nil)
	printOutcome(signed.Do(req))

	// The same request without a proof never reaches the handler.
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/invoke", nil)
	dc.Set(req.Header)
	printOutcome(http.DefaultClient.Do(req))
	// Output:
	// handler: sender wimse://a.example/agent/a1 dialog D1
	// 200 OK
	// 401 Unauthorized missing_credential
}

// printOutcome prints the status, and for a refusal the problem document's code.
func printOutcome(res *http.Response, err error) {
	if err != nil {
		fmt.Println("error:", errcode.CodeOf(err))
		return
	}
	defer res.Body.Close()
	if res.StatusCode < 300 {
		fmt.Println(res.Status)
		return
	}
	body, _ := io.ReadAll(res.Body)
	fmt.Println(res.Status, errcode.CodeOf(problem.Read(res.StatusCode, body)))
}

// exampleDomain is a WIT issuer and the trust configuration that trusts its key. The
// agent's Transport signs with the wall clock, so the example keeps the default clocks.
type exampleDomain struct {
	issuer *wit.Issuer
	trust  *keys.Trust
}

func newExampleDomain(td string) *exampleDomain {
	k, _ := keys.Generate(keys.ES256)
	set, _ := keys.NewStaticSet(k.Public())
	return &exampleDomain{
		issuer: wit.NewIssuer("https://"+td+"/wit-issuer", func() *keys.PrivateKey { return k }),
		trust:  keys.NewTrust().AddTrustDomain(td, set),
	}
}

func (d *exampleDomain) validator() *wit.Validator { return wit.NewValidator(d.trust) }

// source gives workload id a WIT bound to a key generated for it, as a workload's
// client of the wit-issuer would.
func (d *exampleDomain) source(id identifier.ID) wit.Source {
	return wit.NewRefreshingSource(func(_ context.Context, key *keys.PrivateKey) (string, time.Time, error) {
		tok, claims, err := d.issuer.Issue(id, key.Public(), time.Hour)
		if err != nil {
			return "", time.Time{}, err
		}
		return tok, claims.Exp.Time(), nil
	})
}
