package tts

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/txntoken"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// The issuance benchmarks and the crypto floors they are compared with run in one
// `go test -bench` so that the ratio comes from one machine and one run:
//
//	go test -run '^$' -bench 'IssueTxnToken|Floor' -benchmem ./tts/
//
// BenchmarkIssueTxnToken is the whole handler: an httptest request with a WIT and a
// WPT, a self_signed or JWT access token subject, policy, claims, signature, JSON
// response, metrics and a JSON log line. "warm": the WIT and the subject token were
// seen before (cached), so the crypto the request cannot avoid is the WPT verification
// and the Txn-Token signature: BenchmarkFloorWarm measures exactly those two raw
// operations. "cold": no caches, so the WIT and the subject token are verified too:
// BenchmarkFloorCold adds those two raw verifications.

type benchCase struct {
	name    string
	alg     string // workload and TTS key algorithm
	subject string // TokenTypeSelfSigned or TokenTypeAccessToken
}

// benchDecider is the IssuanceDecider benchEnv configures (nil: none; see
// authzen_bench_test.go).
var benchDecider IssuanceDecider

var benchCases = []benchCase{
	{"ES256/access_token", keys.ES256, TokenTypeAccessToken},
	{"ES256/self_signed", keys.ES256, TokenTypeSelfSigned},
	{"EdDSA/access_token", keys.EdDSA, TokenTypeAccessToken},
}

func benchEnv(b *testing.B, bc benchCase, cached bool) (*env, *testkit.Workload, string) {
	return benchEnvWith(b, bc, cached, nil)
}

// benchEnvWith is benchEnv with the policy's rules replaced (nil: the test defaults).
func benchEnvWith(b *testing.B, bc benchCase, cached bool, rules []Rule) (*env, *testkit.Workload, string) {
	b.Helper()
	e := newEnv(b, func(e *env, c *Config) {
		if rules != nil {
			c.Policy.Rules = rules
		}
		c.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
		k, _ := keys.Generate(bc.alg)
		e.ttsKey, e.ring = k, keys.NewRing(k, e.clock.Now)
		c.Keys = e.ring
		var vopts []wit.ValidatorOption
		if cached {
			vopts = append(vopts, wit.WithCache(1024, time.Minute))
		}
		e.dom = testkit.NewDomain(b, tdA, bc.alg, e.clock)
		e.wits = e.dom.Validator(vopts...)
		c.Authenticators = oauth.WIMSEAuthenticators(e.wits, e.replay, c.Issuer+PathToken)
		size := 0
		if !cached {
			size = -1
		}
		hopts := HandlerOptions{Now: e.clock.Now, CacheSize: size}
		idk, _ := keys.Generate(bc.alg)
		e.idpKey = idk
		set, _ := keys.NewStaticSet(idk.Public())
		at, _ := NewJWTHandler(TokenTypeAccessToken, []JWTIssuer{{Issuer: idpIss, Keys: set}}, hopts)
		c.SubjectHandlers = []SubjectTokenHandler{at, NewSelfSignedHandler([]string{c.Issuer}, SelfSignedOptions{HandlerOptions: hopts})}
		c.Decider = benchDecider
		if benchAudit != nil {
			c.Auditor = benchAudit(b, e.ring)
		}
	})
	w := e.dom.Workload(b, "/agent/a1", bc.alg)
	subject := e.accessToken("alice", "trip.read trip.book", 0)
	if bc.subject == TokenTypeSelfSigned {
		subject = e.selfSigned(w, "alice", "trip.read trip.book")
	}
	return e, w, subject
}

// issuer returns, for one case: prepare(proof), which builds a request carrying the
// proof and a recorder for its answer (the client's and the HTTP server's work, not the
// handler's); serve, which runs the handler on them and checks the answer; send, both;
// and mint, a new WPT.
func issuer(b *testing.B, bc benchCase, cached bool) (send func(string), mint func() string) {
	send, mint, _, _ = issuerParts(b, bc, cached)
	return send, mint
}

func issuerParts(b *testing.B, bc benchCase, cached bool) (send func(string), mint func() string,
	prepare func(string) (*http.Request, *httptest.ResponseRecorder), serve func(*http.Request, *httptest.ResponseRecorder)) {
	return issuerPartsWith(b, bc, cached, nil)
}

