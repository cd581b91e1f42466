package witissuer_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/spiffe/go-spiffe/v2/workloadapi"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// A Go workload authenticates to its WIT issuer with the X.509-SVID its SPIRE agent
// keeps current, and holds a refreshing WIT. It needs an agent, so it is compiled, not
// run (TestClientTLSConfigFromSourceFollowsRotation runs the same against a Workload
// API in the test, interop/spire_test.go against a real SPIRE agent).
func ExampleClientTLSConfigFromSource() {
	ctx := context.Background()
	// SPIFFE_ENDPOINT_SOCKET names the agent's socket; or workloadapi.WithAddr.
	src, err := workloadapi.NewX509Source(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	cfg, err := witissuer.ClientTLSConfigFromSource(src, src, identifier.MustParse("spiffe://example.org/wit-issuer"))
	if err != nil {
		log.Fatal(err)
	}
	// A new handshake per request, so that each presents the current SVID.
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	c, _, err := witissuer.NewClient(ctx, hc, "https://wit-issuer.example.org")
	if err != nil {
		log.Fatal(err)
	}
	wits := c.Source()
	cred, err := wits.Credential(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, _ = cred.WIT, cred.Key.Alg() == keys.ES256
}
