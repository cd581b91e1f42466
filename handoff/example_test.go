package handoff

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/store"
)

// The example of section 2.3, at a pinned clock: both signatures verify with the two
// keys given; prev, grant, the reference's dig and the status's offer digest are
// recomputed from the octets shown and match the document's values.
func TestSec2_3_Example(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	h, err := ParseHandoffJSON(read("example-2.3-handoff.json"), 0)
	if err != nil {
		t.Fatal(err)
	}
	trust, err := ParseTrust(read("example-2.3-trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Chain) != 1 || h.Offer.Form != JWS || h.Chain[0].Form != JWS {
		t.Fatalf("handoff shape: %d chain elements", len(h.Chain))
	}
	// "SHA-256 over its 538 ASCII octets" and "over its 942 ASCII octets, unfolded".
	if len(h.Chain[0].Octets) != 538 || len(h.Offer.Octets) != 942 {
		t.Fatalf("lengths %d and %d, want 538 and 942", len(h.Chain[0].Octets), len(h.Offer.Octets))
	}

	ctx := context.Background()
	// Both signatures verify with the two keys given (kids are their thumbprints).
	assistant, err := VerifyOffer(ctx, trust, h.Chain[0], 0)
	if err != nil {
		t.Fatalf("assistant's offer: %v", err)
	}
	planned, err := VerifyOffer(ctx, trust, h.Offer, 0)
	if err != nil {
		t.Fatalf("planner's offer: %v", err)
	}
	if assistant.KID != "KKOb_URldPME8XXXbWvX88EXpI6TOhKH4rwtHpqtIb8" || planned.KID != "lWGFAC8Cpc9fneqXZ3b4aCjtbb7vBoT8RbvJxX61-kQ" {
		t.Fatalf("kids %s %s", assistant.KID, planned.KID)
	}

	// prev: SHA-256 over the chain element's octets.
	if want := (Digest{SHA256, "M-OyKnHLAGKpiZKw7sNqAsNKmtfRQ7DUFhtKAL3Slmg"}); !h.Chain[0].Digest().Equal(want) || !planned.Prev.Equal(want) {
		t.Fatalf("prev: computed %v, offer says %v, document %v", h.Chain[0].Digest(), planned.Prev, want)
	}
	// grant: SHA-256 over the 61 octets of the example credential.
	cred := []byte("example access token issued to spiffe://b.example/agent/coder")
	if len(cred) != 61 {
		t.Fatal("credential is not 61 octets")
	}
	if want := (Digest{SHA256, "SKLjsfET5xtZoO5hzIiZFigz2JoYZLmW8Cg8GuYh4o4"}); !BindGrant(cred).Equal(want) || !planned.Grant.Equal(want) {
		t.Fatalf("grant: computed %v, offer says %v", BindGrant(cred), planned.Grant)
	}
	if err := CheckGrant(planned.Offer, cred); err != nil {
		t.Fatal(err)
	}
	// The reference's dig: SHA-256 over the 65 octets of JSON the coder fetches.
	obj := []byte(`{"repo":"https://git.a.example/app","commit":"9fceb02","issue":9}`)
	if len(obj) != 65 {
		t.Fatal("reference object is not 65 octets")
	}
	want := Digest{SHA256, "V_WPM8F9ztg6WxBxj1ZIGnzRbM1Xyp5GVdpEYmwbvuQ"}
	if sum := sha256.Sum256(obj); base64.RawURLEncoding.EncodeToString(sum[:]) != want.Val || !planned.Refs[0].Dig.Equal(want) {
		t.Fatal("reference dig")
	}
	if r := CheckRef(ctx, planned.Refs[0], &RefObject{Octets: obj}, nil); r.Outcome != RefVerified {
		t.Fatalf("reference check: %+v", r)
	}
	// The status's offer: the handoff digest of the planner's signed offer.
	st, err := ParseStatusJSON(read("example-2.3-status-payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Digest{SHA256, "kJIcudVNmFFwbYKTXNO3mqC3e9dQSWVXDNbamGeoP18"}); !h.Offer.Digest().Equal(want) || !st.Offer.Equal(want) || !planned.Digest.Equal(want) {
		t.Fatalf("status offer digest: computed %v, document %v", h.Offer.Digest(), st.Offer)
	}

	// The payload shown "before signing" encodes to the signed payload byte for byte.
	shown, err := ParseOfferJSON(read("example-2.3-offer-payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	enc, err := shown.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	signedPayload, _ := base64.RawURLEncoding.DecodeString(string(bytes.Split(h.Offer.Octets, []byte("."))[1]))
	if !bytes.Equal(enc, signedPayload) {
		t.Fatalf("re-encoded payload differs:\n%s\n%s", enc, signedPayload)
	}

	// The whole receipt at the coder, at a pinned clock between the status's iat and
	// the offers' exp: every step passes, with the chain full and the reference and the
	// grant checked.
	// The records lost nothing (section 8.4 does not apply to the example's offers).
	at := time.Unix(1_793_000_003, 0)
	r := NewReceiver(coder, trust, store.NewMemoryRecords(), WithClock(func() time.Time { return at }), WithRecordsLostAt(time.Time{}),
		WithChainPolicy(ChainPolicy{TrustedOrigins: []string{user}}),
		WithRefPolicy(RefPolicy{Require: RequireAllRefs, Source: RefSourceFunc(func(context.Context, ContextRef) (*RefObject, error) {
			return &RefObject{Octets: obj}, nil
		})}), WithGrantRequired())
	d, err := r.Receive(ctx, Inbound{Handoff: h, Dialog: "ctx-7c1e", Credential: cred})
	wantAccept(t, d, err)
	if !d.Chain.Full() || d.Chain.Origin != user || d.Refs[0].Outcome != RefVerified {
		t.Fatalf("chain %+v refs %+v", d.Chain, d.Refs)
	}
	// Past exp plus skew the same handoff, never seen by a fresh receiver, is stale.
	late := time.Unix(1_793_000_120, 0)
	r2 := NewReceiver(coder, trust, store.NewMemoryRecords(), WithClock(func() time.Time { return late }))
	d, err = r2.Receive(ctx, Inbound{Handoff: h})
	wantReject(t, d, err, ReasonStale)
}
