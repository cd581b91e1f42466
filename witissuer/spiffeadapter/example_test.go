package spiffeadapter_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/spiffe/go-spiffe/v2/exp/svid/witsvid"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/witissuer/spiffeadapter"
)

// A go-spiffe workload takes its WIT-SVID from the WIT issuer, and a go-spiffe relying
// party validates it against the issuer's JWKS.
func Example() {
	// In production: witissuer.NewClient with an HTTP client presenting the workload's
	// X.509-SVID (witissuer.ClientTLSConfig); here an issuer on loopback.
	c, jwksURL, stop, err := newIssuer(keys.ES256)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	td := spiffeid.RequireTrustDomainFromString("example.org")

	bundles, err := spiffeadapter.NewJWKSSource(context.Background(), nil, td, jwksURL, 5*time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	var source witsvid.Source = spiffeadapter.NewSVIDSource(c, bundles)
	svid, err := source.GetWITSVIDForID(spiffeid.RequireFromPath(td, "/agents/a1"))
	if err != nil {
		log.Fatal(err)
	}

	// The relying party's side.
	got, err := witsvid.ParseAndValidate(svid.Marshal(), bundles)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.ID, got.PublicKey != nil, svid.PrivateKey != nil)
	// Output: spiffe://example.org/agents/a1 true true
}
