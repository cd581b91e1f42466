package httpsig

import (
	"context"
	"slices"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// A base the verifier rebuilt reads back to the components and parameters it covered.
func TestParseSignatureBaseReadsAVerifiedBase(t *testing.T) {
	f := newFixture(t, keys.ES256)
	req, nonce := f.signedRequest()
	res, err := f.verifier().VerifyRequest(context.Background(), req)
	mustOK(t, err)
	b, err := ParseSignatureBase(string(res.Base))
	mustOK(t, err)
	if !slices.Equal(b.Covered, res.Covered) {
		t.Fatalf("Covered = %q, want %q", b.Covered, res.Covered)
	}
	if got, ok := b.Value(`"workload-identity-token"`); !ok || got != f.client.wit {
		t.Fatalf("workload-identity-token = %q, %v", got, ok)
	}
	if got, ok := b.Value(`"@method"`); !ok || got != "POST" {
		t.Fatalf("@method = %q, %v", got, ok)
	}
	if _, ok := b.Value(`"@signature-params"`); ok {
		t.Fatal("@signature-params is the parameters, not a covered component")
	}
	p, err := ParseSignatureParams(b.SignatureParams)
	mustOK(t, err)
	want := Params{Created: f.clock().Unix(), Expires: f.clock().Add(DefaultTTL).Unix(), Nonce: nonce, Tag: Tag, Audience: testAudience}
	if p != want {
		t.Fatalf("params = %+v, want %+v", p, want)
	}
	if _, ok := b.Value(`"dialog-context"`); ok {
		t.Fatal("a component the base does not cover has a value")
	}
}

func TestParseSignatureBaseRefusesMalformedBases(t *testing.T) {
	params := `("@method");created=1;tag="wimse-workload-to-workload"`
	for name, base := range map[string]string{
		"empty":                    "",
		"no params line":           `"@method": POST`,
		"params not last":          `"@signature-params": ` + params + "\n" + `"@method": POST`,
		"line without a separator": `"@method" POST` + "\n" + `"@signature-params": ` + params,
		"id not an sf-string":      `@method: POST` + "\n" + `"@signature-params": ` + params,
		"a component twice":        `"@method": POST` + "\n" + `"@method": GET` + "\n" + `"@signature-params": ` + params,
	} {
		if _, err := ParseSignatureBase(base); errcode.CodeOf(err) != errcode.ParseError {
			t.Errorf("%s: got %v, want parse_error", name, err)
		}
	}
	if _, err := ParseSignatureBase(`"@method": POST` + "\n" + `"@signature-params": ` + params); err != nil {
		t.Fatalf("well-formed base: %v", err)
	}
}

func TestParseSignatureParams(t *testing.T) {
	for v, code := range map[string]errcode.Code{
		`("@method");tag="x"`:                 errcode.MissingParameter,
		`("@method");created="1"`:             errcode.MissingParameter,
		`"@method";created=1`:                 errcode.ParseError,
		`("@method";created=1`:                errcode.ParseError,
		`("@method");created=1;expires=2;x=3`: "",
	} {
		_, err := ParseSignatureParams(v)
		if code == "" {
			mustOK(t, err)
			continue
		}
		if errcode.CodeOf(err) != code {
			t.Errorf("%s: got %v, want %s", v, err, code)
		}
	}
	// A parameter of another type than the profile writes is left out, not an error:
	// the profile's rules were applied when the signature was verified.
	p, err := ParseSignatureParams(`();created=7;tag=1;nonce="n";wimse-sign-response`)
	mustOK(t, err)
	if p != (Params{Created: 7, Nonce: "n", SignResponse: true}) {
		t.Fatalf("params = %+v", p)
	}
}
