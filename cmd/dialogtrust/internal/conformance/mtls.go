package conformance

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/wic"
)

func init() { register("mtls", runMTLS) }

type mtlsVector struct {
	CASigningKey       json.RawMessage `json:"ca_signing_key"`
	CANotBefore        int64           `json:"ca_not_before"`
	CANotAfter         int64           `json:"ca_not_after"`
	WorkloadSigningKey json.RawMessage `json:"workload_signing_key"`
	Identifier         string          `json:"identifier"`
	NotBefore          int64           `json:"not_before"`
	NotAfter           int64           `json:"not_after"`
	CACertificateDER   string          `json:"ca_certificate_der_b64u"`
	WICDER             string          `json:"wic_der_b64u"`
	VerifyNow          int64           `json:"verify_now"`
	Negative           []json.RawMessage
}

// runMTLS follows SOURCE.md "mtls": rebuild the CA, re-issue the WIC (both byte for
// byte), verify the WIC at verify_now, then each negative with its recorded code.
func runMTLS(file string, raw []byte) []Result {
	var base mtlsVector
	if err := json.Unmarshal(raw, &base); err != nil {
		return []Result{{Suite: "mtls", File: file, Case: "(file)", Detail: err.Error()}}
	}
	out := []Result{pass("mtls", file, "descriptions", checkMTLSDescriptions(base, raw))}
	out = append(out, pass("mtls", file, "rebuild-ca", rebuildCA(base)))
	out = append(out, pass("mtls", file, "reissue", reissueWIC(base)))
	out = append(out, pass("mtls", file, "verify", verifyWICVector(base)))
	for _, n := range base.Negative {
		var head struct{ ID, Expect string }
		_ = json.Unmarshal(n, &head)
		merged, err := merge(raw, n)
		if err != nil {
			out = append(out, pass("mtls", file, head.ID, err))
			continue
		}
		var c mtlsVector
		if err := json.Unmarshal(merged, &c); err != nil {
			out = append(out, pass("mtls", file, head.ID, err))
			continue
		}
		out = append(out, expectCode("mtls", file, head.ID, verifyWICVector(c), head.Expect))
	}
	return out
}

// checkMTLSDescriptions applies SOURCE.md's general rule that no description names the
// other algorithm; the file's algorithm is the CA key's.
func checkMTLSDescriptions(v mtlsVector, raw []byte) error {
	ca, err := keys.ParsePrivateJWK(v.CASigningKey)
	if err != nil {
		return err
	}
	other := []string{"ed25519", "eddsa"}
	if keys.FamilyOf(ca.Alg()) == keys.FamilyEd25519 {
		other = []string{"p-256", "es256"}
	}
	var d struct {
		Description string
		Negative    []struct{ ID, Description string }
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return err
	}
	texts := []string{d.Description}
	for _, n := range d.Negative {
		texts = append(texts, n.Description)
	}
	for _, t := range texts {
		for _, o := range other {
			if strings.Contains(strings.ToLower(t), o) {
				return fmt.Errorf("description %q names the other algorithm", t)
			}
		}
	}
	return nil
}

func rebuildCA(v mtlsVector) error {
	ca, err := keys.ParsePrivateJWK(v.CASigningKey)
	if err != nil {
		return err
	}
	want, err := b64u(v.CACertificateDER)
	if err != nil {
		return err
	}
	got, err := wic.NewCA(ca.Signer(), time.Unix(v.CANotBefore, 0), time.Unix(v.CANotAfter, 0))
	if err != nil {
		return err
	}
	return sameDER("CA certificate", got, want)
}

func reissueWIC(v mtlsVector) error {
	ca, err := keys.ParsePrivateJWK(v.CASigningKey)
	if err != nil {
		return err
	}
	wl, err := keys.ParsePrivateJWK(v.WorkloadSigningKey)
	if err != nil {
		return err
	}
	id, err := identifier.Parse(v.Identifier)
	if err != nil {
		return err
	}
	caDER, err := b64u(v.CACertificateDER)
	if err != nil {
		return err
	}
	want, err := b64u(v.WICDER)
	if err != nil {
		return err
	}
	got, err := wic.IssueWIC(ca.Signer(), caDER, wl.Public().Crypto(), id, time.Unix(v.NotBefore, 0), time.Unix(v.NotAfter, 0))
	if err != nil {
		return err
	}
	return sameDER("WIC", got, want)
}

// verifyWICVector is the verifier side: the CA certificate is the only anchor (SOURCE.md
// "Known divergences": single-CA model), and the identifier must be the vector's.
func verifyWICVector(v mtlsVector) error {
	caDER, err := b64u(v.CACertificateDER)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fmt.Errorf("vector CA certificate: %w", err)
	}
	leaf, err := b64u(v.WICDER)
	if err != nil {
		return err
	}
	id, err := wic.Verify(leaf, nil, []*x509.Certificate{ca}, time.Unix(v.VerifyNow, 0))
	if err != nil {
		return err
	}
	if id.String() != v.Identifier {
		return fmt.Errorf("identifier %q, want %q", id, v.Identifier)
	}
	return nil
}

// b64u decodes the vectors' *_der_b64u values: base64url without padding, strictly.
func b64u(s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("base64url: %w", err)
	}
	return b, nil
}

func sameDER(what string, got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Errorf("rebuilt %s differs from the recorded one at octet %d (%d vs %d octets)", what, i, len(got), len(want))
}