func issuerPartsWith(b *testing.B, bc benchCase, cached bool, rules []Rule) (send func(string), mint func() string,
	prepare func(string) (*http.Request, *httptest.ResponseRecorder), serve func(*http.Request, *httptest.ResponseRecorder)) {
	e, w, subject := benchEnvWith(b, bc, cached, rules)
	body := baseForm(tdA, "trip.read", subject, bc.subject)
	body.Set("request_details", `{"dlg":"7f3c9a2e-5b1d-4e8a-9c6f-0d2b8e4a1f37"}`)
	enc := body.Encode()
	endpoint := e.url + PathToken
	h := e.srv.Handler()
	prepare = func(proof string) (*http.Request, *httptest.ResponseRecorder) {
		req := httptest.NewRequest(http.MethodPost, endpoint, strings.NewReader(enc))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		wpt.Attach(req, w.WIT, proof)
		return req, httptest.NewRecorder()
	}
	serve = func(req *http.Request, rec *httptest.ResponseRecorder) {
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	send = func(proof string) { serve(prepare(proof)) }
	mint = func() string {
		p, err := wpt.New(w.Key, w.WIT, endpoint, wpt.Bound{}, wpt.WithClock(e.clock.Now))
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	send(mint()) // warms the caches (when there are any)
	return send, mint, prepare, serve
}

// mintAll mints n proofs. Every request needs a WPT of its own (jti claimed once);
// they are minted before the clock starts, since minting is the client's work.
func mintAll(n int, mint func() string) []string {
	proofs := make([]string, n)
	for i := range proofs {
		proofs[i] = mint()
	}
	return proofs
}

func benchIssue(b *testing.B, cached bool) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			send, mint := issuer(b, bc, cached)
			proofs := mintAll(b.N, mint)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				send(proofs[i])
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkIssueTxnTokenRatio runs the handler and its crypto floor interleaved, one
// request then one floor, so that both see the same machine (other processes, CPU
// frequency): the reported crypto-% is the share of the handler's time that the raw
// operations take. warm: the floor is BenchmarkFloorWarm's; cold: BenchmarkFloorCold's.
func BenchmarkIssueTxnTokenRatio(b *testing.B) {
	for _, cached := range []bool{true, false} {
		for _, bc := range benchCases {
			name := bc.name + "/warm"
			if !cached {
				name = bc.name + "/cold"
			}
			b.Run(name, func(b *testing.B) {
				_, mint, prepare, serve := issuerParts(b, bc, cached)
				warm, cold := floorOps(b, bc)
				floor := warm
				if !cached {
					floor = cold
				}
				proofs := mintAll(b.N, mint)
				var req *http.Request
				var rec *httptest.ResponseRecorder
				testkit.BenchHandlerAndFloor(b,
					func(i int) { req, rec = prepare(proofs[i]) },
					func() { serve(req, rec) },
					floor)
			})
		}
	}
}

// BenchmarkIssueTxnToken: warm caches (WIT and subject token seen before).
func BenchmarkIssueTxnToken(b *testing.B) { benchIssue(b, true) }

// BenchmarkIssueTxnTokenCold: no caches: every request verifies the WIT and the
// subject token as well.
func BenchmarkIssueTxnTokenCold(b *testing.B) { benchIssue(b, false) }

// floorOps returns the raw operations one issuance needs, on realistic inputs: the
// WPT's signature check with the WIT's key, the Txn-Token's signature with the TTS key,
// and (cold only) the WIT's and the subject token's signature checks.
func floorOps(b *testing.B, bc benchCase) (warm, cold func()) {
	e, w, subject := benchEnv(b, bc, true)
	proof, _ := wpt.New(w.Key, w.WIT, e.url+PathToken, wpt.Bound{}, wpt.WithClock(e.clock.Now))
	check := func(tok string, k *keys.PublicKey) func() {
		t, err := jose.Parse(tok, 0)
		if err != nil {
			b.Fatal(err)
		}
		i := strings.LastIndexByte(t.Raw, '.')
		input := []byte(tok[:i])
		raw, _ := b64(tok[i+1:])
		return func() {
			if !k.Verify(input, raw) {
				b.Fatal("floor verify")
			}
		}
	}
	verifyProof := check(proof, w.Key.Public())
	verifyWIT := check(w.WIT, e.dom.Key.Public())
	subjectKey := e.idpKey.Public()
	if bc.subject == TokenTypeSelfSigned {
		subjectKey = w.Key.Public()
	}
	verifySubject := check(subject, subjectKey)
	resp, _ := e.mustRequest(w, txntoken.Request{Audience: tdA, Scope: "trip.read", SubjectToken: subject, SubjectTokenType: bc.subject})
	signingInput := []byte(resp.AccessToken[:strings.LastIndexByte(resp.AccessToken, '.')])
	sign := func() {
		if _, err := e.ttsKey.Sign(signingInput); err != nil {
			b.Fatal(err)
		}
	}
	warm = func() { verifyProof(); sign() }
	cold = func() { verifyWIT(); verifyProof(); verifySubject(); sign() }
	return warm, cold
}

func benchFloor(b *testing.B, coldFloor bool) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			warm, cold := floorOps(b, bc)
			op := warm
			if coldFloor {
				op = cold
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				op()
			}
		})
	}
}

// BenchmarkFloorWarm: raw WPT verify + raw Txn-Token sign.
func BenchmarkFloorWarm(b *testing.B) { benchFloor(b, false) }

// BenchmarkFloorCold: raw WIT verify + WPT verify + subject token verify + sign.
func BenchmarkFloorCold(b *testing.B) { benchFloor(b, true) }
