package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tokenhash"
	"github.com/dialogtrust/dialogtrust/wit"
	"github.com/dialogtrust/dialogtrust/wpt"
)

func init() { register("wpt", runWPT) }

type wptVector struct {
	Alg                string            `json:"alg"`
	PopSigningKey      json.RawMessage   `json:"pop_signing_key"`
	IssuerVerifyingKey json.RawMessage   `json:"issuer_verifying_key"`
	VerifyNow          int64             `json:"verify_now"`
	Audience           string            `json:"audience"`
	WIT                string            `json:"wit"`
	TxnToken           *string           `json:"txn_token"`
	NoTxnToken         bool              `json:"no_txn_token"`
	OtherTokens        map[string]string `json:"other_tokens"`
	Claims             json.RawMessage   `json:"claims"`
	Proof              string            `json:"proof"`
	Negative           []json.RawMessage `json:"negative"`
}

func (v wptVector) bound() wpt.Bound {
	b := wpt.Bound{Other: v.OtherTokens}
	if !v.NoTxnToken {
		b.TxnToken = v.TxnToken
	}
	return b
}

func (v wptVector) verifier(issuer *keys.PublicKey) *wpt.Verifier {
	clock := func() time.Time { return time.Unix(v.VerifyNow, 0) }
	wits := wit.NewValidator(oneDomainTrust{issuer}, wit.WithSkew(0), wit.WithClock(clock))
	return wpt.NewVerifier(wits, wpt.WithAudiences(v.Audience))
}

func runWPT(file string, raw []byte) []Result {
	var base wptVector
	if err := json.Unmarshal(raw, &base); err != nil {
		return []Result{{Suite: "wpt", File: file, Case: "(file)", Detail: err.Error()}}
	}
	issuer, err := keys.ParsePublicJWK(base.IssuerVerifyingKey)
	if err != nil {
		return []Result{{Suite: "wpt", File: file, Case: "(file)", Detail: err.Error()}}
	}
	pop, err := keys.ParsePrivateJWK(base.PopSigningKey)
	if err != nil {
		return []Result{{Suite: "wpt", File: file, Case: "(file)", Detail: err.Error()}}
	}
	out := []Result{pass("wpt", file, "reissue", reissueWPT(base, pop))}

	// Positive chain: the WIT by the issuer key, then the proof by the WIT's cnf key.
	res, err := base.verifier(issuer).Verify(context.Background(), base.WIT, base.Proof, base.bound())
	if err == nil {
		if res.WIT.Key.Thumbprint() != pop.Public().Thumbprint() {
			err = fmt.Errorf("the WIT's cnf key is not the vector's pop key")
		} else if err = sameJSON(base.Claims, res.Claims); err != nil {
			err = fmt.Errorf("claims: %w", err)
		}
	}
	out = append(out, pass("wpt", file, "verify", err))

	for _, n := range base.Negative {
		var head struct{ ID, Expect string }
		_ = json.Unmarshal(n, &head)
		merged, err := merge(raw, n)
		if err != nil {
			out = append(out, pass("wpt", file, head.ID, err))
			continue
		}
		var c wptVector
		_ = json.Unmarshal(merged, &c)
		// Negatives verify against the public half of pop_signing_key (SOURCE.md).
		_, err = c.verifier(issuer).VerifyProof(context.Background(), c.Proof, pop.Public(), c.WIT, c.bound())
		out = append(out, expectCode("wpt", file, head.ID, err, head.Expect))
	}
	return out
}

func reissueWPT(v wptVector, pop *keys.PrivateKey) error {
	if pop.Alg() != v.Alg {
		return fmt.Errorf("key alg %q, vector alg %q", pop.Alg(), v.Alg)
	}
	var payload bytes.Buffer
	if err := json.Compact(&payload, v.Claims); err != nil {
		return err
	}
	tok, err := jose.Sign(wpt.Type, pop, false, payload.Bytes())
	if err != nil {
		return err
	}
	if tok != v.Proof {
		return fmt.Errorf("re-issued proof differs from the recorded one")
	}
	// The hash rules, recomputed from the inputs.
	var c wpt.Claims
	_ = json.Unmarshal(v.Claims, &c)
	if c.Wth != tokenhash.Of(v.WIT) {
		return fmt.Errorf("wth is not SHA-256 of the WIT")
	}
	if v.TxnToken != nil && c.Tth != tokenhash.Of(strings.Trim(*v.TxnToken, " \t")) {
		return fmt.Errorf("tth is not SHA-256 of the Txn-Token")
	}
	for name, val := range v.OtherTokens {
		if c.Oth[name] != tokenhash.Of(strings.Trim(val, " \t")) {
			return fmt.Errorf("oth[%s] is not SHA-256 of the field", name)
		}
	}
	return nil
}

// sameJSON compares a recorded JSON value with a decoded struct, ignoring member order.
func sameJSON(recorded json.RawMessage, got any) error {
	var a, b any
	_ = json.Unmarshal(recorded, &a)
	_ = json.Unmarshal(jsonOf(got), &b)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		return fmt.Errorf("%v, want %v", b, a)
	}
	return nil
}
