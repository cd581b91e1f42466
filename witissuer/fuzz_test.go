package witissuer

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

const fuzzKey = `{"alg":"ES256","crv":"P-256","d":"pdgiCRKpwavga64iOLzIVBR2qlqHI_sTNFqJPJENwtc","kty":"EC","x":"AGdiEn1ZOsG4aaMzh6yxJb1qpD2G69hAEUd5lelkRX8","y":"5pnx07Vps3S4GrKco93ztErvn1eWFSS0-4bdwKWlnJk"}`

// FuzzRequestBody feeds arbitrary bodies (bounded to the server's 64 KiB) through the
// body parser and the request-proof check: neither may panic, every rejection carries a
// code, and nothing the fuzzer makes up can verify, since it cannot sign with the key
// its cnf.jwk names unless it copied a seed.
func FuzzRequestBody(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	// A fixed key (and RFC 6979 signing) so that every fuzz worker process computes the
	// same seed request.
	k, err := keys.ParsePrivateJWK([]byte(fuzzKey))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := NewRequestJWS(k, RequestParams{Audience: "https://issuer", Now: now, JTI: "j", Subject: "wimse://a.example/x", TTL: time.Minute})
	gb, _ := json.Marshal(RequestBody{Request: good})
	f.Add(gb)
	f.Add([]byte(`{"request":"a.b.c"}`))
	f.Add([]byte(`{"request":"` + good + `","client_assertion_type":"x","client_assertion":"y"}`))
	f.Add([]byte(`{"request":1}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"request":"eyJ0eXAiOiJ3aXQtcmVxdWVzdCtqd3QiLCJhbGciOiJFUzI1NiJ9.e30.AA"}`))
	rules := proofRules{issuer: "https://issuer", window: time.Minute, now: now}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > DefaultMaxBodySize+1 {
			return
		}
		body, err := ParseBody(b)
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("body rejection without a code: %v", err)
			}
			return
		}
		req, err := checkProof(body, rules)
		if err != nil {
			if errcode.CodeOf(err) == errcode.Unmapped {
				t.Fatalf("proof rejection without a code: %v", err)
			}
			return
		}
		if req.Key == nil || req.Claims.Iat == nil || req.Claims.Jti == "" {
			t.Fatal("accepted a request without key, iat or jti")
		}
		if body.Request != good {
			t.Fatalf("a request the fuzzer made up verified: %q vs %q", body.Request, good)
		}
	})
}
