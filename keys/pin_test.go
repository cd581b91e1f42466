package keys_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/lestrrat-go/jwx/v2/jwk"
)

// withoutAlg is the public JWK of k as a trust configuration would list it without
// "alg", with the members given in extra added (or, with a nil value, removed).
func withoutAlg(t testing.TB, k *keys.PublicKey, extra map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "alg")
	for name, v := range extra {
		if v == nil {
			delete(m, name)
		} else {
			m[name] = v
		}
	}
	return m
}

func wantRefused(t *testing.T, what string, err error, code errcode.Code, reason string) {
	t.Helper()
	if errcode.CodeOf(err) != code {
		t.Errorf("%s: got %v (%v), want %s", what, errcode.CodeOf(err), err, code)
		return
	}
	if !strings.Contains(err.Error(), reason) {
		t.Errorf("%s: %q does not name the rule (%q)", what, err, reason)
	}
}

// creds-02 section 3: the trust anchors of a trust domain are configured out of band, and
// the draft's Identity Server key carries a kid that is not a thumbprint ("June 5") and
// no "alg". An EC P-256 key admits exactly one algorithm, so it is pinned to ES256: it
// verifies an ES256 token, and a token labelled EdDSA under the same kid is refused.
func TestCreds02Sec3_IdentityServerKeyWithoutAlgIsES256(t *testing.T) {
	signer, _ := keys.Generate(keys.ES256)
	signer = signer.WithKID("June 5")
	set, err := keys.ParseJWKS(jwks(t, withoutAlg(t, signer.Public(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	k, err := set.LookupKey(context.Background(), "June 5")
	if err != nil {
		t.Fatal(err)
	}
	if k.Alg() != keys.ES256 || k.Family() != keys.FamilyES256 || k.Thumbprint() != signer.Public().Thumbprint() {
		t.Fatalf("pinned to %q (%v), thumbprint %s", k.Alg(), k.Family(), k.Thumbprint())
	}
	opts := jose.Options{Typ: "wit+jwt"}
	tok, err := jose.Sign("wit+jwt", signer, true, []byte(`{"sub":"wimse://example.com/specific-workload"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jose.Verify(context.Background(), tok, opts, set); err != nil {
		t.Fatalf("an ES256 token under the pinned key: %v", err)
	}
	ed, _ := keys.Generate(keys.EdDSA)
	forged, _ := jose.Sign("wit+jwt", ed.WithKID("June 5"), true, []byte(`{"sub":"wimse://example.com/specific-workload"}`))
	_, err = jose.Verify(context.Background(), forged, opts, set)
	wantRefused(t, "an EdDSA-labelled token", err, errcode.UnsupportedAlg, `does not match the key's "ES256"`)
}

// RFC 8037 section 3.1 names the Ed25519 signature algorithm EdDSA: an OKP Ed25519 key
// without "alg" (here RFC 8037 appendix A.2's public key, verbatim) is pinned to it.
func TestCreds02Sec3_Ed25519KeyWithoutAlgIsEdDSA(t *testing.T) {
	k, err := keys.ParsePublicJWK([]byte(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`))
	if err != nil {
		t.Fatal(err)
	}
	if k.Alg() != keys.EdDSA || k.Family() != keys.FamilyEd25519 || k.Thumbprint() != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("pinned to %q (%v), thumbprint %s", k.Alg(), k.Family(), k.Thumbprint())
	}
	signer, _ := keys.Generate(keys.EdDSA)
	set, err := keys.ParseJWKS(jwks(t, withoutAlg(t, signer.Public(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := jose.Sign("wit+jwt", signer, true, []byte(`{}`))
	if _, err := jose.Verify(context.Background(), tok, jose.Options{Typ: "wit+jwt"}, set); err != nil {
		t.Fatalf("an EdDSA token under the pinned key: %v", err)
	}
	ec, _ := keys.Generate(keys.ES256)
	forged, _ := jose.Sign("wit+jwt", ec.WithKID(signer.KID()), true, []byte(`{}`))
	_, err = jose.Verify(context.Background(), forged, jose.Options{Typ: "wit+jwt"}, set)
	wantRefused(t, "an ES256-labelled token", err, errcode.UnsupportedAlg, "does not match")
}

// identity-chaining section 2.3: AS B trusts AS A's keys through the jwks_uri of AS A's
// metadata; the draft's AS A key is an EC P-256 key with a kid and no "alg". Read through
// a RemoteSet, it is pinned to ES256 as a JWKS file's key is.
func TestChaining2_3_PeerASKeyWithoutAlgIsES256(t *testing.T) {
	asA, _ := keys.Generate(keys.ES256)
	asA = asA.WithKID("16")
	doc := jwks(t, withoutAlg(t, asA.Public(), map[string]any{"use": "sig"}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(doc)
	}))
	defer srv.Close()
	rs, err := keys.NewRemoteSet(t.Context(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	grant, _ := jose.Sign("jwt", asA, true, []byte(`{"iss":"https://as.a.example/auth"}`))
	tok, err := jose.Verify(context.Background(), grant, jose.Options{Typ: "jwt"}, rs)
	if err != nil || tok.Alg != keys.ES256 {
		t.Fatalf("a grant signed with AS A's key: %v", err)
	}
	lazy := keys.NewLazyRemoteSet(t.Context(), srv.URL, 0, nil)
	if k, err := lazy.LookupKey(context.Background(), "16"); err != nil || k.Alg() != keys.ES256 {
		t.Fatalf("lazy set: %v %v", k, err)
	}
}

// RSA admits several algorithms: a key without "alg" is refused in a set not opened to
// RSA, and takes the configured default in one that is (keys.RSAPolicy).
func TestRSAKeyWithoutAlgNeedsRSASet(t *testing.T) {
	k := mustRSA(t, 2048)
	doc := jwks(t, rsaJWK(t, k, "idp-1", "", "sig"))
	_, err := keys.ParseJWKS(doc)
	wantRefused(t, "ParseJWKS", err, errcode.InvalidKey, "opened to RSA")
	_, err = keys.ParsePublicJWK([]byte(mustJSON(rsaJWK(t, k, "idp-1", "", ""))))
	wantRefused(t, "ParsePublicJWK", err, errcode.InvalidKey, "opened to RSA")
	_, err = keys.ParseJWKS(jwks(t, rsaJWK(t, k, "idp-1", keys.RS256, "")))
	wantRefused(t, "RS256 in a set not opened to RSA", err, errcode.UnsupportedAlg, "opened to RSA")
	for _, def := range []string{keys.RS256, keys.PS256} {
		set, err := keys.ParseJWKSWithRSA(doc, keys.RSAPolicy{DefaultAlg: def})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := set.LookupKey(context.Background(), "idp-1"); err != nil || got.Alg() != def || got.Family() != keys.FamilyOf(def) {
			t.Fatalf("default %s: %v %v", def, got, err)
		}
	}
	_, err = keys.ParseJWKSWithRSA(doc, keys.RSAPolicy{})
	wantRefused(t, "no default", err, errcode.InvalidKey, "no default is configured")
}

// A present "alg" is the key's one algorithm: it must fit the key's type, and no type
// inference overrides it.
func TestAlgPresentMustFitKeyType(t *testing.T) {
	ec, _ := keys.Generate(keys.ES256)
	ed, _ := keys.Generate(keys.EdDSA)
	for _, tc := range []struct {
		name   string
		jwk    map[string]any
		code   errcode.Code
		reason string
	}{
		{"P-256 labelled EdDSA", withoutAlg(t, ec.Public(), map[string]any{"alg": keys.EdDSA}), errcode.UnsupportedAlg, "does not fit an EC key"},
		{"P-256 labelled Ed25519", withoutAlg(t, ec.Public(), map[string]any{"alg": keys.Ed25519}), errcode.UnsupportedAlg, "does not fit an EC key"},
		{"Ed25519 labelled ES256", withoutAlg(t, ed.Public(), map[string]any{"alg": keys.ES256}), errcode.UnsupportedAlg, "does not fit an Ed25519 key"},
		{"P-256 labelled ES384", withoutAlg(t, ec.Public(), map[string]any{"alg": "ES384"}), errcode.UnsupportedAlg, "not supported"},
		{"P-256 labelled none", withoutAlg(t, ec.Public(), map[string]any{"alg": "none"}), errcode.UnsupportedAlg, "can never sign"},
		{"P-256 labelled ECDH-ES", withoutAlg(t, ec.Public(), map[string]any{"alg": "ECDH-ES"}), errcode.UnsupportedAlg, "can never sign"},
	} {
		_, err := keys.ParseJWKS(jwks(t, tc.jwk))
		wantRefused(t, tc.name+" (set)", err, tc.code, tc.reason)
		_, err = keys.ParsePublicJWK([]byte(mustJSON(tc.jwk)))
		wantRefused(t, tc.name+" (key)", err, tc.code, tc.reason)
		_, err = keys.ParseJWKSWithRSA(jwks(t, tc.jwk), keys.RSAPolicy{DefaultAlg: keys.RS256})
		wantRefused(t, tc.name+" (RSA set)", err, tc.code, tc.reason)
	}
}

// A key without "alg" is pinned only when its type admits one supported algorithm and
// nothing about it says it is not a signature key.
func TestKeyWithoutAlgNotPinnable(t *testing.T) {
	ec, _ := keys.Generate(keys.ES256)
	for _, tc := range []struct {
		name   string
		jwk    string
		reason string
	}{
		{"EC P-384", p384JWK(t), "only a P-256 key"},
		{"OKP X25519", `{"kty":"OKP","crv":"X25519","x":"hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo"}`, "admits no supported algorithm"},
		{"oct", `{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}`, "admits no supported algorithm"},
		{"P-256 use enc", mustJSON(withoutAlg(t, ec.Public(), map[string]any{"use": "enc"})), `"use" is "enc"`},
		{"P-256 key_ops encrypt", mustJSON(withoutAlg(t, ec.Public(), map[string]any{"key_ops": []string{"encrypt"}})), `"key_ops"`},
	} {
		_, err := keys.ParsePublicJWK([]byte(tc.jwk))
		wantRefused(t, tc.name, err, errcode.InvalidKey, tc.reason)
		_, err = keys.ParseJWKS([]byte(`{"keys":[` + tc.jwk + `]}`))
		if errcode.CodeOf(err) != errcode.InvalidKey {
			t.Errorf("%s in a set: %v", tc.name, err)
		}
	}
	// key_ops that include verify, and use sig, do not stop pinning.
	for _, extra := range []map[string]any{{"use": "sig"}, {"key_ops": []string{"verify"}}} {
		if k, err := keys.ParsePublicJWK([]byte(mustJSON(withoutAlg(t, ec.Public(), extra)))); err != nil || k.Alg() != keys.ES256 {
			t.Errorf("%v: %v %v", extra, k, err)
		}
	}
}

// p384JWK is the public JWK of a fresh P-384 key, without "alg".
func p384JWK(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	j, err := jwk.FromRaw(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The keys that are not trust configuration keep requiring "alg": a WIT's cnf.jwk
// (creds-02 section 5.1: cnf.jwk.alg is REQUIRED; missing_confirmation_alg) and this
// service's own signing key.
func TestCreds02Sec5_1_ConfirmationKeyStillNeedsAlg(t *testing.T) {
	ec, _ := keys.Generate(keys.ES256)
	cnf := mustJSON(withoutAlg(t, ec.Public(), map[string]any{"kid": nil}))
	_, err := keys.ParseConfirmationJWK([]byte(cnf))
	wantRefused(t, "cnf.jwk", err, errcode.MissingConfirmationAlg, "no alg")
	var priv map[string]any
	b, _ := json.Marshal(ec)
	_ = json.Unmarshal(b, &priv)
	delete(priv, "alg")
	_, err = keys.ParsePrivateJWK([]byte(mustJSON(priv)))
	wantRefused(t, "private JWK", err, errcode.InvalidKey, `no "alg"`)
}
