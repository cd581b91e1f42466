package handoff

import (
	"bytes"
	"context"
	"testing"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// Every decoder and parser: no panic, every rejection has a code, and whatever decodes
// encodes again to something that decodes to the same encoding (a fixed point).

func coded(t *testing.T, err error) {
	t.Helper()
	if err != nil && errcode.CodeOf(err) == errcode.Unmapped {
		t.Fatalf("rejection without a code: %v", err)
	}
}

func seedOffers(f *testing.F, asCBOR bool) {
	for _, o := range []*Offer{fullOffer(), {Hop: NewHopID(), Dialog: "d", Iss: "a", Aud: "b", Iat: 1, Exp: 2}} {
		var b []byte
		if asCBOR {
			b, _ = o.MarshalCBOR()
		} else {
			b, _ = o.MarshalJSON()
		}
		f.Add(b)
	}
}

func FuzzParseOfferJSON(f *testing.F) {
	seedOffers(f, false)
	f.Add([]byte(`{"v":1,"type":"offer","hop":"q3Zl0v8bVfQmJm2c4bq1Ww","dialog":"d","iss":"a","aud":"b","iat":1,"exp":2,"a":1,"a":2}`))
	f.Add([]byte(`{"v":1,"type":"offer","refs":[{"kind":"digest","dig":{"alg":"sha-256","val":"x"}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ParseOfferJSON(b)
		coded(t, err)
		if err != nil {
			return
		}
		enc, err := o.MarshalJSON()
		if err != nil {
			t.Fatalf("decoded offer does not encode: %v", err)
		}
		o2, err := ParseOfferJSON(enc)
		if err != nil {
			t.Fatalf("re-encoded offer does not decode: %v\n%s", err, enc)
		}
		enc2, _ := o2.MarshalJSON()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("not a fixed point:\n%s\n%s", enc, enc2)
		}
	})
}

func FuzzParseOfferCBOR(f *testing.F) {
	seedOffers(f, true)
	f.Add([]byte{0xa0})
	f.Add([]byte{0xbf, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ParseOfferCBOR(b)
		coded(t, err)
		if err != nil {
			return
		}
		enc, err := o.MarshalCBOR()
		if err != nil {
			t.Fatalf("decoded offer does not encode: %v", err)
		}
		o2, err := ParseOfferCBOR(enc)
		if err != nil {
			t.Fatalf("re-encoded offer does not decode: %v", err)
		}
		enc2, _ := o2.MarshalCBOR()
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("not a fixed point:\n%x\n%x", enc, enc2)
		}
	})
}

func seedStatus(f *testing.F, asCBOR bool) {
	r := ReasonPolicy
	st := &Status{Hop: NewHopID(), Offer: SHA256Digest([]byte("o")), Iss: "a", Aud: "b", Iat: 1, State: StateRejected, Reason: &r,
		Refs: []ContextRef{DigestRef([]byte("x"), "https://x")}, Extra: map[string]any{"e": []any{"1"}}}
	var b []byte
	if asCBOR {
		b, _ = st.MarshalCBOR()
	} else {
		b, _ = st.MarshalJSON()
	}
	f.Add(b)
}

func FuzzParseStatusJSON(f *testing.F) {
	seedStatus(f, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatusJSON(b)
		coded(t, err)
		if err == nil {
			if _, err := s.MarshalJSON(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func FuzzParseStatusCBOR(f *testing.F) {
	seedStatus(f, true)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStatusCBOR(b)
		coded(t, err)
		if err == nil {
			if _, err := s.MarshalCBOR(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func seedHandoffs(f *testing.F, asCBOR bool) {
	for _, form := range forms {
		w := newWorld(f, form)
		h, _ := w.chain(user, planner, coder)
		h.Extra = map[string]any{"x": "y"}
		var b []byte
		if asCBOR {
			b, _ = h.MarshalCBOR()
		} else {
			b, _ = h.MarshalJSON()
		}
		f.Add(b)
	}
}

func FuzzParseHandoffJSON(f *testing.F) {
	seedHandoffs(f, false)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHandoffJSON(b, 0)
		coded(t, err)
		if err != nil {
			return
		}
		enc, err := h.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		h2, err := ParseHandoffJSON(enc, 0)
		if err != nil || !h2.Offer.Equal(h.Offer) || len(h2.Chain) != len(h.Chain) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzParseHandoffCBOR(f *testing.F) {
	seedHandoffs(f, true)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHandoffCBOR(b, 0)
		coded(t, err)
		if err != nil {
			return
		}
		enc, err := h.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		h2, err := ParseHandoffCBOR(enc, 0)
		if err != nil || !h2.Offer.Equal(h.Offer) || len(h2.Chain) != len(h.Chain) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// The signed-form parsers and verification, fed raw octets of either form: nothing but
// the genuine signed offer verifies.
func fuzzVerify(f *testing.F, form Form) {
	w := newWorld(f, form)
	good := w.sign(w.newOffer(planner, coder))
	f.Add(good.Octets)
	f.Add([]byte("a.b.c"))
	f.Add([]byte{0xd2, 0x84, 0x40, 0xa0, 0xf6, 0x40})
	trust := w.trust
	f.Fuzz(func(t *testing.T, b []byte) {
		s := Signed{Form: form, Octets: b}
		vo, err := VerifyOffer(context.Background(), trust, s, 0)
		coded(t, err)
		if err == nil && !bytes.Equal(b, good.Octets) {
			// ES256 cannot be forged by a fuzzer; COSE octets may differ only in ways
			// that keep the signed content (e.g. the unprotected header).
			if form == JWS || vo.Hop == "" {
				t.Fatalf("verified octets that were not signed: %x", b)
			}
		}
		_, err = VerifyStatusSignature(context.Background(), trust, s, 0)
		coded(t, err)
	})
}

func FuzzVerifyJWS(f *testing.F)  { fuzzVerify(f, JWS) }
func FuzzVerifyCOSE(f *testing.F) { fuzzVerify(f, COSE) }
