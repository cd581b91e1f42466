package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wit"
)

func init() { register("wit", runWIT) }

type witVector struct {
	Alg                string          `json:"alg"`
	IssuerSigningKey   json.RawMessage `json:"issuer_signing_key"`
	IssuerVerifyingKey json.RawMessage `json:"issuer_verifying_key"`
	Kid                string          `json:"kid"`
	VerifyNow          int64           `json:"verify_now"`
	Claims             json.RawMessage `json:"claims"`
	Token              string          `json:"token"`
	ExpectedIss        string          `json:"expected_iss"`
	Negative           []json.RawMessage
}

// oneDomainTrust answers every trust domain with the same key set: the vectors give the
// issuer key directly (SOURCE.md, "Known divergences": anchor selection is the caller's).
type oneDomainTrust struct{ ks keys.KeySet }

func (t oneDomainTrust) ForTrustDomain(string) (keys.KeySet, error) { return t.ks, nil }

func runWIT(file string, raw []byte) []Result {
	var base witVector
	if err := json.Unmarshal(raw, &base); err != nil {
		return []Result{{Suite: "wit", File: file, Case: "(file)", Detail: err.Error()}}
	}
	var out []Result
	out = append(out, pass("wit", file, "reissue", reissueWIT(base)))
	_, err := verifyWIT(base)
	out = append(out, pass("wit", file, "verify", err))
	for _, n := range base.Negative {
		var head struct{ ID, Expect string }
		_ = json.Unmarshal(n, &head)
		merged, err := merge(raw, n)
		if err != nil {
			out = append(out, pass("wit", file, head.ID, err))
			continue
		}
		var c witVector
		_ = json.Unmarshal(merged, &c)
		_, err = verifyWIT(c)
		out = append(out, expectCode("wit", file, head.ID, err, head.Expect))
	}
	return out
}

func reissueWIT(v witVector) error {
	key, err := keys.ParsePrivateJWK(v.IssuerSigningKey)
	if err != nil {
		return err
	}
	if key.Alg() != v.Alg {
		return fmt.Errorf("key alg %q, vector alg %q", key.Alg(), v.Alg)
	}
	var payload bytes.Buffer
	if err := json.Compact(&payload, v.Claims); err != nil {
		return err
	}
	tok, err := jose.Sign(wit.Type, key.WithKID(v.Kid), true, payload.Bytes())
	if err != nil {
		return err
	}
	if tok != v.Token {
		return fmt.Errorf("re-issued token differs from the recorded one")
	}
	return nil
}

func verifyWIT(v witVector) (*wit.WIT, error) {
	vk := v.IssuerVerifyingKey
	if len(vk) == 0 {
		vk = v.IssuerSigningKey
	}
	pub, err := keys.ParsePublicJWK(vk)
	if err != nil {
		return nil, err
	}
	opts := []wit.ValidatorOption{wit.WithSkew(0), wit.WithClock(func() time.Time { return time.Unix(v.VerifyNow, 0) })}
	if v.ExpectedIss != "" {
		opts = append(opts, wit.WithIssuers(v.ExpectedIss))
	}
	w, err := wit.NewValidator(oneDomainTrust{pub}, opts...).Validate(context.Background(), v.Token)
	if err != nil {
		return nil, err
	}
	var want, got any
	_ = json.Unmarshal(v.Claims, &want)
	_ = json.Unmarshal(jsonOf(w.Claims), &got)
	if fmt.Sprint(want) != fmt.Sprint(got) {
		return nil, fmt.Errorf("decoded claims differ: %v vs %v", got, want)
	}
	return w, nil
}

func jsonOf(v any) []byte { b, _ := json.Marshal(v); return b }
