package handoff

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// A full offer exercising every member, with extension members at every level.
func fullOffer() *Offer {
	iss := "https://idp.u.example"
	loc := "https://a.example/ctx/9"
	task := "task-42"
	grant := BindGrant([]byte("token"))
	prev := SHA256Digest([]byte("prev"))
	return &Offer{
		Hop: "q3Zl0v8bVfQmJm2c4bq1Ww", Dialog: "ctx-7c1e", Task: &task, Iss: planner, Aud: coder,
		Iat: 1793000000, Exp: 1793000120,
		Obo:   &Principal{Sub: "u-8f2a", Iss: &iss, Extra: map[string]any{"acr": "mfa"}},
		Grant: &grant, Prev: &prev,
		Refs: []ContextRef{
			{Kind: KindDigest, Dig: SHA256Digest([]byte("x")), Loc: &loc, Extra: map[string]any{"note": "n"}},
			{Kind: "urn:example:kind", Dig: SHA256Digest([]byte("y")), Proof: map[string]any{"a": []any{true, nil, "s"}}},
		},
		Extra: map[string]any{"ext": map[string]any{"k": "v", "list": []any{"a", "b"}}, "flag": true},
	}
}

func encodeOffer(t *testing.T, o *Offer, asCBOR bool) []byte {
	t.Helper()
	var b []byte
	var err error
	if asCBOR {
		b, err = o.MarshalCBOR()
	} else {
		b, err = o.MarshalJSON()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeOffer(b []byte, asCBOR bool) (*Offer, error) {
	if asCBOR {
		return ParseOfferCBOR(b)
	}
	return ParseOfferJSON(b)
}

// Section 2: unknown members are ignored and kept. Decoding then encoding gives the same
// octets in each encoding, and converting through the other encoding keeps every member.
func TestSec2_UnknownMembersPreserved(t *testing.T) {
	for _, asCBOR := range []bool{false, true} {
		b1 := encodeOffer(t, fullOffer(), asCBOR)
		o, err := decodeOffer(b1, asCBOR)
		if err != nil {
			t.Fatalf("cbor=%v: %v", asCBOR, err)
		}
		if o.Extra["flag"] != true || o.Obo.Extra["acr"] != "mfa" || o.Refs[0].Extra["note"] != "n" {
			t.Fatalf("cbor=%v: extras lost: %+v", asCBOR, o.Extra)
		}
		if b2 := encodeOffer(t, o, asCBOR); !bytes.Equal(b1, b2) {
			t.Fatalf("cbor=%v: round trip differs\n%x\n%x", asCBOR, b1, b2)
		}
		// Through the other encoding and back.
		other, err := decodeOffer(encodeOffer(t, o, !asCBOR), !asCBOR)
		if err != nil {
			t.Fatal(err)
		}
		if b3 := encodeOffer(t, other, asCBOR); !bytes.Equal(b1, b3) {
			t.Fatalf("cbor=%v: conversion lost something\n%s\n%s", asCBOR, b1, b3)
		}
	}
	// A status too.
	reason := ReasonPolicy
	st := &Status{Hop: "q3Zl0v8bVfQmJm2c4bq1Ww", Offer: SHA256Digest([]byte("o")), Iss: coder, Aud: planner, Iat: 1,
		State: StateRejected, Reason: &reason, Detail: String("d"), Extra: map[string]any{"x-ext": []any{"1"}}}
	for _, asCBOR := range []bool{false, true} {
		var b []byte
		var got *Status
		var err error
		if asCBOR {
			b, _ = st.MarshalCBOR()
			got, err = ParseStatusCBOR(b)
		} else {
			b, _ = st.MarshalJSON()
			got, err = ParseStatusJSON(b)
		}
		if err != nil || got.Extra["x-ext"] == nil || got.ReasonValue() != ReasonPolicy || *got.Detail != "d" {
			t.Fatalf("status cbor=%v: %v %+v", asCBOR, err, got)
		}
	}
	// A number in an extension keeps its exact digits through JSON.
	o, err := ParseOfferJSON([]byte(`{"v":1,"type":"offer","hop":"q3Zl0v8bVfQmJm2c4bq1Ww","dialog":"d","iss":"a","aud":"b","iat":1,"exp":2,"big":123456789012345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := o.MarshalJSON(); !strings.Contains(string(b), `"big":123456789012345678901234567890`) {
		t.Fatalf("number changed: %s", b)
	}
}

// A member name that appears twice is refused in both encodings (encoding/json would
// quietly keep the last one).
func TestSec2_DuplicateMembersRejected(t *testing.T) {
	for _, s := range []string{
		`{"v":1,"type":"offer","hop":"q3Zl0v8bVfQmJm2c4bq1Ww","dialog":"d","iss":"a","aud":"b","iat":1,"exp":2,"aud":"c"}`,
		`{"v":1,"type":"offer","hop":"q3Zl0v8bVfQmJm2c4bq1Ww","dialog":"d","iss":"a","aud":"b","iat":1,"exp":2,"\u0061ud":"c"}`,
		`{"v":1,"type":"offer","hop":"q3Zl0v8bVfQmJm2c4bq1Ww","dialog":"d","iss":"a","aud":"b","iat":1,"exp":2,"prev":{"alg":"sha-256","val":"M-OyKnHLAGKpiZKw7sNqAsNKmtfRQ7DUFhtKAL3Slmg","val":"M-OyKnHLAGKpiZKw7sNqAsNKmtfRQ7DUFhtKAL3Slmg"}}`,
	} {
		if _, err := ParseOfferJSON([]byte(s)); err == nil {
			t.Errorf("accepted %s", s)
		}
	}
	// CBOR: a map with "aud" twice, built by hand.
	b := cborOffer(t, map[string]any{})
	dup := append([]byte{b[0] + 1}, b[1:]...)
	dup = append(dup, 0x63, 'a', 'u', 'd', 0x61, 'c')
	if _, err := ParseOfferCBOR(dup); err == nil {
		t.Error("CBOR duplicate key accepted")
	}
}

// cborOffer returns a CBOR offer with members replaced or added by over (nil removes).
func cborOffer(t *testing.T, over map[string]any) []byte {
	t.Helper()
	m := map[string]any{"v": 1, "type": "offer", "hop": "q3Zl0v8bVfQmJm2c4bq1Ww", "dialog": "d", "iss": "a", "aud": "b",
		"iat": 1, "exp": 2}
	for k, v := range over {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := cborEnc.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonOffer(t *testing.T, over map[string]string) []byte {
	t.Helper()
	m := map[string]string{"v": "1", "type": `"offer"`, "hop": `"q3Zl0v8bVfQmJm2c4bq1Ww"`, "dialog": `"d"`, "iss": `"a"`,
		"aud": `"b"`, "iat": "1", "exp": "2"}
	for k, v := range over {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, `"`+k+`":`+v)
	}
	return []byte("{" + strings.Join(parts, ",") + "}")
}

// Section 2: required members and their types.
func TestSec2_RequiredMembersAndTypes(t *testing.T) {
	if _, err := ParseOfferJSON(jsonOffer(t, nil)); err != nil {
		t.Fatalf("base JSON offer: %v", err)
	}
	if _, err := ParseOfferCBOR(cborOffer(t, nil)); err != nil {
		t.Fatalf("base CBOR offer: %v", err)
	}
	for _, m := range []string{"v", "type", "hop", "dialog", "iss", "aud", "iat", "exp"} {
		if _, err := ParseOfferJSON(jsonOffer(t, map[string]string{m: ""})); err == nil {
			t.Errorf("JSON offer without %s accepted", m)
		}
		if _, err := ParseOfferCBOR(cborOffer(t, map[string]any{m: nil})); err == nil {
			t.Errorf("CBOR offer without %s accepted", m)
		}
	}
	for name, over := range map[string]map[string]string{
		"v 2":            {"v": "2"},
		"v 1.0":          {"v": "1.0"},
		"v text":         {"v": `"1"`},
		"type status":    {"type": `"status"`},
		"iat text":       {"iat": `"1"`},
		"iat negative":   {"iat": "-1"},
		"iat fraction":   {"iat": "1.5"},
		"iat exponent":   {"iat": "1e3"},
		"iat too big":    {"iat": "18446744073709551616"},
		"dialog number":  {"dialog": "7"},
		"iss null":       {"iss": "null"},
		"task number":    {"task": "1"},
		"obo text":       {"obo": `"u"`},
		"obo no sub":     {"obo": `{"iss":"x"}`},
		"refs empty":     {"refs": "[]"},
		"refs object":    {"refs": `{}`},
		"grant text":     {"grant": `"x"`},
		"ref bad kind":   {"refs": `[{"kind":"word","dig":{"alg":"sha-256","val":"V_WPM8F9ztg6WxBxj1ZIGnzRbM1Xyp5GVdpEYmwbvuQ"}}]`},
		"ref no dig":     {"refs": `[{"kind":"digest"}]`},
		"ref loc number": {"refs": `[{"kind":"digest","dig":{"alg":"sha-256","val":"V_WPM8F9ztg6WxBxj1ZIGnzRbM1Xyp5GVdpEYmwbvuQ"},"loc":1}]`},
	} {
		if _, err := ParseOfferJSON(jsonOffer(t, over)); err == nil {
			t.Errorf("JSON %s accepted", name)
		} else if c := errcode.CodeOf(err); c == errcode.Unmapped {
			t.Errorf("JSON %s: uncoded error %v", name, err)
		}
	}
	for name, over := range map[string]map[string]any{
		"v 2":          {"v": 2},
		"v float":      {"v": 1.0},
		"iat text":     {"iat": "1"},
		"iat negative": {"iat": -1},
		"iat float":    {"iat": 1.5},
		"iat tagged":   {"iat": cbor.Tag{Number: 1, Content: 1}},
		"hop bytes":    {"hop": []byte("q3Zl0v8bVfQmJm2c4bq1Ww")},
		"hop tagged":   {"hop": cbor.Tag{Number: 32, Content: "q3Zl0v8bVfQmJm2c4bq1Ww"}},
		"obo no sub":   {"obo": map[string]any{"iss": "x"}},
		"refs empty":   {"refs": []any{}},
	} {
		if _, err := ParseOfferCBOR(cborOffer(t, over)); err == nil {
			t.Errorf("CBOR %s accepted", name)
		}
	}
	// Not a map, trailing data, integer keys.
	for _, b := range [][]byte{{0x80}, append(cborOffer(t, nil), 0x00), {0xa1, 0x01, 0x01}} {
		if _, err := ParseOfferCBOR(b); err == nil {
			t.Errorf("CBOR %x accepted", b)
		}
	}
	// Status: state is a closed set; offer is a Digest.
	base := `{"v":1,"type":"status","hop":"q3Zl0v8bVfQmJm2c4bq1Ww","offer":{"alg":"sha-256","val":"kJIcudVNmFFwbYKTXNO3mqC3e9dQSWVXDNbamGeoP18"},"iss":"a","aud":"b","iat":1,"state":"accepted"}`
	if _, err := ParseStatusJSON([]byte(base)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		strings.Replace(base, `"accepted"`, `"offered"`, 1),
		strings.Replace(base, `"accepted"`, `"expired"`, 1),
		strings.Replace(base, `,"state":"accepted"`, ``, 1),
		strings.Replace(base, `"offer":{"alg":"sha-256","val":"kJIcudVNmFFwbYKTXNO3mqC3e9dQSWVXDNbamGeoP18"}`, `"offer":"x"`, 1),
		strings.Replace(base, `"type":"status"`, `"type":"offer"`, 1),
	} {
		if _, err := ParseStatusJSON([]byte(s)); err == nil {
			t.Errorf("status accepted: %s", s)
		}
	}
}

// Section 2: HopId = text .regexp "[A-Za-z0-9_-]{22,64}".
func TestSec2_HopIdPattern(t *testing.T) {
	for hop, ok := range map[string]bool{
		strings.Repeat("a", 22): true, strings.Repeat("Z", 64): true, "q3Zl0v8bVfQmJm2c4bq1Ww": true, "-_09azAZ-_09azAZ-_09az": true,
		strings.Repeat("a", 21): false, strings.Repeat("a", 65): false, "q3Zl0v8bVfQmJm2c4bq1W=": false,
		"q3Zl0v8bVfQmJm2c4bq1W+": false, "q3Zl0v8bVfQmJm2c4bq1W/": false, "q3Zl0v8bVfQmJm2c4bq1W ": false, "": false,
	} {
		_, errJ := ParseOfferJSON(jsonOffer(t, map[string]string{"hop": `"` + hop + `"`}))
		_, errC := ParseOfferCBOR(cborOffer(t, map[string]any{"hop": hop}))
		if (errJ == nil) != ok || (errC == nil) != ok {
			t.Errorf("hop %q: json %v cbor %v, want ok=%v", hop, errJ, errC, ok)
		}
	}
	// NewHopID gives 128 random bits in 22 characters, and never repeats.
	seen := map[string]bool{}
	for range 1000 {
		h := NewHopID()
		if !validHopID(h) || len(h) != 22 || seen[h] {
			t.Fatalf("NewHopID %q", h)
		}
		seen[h] = true
	}
}

// Section 2: Digest is a closed map of alg and val; val is the full hash output in
// base64url without padding, never shorter than 256 bits.
func TestSec2_DigestClosedMap(t *testing.T) {
	good := `{"alg":"sha-256","val":"M-OyKnHLAGKpiZKw7sNqAsNKmtfRQ7DUFhtKAL3Slmg"}`
	if _, err := ParseOfferJSON(jsonOffer(t, map[string]string{"prev": good})); err != nil {
		t.Fatal(err)
	}
	long := base64.RawURLEncoding.EncodeToString(make([]byte, 48))
	for name, d := range map[string]string{
		"extra member":     `{"alg":"sha-256","val":"M-OyKnHLAGKpiZKw7sNqAsNKmtfRQ7DUFhtKAL3Slmg","x":1}`,
		"no val":           `{"alg":"sha-256"}`,
		"no alg":           `{"val":"M-OyKnHLAGKpiZKw7sNqAsNKmtfRQ7DUFhtKAL3Slmg"}`,
		"padding":          `{"alg":"sha-256","val":"M-OyKnHLAGKpiZKw7sNqAsNKmtfRQ7DUFhtKAL3Slmg="}`,
		"std alphabet":     `{"alg":"sha-256","val":"M+OyKnHLAGKpiZKw7sNqAsNKmtfRQ7DUFhtKAL3Slmg"}`,
		"short":            `{"alg":"sha-256","val":"M-OyKnHLAGKpiZKw7sNqAsNKmtfRQ7DUFhtKAL3S"}`,
		"sha-256 48 bytes": `{"alg":"sha-256","val":"` + long + `"}`,
		"other alg short":  `{"alg":"sha-1","val":"` + base64.RawURLEncoding.EncodeToString(make([]byte, 20)) + `"}`,
		"val number":       `{"alg":"sha-256","val":1}`,
	} {
		if _, err := ParseOfferJSON(jsonOffer(t, map[string]string{"prev": d})); err == nil {
			t.Errorf("digest %s accepted", name)
		}
		var m map[string]any
		_ = json.Unmarshal([]byte(d), &m)
		if _, err := ParseOfferCBOR(cborOffer(t, map[string]any{"prev": m})); err == nil {
			t.Errorf("CBOR digest %s accepted", name)
		}
	}
	// A digest of another alg with at least 256 bits is well formed (the check that
	// depends on it is what fails, TestSec2_UnknownDigestAlg).
	if _, err := ParseOfferJSON(jsonOffer(t, map[string]string{"prev": `{"alg":"sha-384","val":"` + long + `"}`})); err != nil {
		t.Fatal(err)
	}
}

// Section 2: a receiver that does not implement a Digest's alg treats a check that
// depends on it as failed for prev and grant, and as unverifiable for refs.
func TestSec2_UnknownDigestAlg(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		other := Digest{Alg: "sha-384", Val: base64.RawURLEncoding.EncodeToString(make([]byte, 48))}
		// prev: the chain link fails.
		h, offers := w.chain(user, planner, coder)
		o := offers[1]
		o.Prev = &other
		h.Offer = w.sign(o)
		r, _ := w.receiver(coder)
		d, err := receive(r, h)
		wantReject(t, d, err, ReasonBrokenChain)
		// grant: fails.
		o2 := w.newOffer(planner, coder)
		o2.Grant = &other
		r2, _ := w.receiver(coder)
		d, err = r2.Receive(context.Background(), Inbound{Handoff: &Handoff{Offer: w.sign(o2)}, Credential: []byte("t")})
		if d.Outcome != OutcomeRejected || d.Reason != ReasonPolicy {
			t.Fatalf("grant with unknown alg: %s/%s", d.Outcome, d.Reason)
		}
		wantCode(t, err, errcode.HandoffGrantMismatch)
		// refs: unverifiable.
		res := CheckRef(context.Background(), ContextRef{Kind: KindDigest, Dig: other}, &RefObject{Octets: []byte("x")}, nil)
		if res.Outcome != RefUnverifiable {
			t.Fatalf("ref with unknown alg: %+v", res)
		}
	})
}

// Section 2.1: the Handoff object in JSON and CBOR, with chains of either form, and its
// own unknown members.
func TestSec2_1_HandoffObject(t *testing.T) {
	wj, wc := newWorld(t, JWS), newWorld(t, COSE)
	a := wj.sign(wj.newOffer(user, planner))
	b := wc.sign(wc.newOffer(planner, coder))
	h := &Handoff{Offer: b, Chain: []Signed{a, b}, Extra: map[string]any{"x-note": "kept"}}
	jb, err := h.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// A COSE element in JSON is base64url text, which never contains a period.
	if !strings.Contains(string(jb), `"offer":"`+base64.RawURLEncoding.EncodeToString(b.Octets)+`"`) {
		t.Fatalf("COSE element not base64url in JSON: %s", jb)
	}
	cb, err := h.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	for name, parse := range map[string]func() (*Handoff, error){
		"json": func() (*Handoff, error) { return ParseHandoffJSON(jb, 0) },
		"cbor": func() (*Handoff, error) { return ParseHandoffCBOR(cb, 0) },
	} {
		got, err := parse()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !got.Offer.Equal(b) || len(got.Chain) != 2 || !got.Chain[0].Equal(a) || !got.Chain[1].Equal(b) || got.Extra["x-note"] != "kept" {
			t.Fatalf("%s: round trip changed the handoff", name)
		}
	}
	// In CBOR a JWS is text and a COSE message a byte string.
	var raw map[string]any
	if err := cbor.Unmarshal(cb, &raw); err != nil {
		t.Fatal(err)
	}
	chain := raw["chain"].([]any)
	if _, ok := chain[0].(string); !ok {
		t.Error("JWS in a CBOR chain is not text")
	}
	if _, ok := chain[1].([]byte); !ok {
		t.Error("COSE in a CBOR chain is not a byte string")
	}
	for _, bad := range []string{`{}`, `{"offer":1}`, `{"offer":"a.b"}`, `{"offer":"a.b.c","chain":[]}`, `{"offer":"a.b.c","chain":"a.b.c"}`,
		`{"offer":"a.b.c","offer":"a.b.c"}`, `{"offer":"not base64!"}`, `[]`} {
		if _, err := ParseHandoffJSON([]byte(bad), 0); err == nil {
			t.Errorf("handoff %s accepted", bad)
		}
	}
	if _, err := ParseHandoffJSON(jb, 10); !hasCause(err, errcode.BodyTooLarge) {
		t.Errorf("size bound: %v", err)
	}
}

// Section 2.2: kinds other than the four defined are absolute URIs.
func TestSec2_2_ReferenceKinds(t *testing.T) {
	d := SHA256Digest([]byte("x"))
	for kind, ok := range map[string]bool{
		KindDigest: true, KindSaltedDigest: true, KindSCITTReceipt: true, KindLearnlogHead: true,
		"urn:example:ctx": true, "https://example.com/kinds/k1": true, "tag:example.com,2026:k": true,
		"word": false, "": false, ":x": false, "1abc:x": false, "https://example.com/k#frag": false, "a b:c": false,
	} {
		r := ContextRef{Kind: kind, Dig: d}
		if err := r.Validate(); (err == nil) != ok {
			t.Errorf("kind %q: %v, want ok=%v", kind, err, ok)
		}
	}
}

// Section 2.2: the four outcomes, and never "verified" without the check.
func TestSec2_2_ReferenceOutcomes(t *testing.T) {
	ctx := context.Background()
	obj := []byte(`{"repo":"https://git.a.example/app","commit":"9fceb02","issue":9}`)
	ref := DigestRef(obj, "https://a.example/ctx/9")
	for name, tc := range map[string]struct {
		ref  ContextRef
		obj  *RefObject
		want RefOutcome
	}{
		"digest matches":       {ref, &RefObject{Octets: obj}, RefVerified},
		"digest differs":       {ref, &RefObject{Octets: append(obj, ' ')}, RefMismatch},
		"object not available": {ref, nil, RefUnverifiable},
		"unknown kind":         {ContextRef{Kind: "urn:x:y", Dig: ref.Dig}, &RefObject{Octets: obj}, RefUnverifiable},
	} {
		if got := CheckRef(ctx, tc.ref, tc.obj, nil); got.Outcome != tc.want {
			t.Errorf("%s: %+v, want %s", name, got, tc.want)
		}
	}
	// Salted: the salt precedes the octets and is at least 16 octets.
	sref, salt := SaltedRef(obj, "")
	if len(salt) < 16 {
		t.Fatal("short salt")
	}
	if got := CheckRef(ctx, sref, &RefObject{Octets: obj, Salt: salt}, nil); got.Outcome != RefVerified {
		t.Errorf("salted: %+v", got)
	}
	if got := CheckRef(ctx, sref, &RefObject{Octets: obj, Salt: append([]byte{1}, salt[1:]...)}, nil); got.Outcome != RefMismatch {
		t.Errorf("salted with another salt: %+v", got)
	}
	if got := CheckRef(ctx, sref, &RefObject{Octets: obj}, nil); got.Outcome != RefUnverifiable {
		t.Errorf("salted without salt: %+v", got)
	}
	short := SHA256Digest(append(make([]byte, 8), obj...))
	if got := CheckRef(ctx, ContextRef{Kind: KindSaltedDigest, Dig: short}, &RefObject{Octets: obj, Salt: make([]byte, 8)}, nil); got.Outcome != RefUnverifiable {
		t.Errorf("8-octet salt: %+v", got)
	}
	// Not required: not checked, even when the object is at hand.
	res, err := checkRefs(ctx, []ContextRef{ref}, RefPolicy{Source: RefSourceFunc(func(context.Context, ContextRef) (*RefObject, error) {
		return &RefObject{Octets: obj}, nil
	})})
	if err != nil || res[0].Outcome != RefNotChecked {
		t.Errorf("unrequired ref: %+v %v", res, err)
	}
	// A verifier that cannot establish anything does not make a ref verified.
	v := map[string]ProofVerifier{"urn:x:y": verifierFunc(func() (RefOutcome, error) { return RefNotChecked, nil })}
	if got := CheckRef(ctx, ContextRef{Kind: "urn:x:y", Dig: ref.Dig}, nil, v); got.Outcome != RefUnverifiable {
		t.Errorf("verifier saying not-checked: %+v", got)
	}
}

type verifierFunc func() (RefOutcome, error)

func (f verifierFunc) VerifyProof(context.Context, ContextRef, *RefObject) (RefOutcome, error) {
	return f()
}

// Section 2.2: the salt never appears in the element.
func TestSec2_2_SaltNotInElement(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		ref, salt := SaltedRef([]byte("short prompt"), "")
		o := w.newOffer(planner, coder)
		o.Refs = []ContextRef{ref}
		s := w.sign(o)
		for _, enc := range [][]byte{salt, []byte(base64.RawURLEncoding.EncodeToString(salt)), []byte(base64.StdEncoding.EncodeToString(salt))} {
			if bytes.Contains(s.Octets, enc) {
				t.Fatal("salt found in the signed offer")
			}
		}
		vo, err := VerifyOffer(context.Background(), w.trust, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(mustJSON(t, vo.Offer)), `"salt"`) {
			t.Fatal("salt member in the offer")
		}
	})
}

func mustJSON(t *testing.T, o *Offer) []byte {
	t.Helper()
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Appendix A: a SCITT receipt reference is parsed (bstr in CBOR, base64url in JSON),
// its dig is checked against the statement with the unprotected header emptied, and it
// is unverifiable unless a receipt verifier is configured.
func TestAppendixA_SCITTReceipt(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, COSE)
	signer, _ := cose.NewSigner(cose.AlgorithmES256, w.key(user).Signer())
	msg := cose.NewSign1Message()
	msg.Headers.Protected.SetAlgorithm(cose.AlgorithmES256)
	msg.Payload = []byte("statement")
	if err := msg.Sign(nil, nil, signer); err != nil {
		// go-cose needs a rand source for ECDSA.
		if err = msg.Sign(randReader{}, nil, signer); err != nil {
			t.Fatal(err)
		}
	}
	bare, _ := msg.MarshalCBOR()
	msg.Headers.Unprotected[int64(394)] = []any{[]byte{0xa0}}
	withReceipt, _ := msg.MarshalCBOR()
	dig, err := SCITTStatementDigest(withReceipt)
	if err != nil {
		t.Fatal(err)
	}
	if !dig.Equal(SHA256Digest(bare)) {
		t.Fatal("unprotected receipts change the statement digest")
	}
	receipt := []byte{0xd2, 0x84, 0x40, 0xa0, 0xf6, 0x40} // any well-formed CBOR item
	for _, proof := range []any{receipt, base64.RawURLEncoding.EncodeToString(receipt)} {
		ref := ContextRef{Kind: KindSCITTReceipt, Dig: dig, Proof: proof}
		if b, err := ParseSCITTReceipt(ref); err != nil || !bytes.Equal(b, receipt) {
			t.Fatalf("receipt: %v", err)
		}
		if got := CheckRef(ctx, ref, &RefObject{Octets: withReceipt}, nil); got.Outcome != RefUnverifiable {
			t.Errorf("no verifier: %+v", got)
		}
		v := map[string]ProofVerifier{KindSCITTReceipt: verifierFunc(func() (RefOutcome, error) { return RefVerified, nil })}
		if got := CheckRef(ctx, ref, &RefObject{Octets: withReceipt}, v); got.Outcome != RefVerified {
			t.Errorf("with verifier: %+v", got)
		}
		if got := CheckRef(ctx, ref, &RefObject{Octets: bare[:len(bare)-1]}, v); got.Outcome != RefUnverifiable {
			t.Errorf("broken statement: %+v", got)
		}
		other := ContextRef{Kind: KindSCITTReceipt, Dig: SHA256Digest([]byte("other")), Proof: proof}
		if got := CheckRef(ctx, other, &RefObject{Octets: withReceipt}, v); got.Outcome != RefMismatch {
			t.Errorf("other statement: %+v", got)
		}
	}
	if _, err := ParseSCITTReceipt(ContextRef{Kind: KindSCITTReceipt, Proof: 7}); err == nil {
		t.Error("numeric proof accepted")
	}
}

// Appendix B: a Learnlog head reference is parsed (its proof is a SignedHead object)
// and is unverifiable unless a head verifier is configured.
func TestAppendixB_LearnlogHead(t *testing.T) {
	ctx := context.Background()
	head := map[string]any{"record_hash": "x", "seq": json.Number("3"), "entry_hash": "y", "time": "2026-11-02T00:00:00Z", "sig": "a.b.c"}
	ref := ContextRef{Kind: KindLearnlogHead, Dig: SHA256Digest([]byte("jcs")), Proof: head}
	if _, err := ParseLearnlogHead(ref); err != nil {
		t.Fatal(err)
	}
	if got := CheckRef(ctx, ref, nil, nil); got.Outcome != RefUnverifiable {
		t.Errorf("no verifier: %+v", got)
	}
	for _, want := range []RefOutcome{RefVerified, RefMismatch} {
		v := map[string]ProofVerifier{KindLearnlogHead: verifierFunc(func() (RefOutcome, error) { return want, nil })}
		if got := CheckRef(ctx, ref, nil, v); got.Outcome != want {
			t.Errorf("verifier says %s: %+v", want, got)
		}
	}
	// From CBOR the head arrives as a map with text keys.
	cref := ContextRef{Kind: KindLearnlogHead, Dig: ref.Dig, Proof: map[any]any{"seq": uint64(3)}}
	if _, err := ParseLearnlogHead(cref); err != nil {
		t.Fatal(err)
	}
	bad := ContextRef{Kind: KindLearnlogHead, Dig: ref.Dig, Proof: "a.b.c"}
	v := map[string]ProofVerifier{KindLearnlogHead: verifierFunc(func() (RefOutcome, error) { return RefVerified, nil })}
	if got := CheckRef(ctx, bad, nil, v); got.Outcome != RefUnverifiable {
		t.Errorf("malformed head: %+v", got)
	}
}

// Section 2: a receiver ignores members it does not understand, and a forwarder keeps
// them (they are covered by the signature, so the octets are forwarded unchanged).
func TestSec2_ReceiverIgnoresAndForwarderKeepsUnknownMembers(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		o := w.newOffer(user, planner)
		o.Extra = map[string]any{"x-priority": "high", "x-budget": map[string]any{"tokens": json.Number("1000")}}
		o.Obo = &Principal{Sub: "u-8f2a", Extra: map[string]any{"x-pairwise": true}}
		o.Refs = []ContextRef{{Kind: KindDigest, Dig: SHA256Digest([]byte("x")), Extra: map[string]any{"x-size": json.Number("1")}}}
		first := &Handoff{Offer: w.sign(o)}
		rp, _ := w.receiver(planner)
		d, err := receive(rp, first)
		wantAccept(t, d, err)
		if d.Offer.Extra["x-priority"] != "high" {
			t.Fatal("unknown member not kept")
		}
		dl := w.delegator(planner)
		next, err := dl.Offer(context.Background(), OfferRequest{Offer: Offer{Aud: coder, Dialog: "ctx-7c1e"}, From: first})
		if err != nil {
			t.Fatal(err)
		}
		if !next.Chain[0].Equal(first.Offer) {
			t.Fatal("forwarded element changed")
		}
		rc, _ := w.receiver(coder)
		d, err = receive(rc, next)
		wantAccept(t, d, err)
		if d.Chain.Offers[0].Extra["x-priority"] != "high" || d.Chain.Offers[0].Obo.Extra["x-pairwise"] != true {
			t.Fatal("unknown members lost along the chain")
		}
	})
}

// Section 2: grant "MUST NOT contain the credential itself" (see also section 8.9).
func TestSec2_GrantMustNotContainCredential(t *testing.T) {
	cred := []byte("example access token issued to spiffe://b.example/agent/coder")
	g := BindGrant(cred)
	raw, _ := base64.RawURLEncoding.DecodeString(g.Val)
	if len(raw) != 32 || bytes.Contains([]byte(g.Val), cred) || g.Alg != SHA256 {
		t.Fatalf("grant %+v", g)
	}
}

// Section 2: "Detail is free text for people and MUST NOT be relied on by software":
// two statuses that differ only in detail have the same effect.
func TestSec2_DetailNotReliedOn(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		for _, detail := range []string{"", "completed after all", "FAILED"} {
			dl := w.delegator(planner)
			h, _ := dl.Offer(context.Background(), OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}})
			st := &Status{Hop: mustHop(t, w, h), Offer: h.Offer.Digest(), Iss: coder, Aud: planner, Iat: 1, State: StateCompleted}
			if detail != "" {
				st.Detail = &detail
			}
			u, err := dl.HandleStatus(context.Background(), w.signStatus(st))
			if err != nil || u.Hop.State != StateCompleted || !u.Hop.Resolved || u.Hop.Reason != "" {
				t.Fatalf("detail %q: %+v %v", detail, u, err)
			}
		}
	})
}

// Text members with quotes, escapes, control characters and non-ASCII survive both
// encodings; invalid UTF-8 is refused.
func TestSec2_TextRoundTrip(t *testing.T) {
	o := fullOffer()
	o.Dialog = "quote\" backslash\\ nl\n cr\r tab\t bell\a nul\x00 <html>&amp; é 中 \u2028"
	for _, asCBOR := range []bool{false, true} {
		got, err := decodeOffer(encodeOffer(t, o, asCBOR), asCBOR)
		if err != nil || got.Dialog != o.Dialog {
			t.Fatalf("cbor=%v: %q %v", asCBOR, got.Dialog, err)
		}
	}
	if b, _ := o.MarshalJSON(); !bytes.Contains(b, []byte("<html>&amp;")) {
		t.Fatal("HTML escaping in the JSON form")
	}
	o.Dialog = "bad \xff"
	if _, err := o.MarshalJSON(); err == nil {
		t.Fatal("invalid UTF-8 written")
	}
	if _, err := ParseOfferJSON(jsonOffer(t, map[string]string{"dialog": "\"bad \xff\""})); err == nil {
		t.Fatal("invalid UTF-8 read")
	}
	tr, err := ParseTrust([]byte(`{"a":{"keys":[]},"b":{"keys":[]}}`))
	if err != nil || len(tr.Agents()) != 2 {
		t.Fatalf("%v", err)
	}
	if _, err := tr.KeysFor(context.Background(), "a"); err == nil {
		t.Fatal("an agent with no keys is trusted")
	}
	for _, bad := range []string{`[]`, `{"a":{"keys":[{"kty":"EC"}]}}`, `{"a":{}}`, `{"a":1,"a":2}`} {
		if _, err := ParseTrust([]byte(bad)); err == nil {
			t.Errorf("trust %s accepted", bad)
		}
	}
}

// Duplicate detection stays linear: a large object with many members, and a duplicate
// at the end, is refused quickly.
func TestSec8_8_ManyMembersLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"offer":"a.b.c"`)
	for i := range 60_000 {
		b.WriteString(`,"m` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i) + `":0`)
	}
	big := b.String()
	if _, err := ParseHandoffJSON([]byte(big+"}"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseHandoffJSON([]byte(big+`,"offer":"a.b.c"}`), 0); err == nil {
		t.Fatal("duplicate accepted")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
