package chaining_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// BenchmarkJWTBearerGrant is AS B's whole handler as the TTS binary serves it: an
// httptest request through the token endpoint (oauth.Endpoint) with a WIT and a fresh
// WPT, the grant's checks (typ, alg, kid, signature, claims, requested_cnf), scope and
// subject policy, the jti claimed in the memory replay store, the access token signed,
// the JSON response, metrics and the JSON log line. Its raw floor, measured in the same
// run and interleaved with it (one request, then one floor), is the signature work the
// request cannot avoid: the WPT's verification with the WIT key, the grant's with AS A's
// key, and the access token's signature; "cold" (no WIT cache) adds the WIT's
// verification. crypto-% is floor / handler.
//
//	go test -run '^$' -bench JWTBearerGrant -benchmem -cpu 1 ./chaining/
func BenchmarkJWTBearerGrant(b *testing.B) {
	for _, alg := range []string{keys.ES256, keys.EdDSA} {
		for _, cold := range []bool{false, true} {
			name := alg + "/warm"
			if cold {
				name = alg + "/cold"
			}
			b.Run(name, func(b *testing.B) { benchBearer(b, alg, cold) })
		}
	}
}

func benchBearer(b *testing.B, alg string, cold bool) {
	e := newEnv(b, envOpts{alg: alg, noWITCache: cold, quiet: true})
	a2 := e.a.dom.Workload(b, "/agent/a2", alg)
	endpoint := e.b.endpoint()
	h := e.b.hs.Config.Handler
	aKey := e.a.ring.Active()
	now := e.clock.Now()
	iat, exp := jose.NumericDate(now.Unix()), jose.NumericDate(now.Add(time.Minute).Unix())
	scope := "trip.read trip.book"
	jkt := chaining.Thumbprint(a2.Key.Public())
	// Grants and proofs are single use and the client's (AS A's) work: minted before
	// the clock starts, exactly as AS A and the client make them.
	mintGrant := func(i int) string {
		return signGrant(b, chaining.GrantTyp, aKey, chaining.GrantClaims{RegisteredClaims: jose.RegisteredClaims{Iss: e.a.url, Sub: "alice@a.example", Aud: jose.Audience{e.b.url},
			Iat: &iat, Exp: &exp}, Jti: "bench-" + strconv.Itoa(i), Scope: &scope, RequestedCnf: &chaining.Confirmation{JKT: jkt}})
	}
	mintProof := func() string {
		p, err := wpt.New(a2.Key, a2.WIT, endpoint, wpt.Bound{}, wpt.WithClock(e.clock.Now))
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	// prepare builds the request and its recorder (the client's and net/http's work);
	// serve is the handler alone.
	prepare := func(grant, proof string) (*http.Request, *httptest.ResponseRecorder) {
		body := url.Values{"grant_type": {chaining.GrantTypeJWTBearer}, "assertion": {grant}}.Encode()
		req := httptest.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		wpt.Attach(req, a2.WIT, proof)
		return req, httptest.NewRecorder()
	}
	serve := func(req *http.Request, rec *httptest.ResponseRecorder) string {
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	send := func(grant, proof string) string { return serve(prepare(grant, proof)) }
	// One request outside the loop: warms the WIT cache (when there is one), and gives
	// a real access token for the floor's signature.
	out := send(mintGrant(-1), mintProof())
	at := out[strings.Index(out, `"access_token":"`)+16:]
	at = at[:strings.IndexByte(at, '"')]
	floor := floorOps(b, e, a2, mintGrant(-2), mintProof(), at, cold)

	grants, proofs := make([]string, b.N), make([]string, b.N)
	for i := range grants {
		grants[i], proofs[i] = mintGrant(i), mintProof()
	}
	var req *http.Request
	var rec *httptest.ResponseRecorder
	b.ReportAllocs()
	testkit.BenchHandlerAndFloor(b,
		func(i int) { req, rec = prepare(grants[i], proofs[i]) },
		func() { serve(req, rec) },
		floor)
}

// floorOps: the raw operations one redemption needs, on realistic inputs.
func floorOps(b *testing.B, e *env, a2 *testkit.Workload, grant, proof, at string, cold bool) func() {
	check := func(tok string, k *keys.PublicKey) func() {
		i := strings.LastIndexByte(tok, '.')
		input := []byte(tok[:i])
		sig, err := base64.RawURLEncoding.DecodeString(tok[i+1:])
		if err != nil {
			b.Fatal(err)
		}
		return func() {
			if !k.Verify(input, sig) {
				b.Fatal("floor verify")
			}
		}
	}
	verifyProof := check(proof, a2.Key.Public())
	verifyGrant := check(grant, e.a.ring.Active().Public())
	verifyWIT := check(a2.WIT, e.a.dom.Key.Public())
	input := []byte(at[:strings.LastIndexByte(at, '.')])
	bKey := e.b.ring.Active()
	sign := func() {
		if _, err := bKey.Sign(input); err != nil {
			b.Fatal(err)
		}
	}
	if cold {
		return func() { verifyWIT(); verifyProof(); verifyGrant(); sign() }
	}
	return func() { verifyProof(); verifyGrant(); sign() }
}
