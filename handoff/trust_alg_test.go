package handoff

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/veraison/go-cose"

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

// jwsWithAlg signs payload as a handoff JWS whose header names alg and kid, whatever
// key signs it: the header a peer chose, not the one SignOffer would write.
func jwsWithAlg(t *testing.T, alg, kid string, payload []byte, signer *keys.PrivateKey) Signed {
	t.Helper()
	h, _ := json.Marshal(map[string]string{"typ": JWSType, "alg": alg, "kid": kid})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(h) + "." + enc.EncodeToString(payload)
	sig, err := signer.Sign([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	return Signed{Form: JWS, Octets: []byte(input + "." + enc.EncodeToString(sig))}
}

// verifyRenamedStatus has sign write the canceled status of the hop of o (its offer
// was emitted) in sign's form, under the algorithm name sign chose, and verifies it
// against trust.
func verifyRenamedStatus(ctx context.Context, t *testing.T, trust *StaticTrust, o *Offer, emitted Signed, sign func(payload []byte) Signed) error {
	t.Helper()
	st := &Status{Hop: o.Hop, Offer: emitted.Digest(), Iss: planner, Aud: coder, Iat: o.Iat, State: StateCanceled}
	marshal := st.MarshalJSON
	if emitted.Form == COSE {
		marshal = st.MarshalCBOR
	}
	sp, err := marshal()
	if err != nil {
		t.Fatal(err)
	}
	_, err = VerifyStatusSignature(ctx, trust, sign(sp), 0)
	return err
}

// coseOffer makes a world in the COSE form and an offer from planner to coder in it,
// with the CBOR payload the COSE tests sign under names of their choosing.
func coseOffer(t *testing.T) (*world, *Offer, []byte) {
	t.Helper()
	w := newWorld(t, COSE)
	o := w.newOffer(planner, coder)
	payload, err := o.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	return w, o, payload
}

// trustWithoutAlg binds the public half of k to iss in a trust file whose JWK has no
// "alg", as an operator writes one: the key is pinned by its type (OKP Ed25519: EdDSA).
func trustWithoutAlg(t *testing.T, iss string, k *keys.PrivateKey) *StaticTrust {
	t.Helper()
	return trustPinned(t, iss, "", k)
}

// RFC 9864 section 2 registers "Ed25519", the fully-specified name of EdDSA over
// Ed25519, and other implementations now sign handoffs with it. Section 3.1 of the
// handoff draft asks only for an asymmetric alg, and section 3.4's "exactly one
// algorithm" is kept: "EdDSA" and "Ed25519" name the one signature an Ed25519 key
// makes. A trusted Ed25519 key without "alg" (pinned to "EdDSA") verifies the offer
// under either name; what SignOffer writes is unchanged.
func TestRFC9864Sec2_HandoffSec3_1_Ed25519NameForAnEdDSAKey(t *testing.T) {
	ctx := context.Background()
	k, err := keys.Generate(keys.EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, JWS)
	o := w.newOffer(planner, coder)
	trust := trustWithoutAlg(t, planner, k)
	if ks, _ := trust.KeysFor(ctx, planner); ks != nil {
		if pk, err := ks.LookupKey(ctx, k.KID()); err != nil || pk.Alg() != keys.EdDSA {
			t.Fatalf("the alg-less Ed25519 key is not pinned to EdDSA: %v %v", pk, err)
		}
	}
	emitted, err := SignOffer(k, JWS, o)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := VerifyOffer(ctx, trust, emitted, 0); err != nil || v.Alg != keys.EdDSA {
		t.Fatalf("the offer as SignOffer writes it (alg EdDSA): %v %+v", err, v)
	}
	payload, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	renamed := jwsWithAlg(t, keys.Ed25519, k.KID(), payload, k)
	v, err := VerifyOffer(ctx, trust, renamed, 0)
	if err != nil {
		t.Fatalf("an offer signed with alg Ed25519 by a trusted Ed25519 key: %v", err)
	}
	if v.Alg != keys.Ed25519 || v.Offer.Hop != o.Hop {
		t.Fatalf("verified %+v", v)
	}
	// A status, verified by the same rule.
	if err := verifyRenamedStatus(ctx, t, trust, o, emitted, func(sp []byte) Signed { return jwsWithAlg(t, keys.Ed25519, k.KID(), sp, k) }); err != nil {
		t.Fatalf("a status signed with alg Ed25519: %v", err)
	}
}

// The alias is only for Ed25519 keys: "Ed25519" on an offer whose kid names a trusted
// P-256 key (pinned to ES256) is refused before any signature is checked, and "Ed448"
// (RFC 9864 section 2's other EdDSA name, a curve package keys does not support) is
// refused whatever the key.
func TestRFC9864Sec2_HandoffSec3_1_Ed25519NameRefusedForOtherKeys(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, JWS)
	o := w.newOffer(planner, coder)
	p256 := w.key(planner)
	payload, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	ed, _ := keys.Generate(keys.EdDSA)
	_, err = VerifyOffer(ctx, w.trust, jwsWithAlg(t, keys.Ed25519, p256.KID(), payload, ed), 0)
	if !hasCause(err, errcode.UnsupportedAlg) {
		t.Fatalf("alg Ed25519 under a P-256 key's kid: %v", err)
	}
	edTrust := trustWithoutAlg(t, planner, ed)
	for _, tr := range []*StaticTrust{w.trust, edTrust} {
		kid := p256.KID()
		if tr == edTrust {
			kid = ed.KID()
		}
		_, err = VerifyOffer(ctx, tr, jwsWithAlg(t, "Ed448", kid, payload, ed), 0)
		if !hasCause(err, errcode.UnsupportedAlg) {
			t.Fatalf("alg Ed448 (kid %s): %v", kid, err)
		}
	}
}

// renamedSigner signs with an Ed25519 key under another COSE algorithm identifier.
type renamedSigner struct {
	cose.Signer
	alg cose.Algorithm
}

func (s renamedSigner) Algorithm() cose.Algorithm { return s.alg }

// coseWithAlg signs payload as a handoff COSE_Sign1 whose protected alg is alg,
// whatever key signs it: the header a peer chose, not the one SignOffer would write.
func coseWithAlg(t *testing.T, alg cose.Algorithm, kid string, payload []byte, signer *keys.PrivateKey) Signed {
	t.Helper()
	base, err := cose.NewSigner(cose.AlgorithmEdDSA, signer.Signer())
	if err != nil {
		t.Fatal(err)
	}
	msg := cose.NewSign1Message()
	msg.Headers.Protected.SetAlgorithm(alg)
	msg.Headers.Protected[cose.HeaderLabelContentType] = ContentType
	msg.Headers.Protected[cose.HeaderLabelKeyID] = []byte(kid)
	msg.Payload = payload
	if err := msg.Sign(rand.Reader, nil, renamedSigner{base, alg}); err != nil {
		t.Fatal(err)
	}
	b, err := msg.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	return Signed{Form: COSE, Octets: b}
}

// trustPinned binds the public half of k to iss in a trust file whose JWK names alg,
// or names none when alg is "".
func trustPinned(t *testing.T, iss, alg string, k *keys.PrivateKey) *StaticTrust {
	t.Helper()
	jwk, err := k.Public().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(jwk, &m)
	if alg == "" {
		delete(m, "alg")
	} else {
		m["alg"] = alg
	}
	b, _ := json.Marshal(map[string]any{iss: map[string]any{"keys": []any{m}}})
	trust, err := ParseTrust(b)
	if err != nil {
		t.Fatal(err)
	}
	return trust
}

// RFC 9864 section 2.2 registers COSE algorithm -19, "Ed25519", the fully-specified
// identifier of EdDSA over Ed25519, which RFC 9053 names polymorphically EdDSA (-8).
// For the COSE form (handoff-context section 3.2) the rule is the JWS one: the two
// identifiers are the one algorithm of an Ed25519 key (section 3.4's "exactly one
// algorithm" kept), so a trusted Ed25519 key, pinned to either name, verifies an offer
// or a status under -8 or -19; and a key pinned "Ed25519" signs the COSE form, with
// -8, what SignOffer writes for every Ed25519 key.
func TestRFC9864Sec2_HandoffSec3_2_COSEEd25519IsEdDSA(t *testing.T) {
	ctx := context.Background()
	_, o, payload := coseOffer(t)
	for _, pin := range []string{keys.EdDSA, keys.Ed25519} {
		k, err := keys.Generate(pin)
		if err != nil {
			t.Fatal(err)
		}
		trust := trustPinned(t, planner, pin, k)
		emitted, err := SignOffer(k, COSE, o)
		if err != nil {
			t.Fatalf("a key pinned %s signs no COSE offer: %v", pin, err)
		}
		var msg cose.Sign1Message
		if err := msg.UnmarshalCBOR(emitted.Octets); err != nil {
			t.Fatal(err)
		}
		if alg, _ := msg.Headers.Protected.Algorithm(); alg != cose.AlgorithmEdDSA {
			t.Fatalf("a key pinned %s signs COSE with alg %v, want EdDSA (-8)", pin, alg)
		}
		for _, c := range []struct {
			s    Signed
			name string
		}{{emitted, keys.EdDSA}, {coseWithAlg(t, coseAlgEd25519, k.KID(), payload, k), keys.Ed25519}} {
			v, err := VerifyOffer(ctx, trust, c.s, 0)
			if err != nil {
				t.Fatalf("key pinned %s, COSE alg %s: %v", pin, c.name, err)
			}
			if v.Alg != c.name || v.Offer.Hop != o.Hop {
				t.Fatalf("verified %+v", v)
			}
		}
		if err := verifyRenamedStatus(ctx, t, trust, o, emitted, func(sp []byte) Signed { return coseWithAlg(t, coseAlgEd25519, k.KID(), sp, k) }); err != nil {
			t.Fatalf("key pinned %s: a COSE status with alg Ed25519 (-19): %v", pin, err)
		}
		// A signature that does not verify is still refused under the other name.
		other, _ := keys.Generate(keys.EdDSA)
		if _, err := VerifyOffer(ctx, trust, coseWithAlg(t, coseAlgEd25519, k.KID(), payload, other), 0); !hasCause(err, errcode.InvalidSignature) {
			t.Fatalf("key pinned %s: -19 signed by another key: %v", pin, err)
		}
	}
}

// The COSE alias is only for Ed25519 keys: -19 under the kid of a trusted P-256 key
// is refused before any signature is checked, and Ed448 (-53, RFC 9864 section 2.2)
// is refused whatever the key.
func TestRFC9864Sec2_HandoffSec3_2_COSEEd25519RefusedForOtherKeys(t *testing.T) {
	ctx := context.Background()
	w, _, payload := coseOffer(t)
	p256 := w.key(planner)
	ed, _ := keys.Generate(keys.EdDSA)
	if _, err := VerifyOffer(ctx, w.trust, coseWithAlg(t, coseAlgEd25519, p256.KID(), payload, ed), 0); !hasCause(err, errcode.UnsupportedAlg) {
		t.Fatalf("COSE alg Ed25519 under a P-256 key's kid: %v", err)
	}
	edTrust := trustWithoutAlg(t, planner, ed)
	for _, c := range []struct {
		trust *StaticTrust
		kid   string
	}{{w.trust, p256.KID()}, {edTrust, ed.KID()}} {
		if _, err := VerifyOffer(ctx, c.trust, coseWithAlg(t, -53, c.kid, payload, ed), 0); !hasCause(err, errcode.UnsupportedAlg) {
			t.Fatalf("COSE alg Ed448 (kid %s): %v", c.kid, err)
		}
	}
}
