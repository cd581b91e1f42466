package wit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

// algLessJWKS is the JWK Set of k as an operator or an Identity Server may publish it:
// without "alg".
func algLessJWKS(t *testing.T, k *keys.PublicKey) []byte {
	t.Helper()
	b, _ := json.Marshal(k)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "alg")
	doc, _ := json.Marshal(map[string]any{"keys": []any{m}})
	return doc
}

// creds-02 section 3: trust anchors come from trust configuration, a JWKS file or a JWKS
// URL configured out of band. An issuer key listed there without "alg" is pinned to the
// one algorithm its type admits (P-256: ES256; Ed25519: EdDSA, which also verifies a WIT
// signed under the name Ed25519), and the WITs it signed validate.
func TestCreds02Sec3_TrustAnchorWithoutAlg(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	for _, alg := range []string{keys.ES256, keys.EdDSA, keys.Ed25519} {
		d := testkit.NewDomain(t, "a.example", alg, clock)
		w := d.Workload(t, "/agent/a1", keys.ES256)
		doc := algLessJWKS(t, d.Key.Public())
		file := filepath.Join(t.TempDir(), "trust.jwks")
		if err := os.WriteFile(file, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		fromFile, err := keys.LoadJWKSFile(file)
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(doc) }))
		fromURL, err := keys.NewRemoteSet(t.Context(), srv.URL)
		if err != nil {
			srv.Close()
			t.Fatalf("%s: %v", alg, err)
		}
		for name, set := range map[string]keys.KeySet{"file": fromFile, "url": fromURL} {
			k, err := set.LookupKey(context.Background(), d.Key.KID())
			if err != nil || keys.FamilyOf(k.Alg()) != keys.FamilyOf(alg) {
				t.Fatalf("%s %s: key %v %v", alg, name, k, err)
			}
			v := wit.NewValidator(keys.NewTrust().AddTrustDomain("a.example", set), wit.WithClock(clock.Now))
			if _, err := v.Validate(context.Background(), w.WIT); err != nil {
				t.Errorf("%s %s: a WIT under an alg-less anchor: %v", alg, name, err)
			}
		}
		srv.Close()
	}
}
