package handoff

import (
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
)

// Section 3.4: "A receiver MUST accept each trusted key with exactly one algorithm." The
// two P-256 keys of the section 2.3 example, listed in a trust file without "alg", are
// pinned to ES256, the one algorithm their type admits, and the example's signed offers
// verify with them; a key labelled with an alg that does not fit is still refused.
func TestSec3_4_TrustKeysWithoutAlgPinnedByType(t *testing.T) {
	b, err := os.ReadFile("testdata/example-2.3-trust.json")
	if err != nil {
		t.Fatal(err)
	}
	algMember := regexp.MustCompile(`,\s*"alg":\s*"ES256"`)
	if len(algMember.FindAll(b, -1)) != 2 {
		t.Fatal("the example trust file no longer lists two ES256 keys")
	}
	trust, err := ParseTrust(algMember.ReplaceAll(b, nil))
	if err != nil {
		t.Fatal(err)
	}
	hb, err := os.ReadFile("testdata/example-2.3-handoff.json")
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHandoffJSON(hb, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, s := range []Signed{h.Chain[0], h.Offer} {
		v, err := VerifyOffer(ctx, trust, s, 0)
		if err != nil {
			t.Fatalf("example offer with an alg-less key: %v", err)
		}
		ks, _ := trust.KeysFor(ctx, v.Offer.Iss)
		if k, err := ks.LookupKey(ctx, v.KID); err != nil || k.Alg() != keys.ES256 {
			t.Fatalf("key of %s: %v %v", v.Offer.Iss, k, err)
		}
	}
	mislabelled := algMember.ReplaceAll(b, []byte(`, "alg": "EdDSA"`))
	if _, err := ParseTrust(mislabelled); errcode.CodeOf(err) != errcode.UnsupportedAlg {
		t.Fatalf("a P-256 key labelled EdDSA: %v", err)
	}
}
