package spiffeadapter_test

import (
	"context"
	"crypto"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/exp/bundle/witbundle"
	"github.com/spiffe/go-spiffe/v2/exp/svid/witsvid"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/store"
	"github.com/dialogtrust/dialogtrust/witissuer"
	"github.com/dialogtrust/dialogtrust/witissuer/spiffeadapter"
)

var td = spiffeid.RequireTrustDomainFromString("example.org")

// startIssuer runs a WIT issuer signing with alg whose dev method believes any subject
// under spiffe://example.org/agents/ (the authentication method does not matter here:
// what is tested is what go-spiffe makes of the WITs).
func startIssuer(t testing.TB, alg string) (*witissuer.Client, string) {
	t.Helper()
	c, jwksURL, stop, err := newIssuer(alg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return c, jwksURL
}

func newIssuer(alg string) (*witissuer.Client, string, func(), error) {
	signing, err := keys.Generate(alg)
	if err != nil {
		return nil, "", nil, err
	}
	rot, err := keys.NewStaticRotator(signing, keys.RotationConfig{Alg: alg, Retain: 2 * time.Hour})
	if err != nil {
		return nil, "", nil, err
	}
	dev, err := witissuer.NewDev(nil, []string{"spiffe://example.org/agents/"}, witissuer.DevOptions{})
	if err != nil {
		return nil, "", nil, err
	}
	hs := httptest.NewUnstartedServer(nil)
	srv, err := witissuer.New(witissuer.Config{Issuer: "http://" + hs.Listener.Addr().String(), Keys: rot, Replay: store.NewMemory(),
		Policy: witissuer.Policy{TrustDomains: []string{"example.org"}},
		Routes: []witissuer.Route{{Path: witissuer.PathWIT, Methods: []witissuer.Authenticator{dev}}}})
	if err != nil {
		hs.Close()
		return nil, "", nil, err
	}
	hs.Config.Handler = srv.Handler()
	hs.Start()
	c, md, err := witissuer.NewClient(context.Background(), hs.Client(), hs.URL)
	if err != nil {
		hs.Close()
		return nil, "", nil, err
	}
	return c, md.JWKSURI, hs.Close, nil
}

func getJWKS(t testing.TB, url string) []byte {
	t.Helper()
	_, b := testkit.Get(t, url)
	return b
}

func request(t *testing.T, c *witissuer.Client, sub, cnfAlg string) string {
	t.Helper()
	key, err := keys.Generate(cnfAlg)
	if err != nil {
		t.Fatal(err)
	}
	cc := *c
	cc.Subject = sub
	r, err := cc.Request(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return r.WIT
}

// tamper replaces one character of part i (0 header, 1 payload, 2 signature) of a
// compact JWS by another base64url character.
func tamper(tok string, i int) string {
	parts := strings.Split(tok, ".")
	p := []byte(parts[i])
	pos := len(p) / 2
	if p[pos] == 'A' {
		p[pos] = 'B'
	} else {
		p[pos] = 'A'
	}
	parts[i] = string(p)
	return strings.Join(parts, ".")
}

func TestGoSPIFFEValidatesES256WITs(t *testing.T) {
	c, jwksURL := startIssuer(t, keys.ES256)
	bundle, err := spiffeadapter.BundleFromJWKS(td, getJWKS(t, jwksURL))
	if err != nil {
		t.Fatal(err)
	}
	const sub = "spiffe://example.org/agents/a1"
	tok := request(t, c, sub, keys.ES256)
	svid, err := witsvid.ParseAndValidate(tok, bundle)
	if err != nil {
		t.Fatalf("go-spiffe refused our WIT: %v", err)
	}
	if svid.ID.String() != sub || svid.Marshal() != tok || !bundle.HasWITAuthority(svid.KeyID) {
		t.Fatalf("svid = %+v", svid)
	}

	src, err := spiffeadapter.NewJWKSSource(context.Background(), nil, td, jwksURL, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := witsvid.ParseAndValidate(tok, src); err != nil {
		t.Fatalf("through JWKSSource: %v", err)
	}
	if _, err := src.GetWITBundleForTrustDomain(spiffeid.RequireTrustDomainFromString("other.example")); errcode.CodeOf(err) != errcode.UntrustedIssuer {
		t.Fatalf("other trust domain: %v", err)
	}

	// Another issuer's keys, another trust domain's bundle, and every tampered part fail.
	_, otherJWKS := startIssuer(t, keys.ES256)
	other, err := spiffeadapter.BundleFromJWKS(td, getJWKS(t, otherJWKS))
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]struct {
		tok     string
		bundles witbundle.Source
	}{
		"other issuer's keys":  {tok, other},
		"other trust domain":   {tok, mustBundle(t, spiffeid.RequireTrustDomainFromString("other.example"), getJWKS(t, jwksURL))},
		"tampered header":      {tamper(tok, 0), bundle},
		"tampered payload":     {tamper(tok, 1), bundle},
		"tampered signature":   {tamper(tok, 2), bundle},
		"signature of another": {strings.Join(append(strings.Split(tok, ".")[:2], strings.Split(request(t, c, sub, keys.ES256), ".")[2]), "."), bundle},
		"trailing octets":      {tok + "x", bundle},
	}
	for name, r := range refused {
		if _, err := witsvid.ParseAndValidate(r.tok, r.bundles); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func mustBundle(t *testing.T, td spiffeid.TrustDomain, jwks []byte) *witbundle.Bundle {
	t.Helper()
	b, err := spiffeadapter.BundleFromJWKS(td, jwks)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoSPIFFERefusesEdDSA records what witsvid v2.9.0 accepts: neither an EdDSA
// signature nor an Ed25519 cnf.jwk.
func TestGoSPIFFERefusesEdDSA(t *testing.T) {
	c, jwksURL := startIssuer(t, keys.EdDSA)
	bundle := mustBundle(t, td, getJWKS(t, jwksURL))
	if _, err := witsvid.ParseAndValidate(request(t, c, "spiffe://example.org/agents/a1", keys.ES256), bundle); err == nil || !strings.Contains(err.Error(), "unable to parse") {
		t.Fatalf("EdDSA-signed WIT: %v", err)
	}
	c, jwksURL = startIssuer(t, keys.ES256)
	bundle = mustBundle(t, td, getJWKS(t, jwksURL))
	if _, err := witsvid.ParseAndValidate(request(t, c, "spiffe://example.org/agents/a1", keys.EdDSA), bundle); err == nil || !strings.Contains(err.Error(), `cnf.jwk alg "EdDSA" is not supported`) {
		t.Fatalf("WIT certifying an Ed25519 key: %v", err)
	}
}

func TestSVIDSource(t *testing.T) {
	c, jwksURL := startIssuer(t, keys.ES256)
	bundles, err := spiffeadapter.NewJWKSSource(context.Background(), nil, td, jwksURL, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var src witsvid.Source = spiffeadapter.NewSVIDSource(c, bundles)
	id := spiffeid.RequireFromString("spiffe://example.org/agents/a1")
	svid, err := src.GetWITSVIDForID(id)
	if err != nil {
		t.Fatal(err)
	}
	if svid.ID != id {
		t.Fatalf("ID = %s", svid.ID)
	}
	signer, ok := svid.PrivateKey.(crypto.Signer)
	if !ok {
		t.Fatalf("PrivateKey is %T", svid.PrivateKey)
	}
	if pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(svid.PublicKey) {
		t.Fatal("PrivateKey is not the key cnf.jwk certifies")
	}
	again, err := src.GetWITSVIDForID(id)
	if err != nil || again.Marshal() != svid.Marshal() {
		t.Fatalf("second call fetched again or failed: %v", err)
	}
	other, err := src.GetWITSVIDForID(spiffeid.RequireFromString("spiffe://example.org/agents/a2"))
	if err != nil || other.Marshal() == svid.Marshal() {
		t.Fatalf("another ID: %v", err)
	}
	// The issuer refuses an ID its dev list does not hold; the source passes the code on.
	_, err = src.GetWITSVIDForID(spiffeid.RequireFromString("spiffe://example.org/tools/t1"))
	var e *errcode.Error
	if !errors.As(err, &e) || e.Code != errcode.Unauthenticated {
		t.Fatalf("unlisted ID: %v", err)
	}
}
