package handoff

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

var b64 = base64.RawURLEncoding

// handJWS signs payload under an arbitrary protected header with k (nil: signature "x").
func handJWS(t *testing.T, header map[string]any, payload []byte, k *keys.PrivateKey) Signed {
	t.Helper()
	hb, _ := json.Marshal(header)
	in := b64.EncodeToString(hb) + "." + b64.EncodeToString(payload)
	if k == nil {
		return Signed{Form: JWS, Octets: []byte(in + ".eA")}
	}
	sig, err := k.Sign([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	return Signed{Form: JWS, Octets: []byte(in + "." + b64.EncodeToString(sig))}
}

// handCOSE signs payload with protected header parameters of the caller's choosing.
func handCOSE(t *testing.T, protected cose.ProtectedHeader, payload []byte, k *keys.PrivateKey, tagged bool) Signed {
	t.Helper()
	signer, err := cose.NewSigner(cose.AlgorithmES256, k.Signer())
	if err != nil {
		t.Fatal(err)
	}
	msg := cose.NewSign1Message()
	for l, v := range protected {
		msg.Headers.Protected[l] = v
	}
	msg.Payload = payload
	if err := msg.Sign(randReader{}, nil, signer); err != nil {
		t.Fatal(err)
	}
	var b []byte
	if tagged {
		b, err = msg.MarshalCBOR()
	} else {
		b, err = (*cose.UntaggedSign1Message)(msg).MarshalCBOR()
	}
	if err != nil {
		t.Fatal(err)
	}
	return Signed{Form: COSE, Octets: b}
}

// Section 3.1: the protected header holds alg, kid (the RFC 7638 thumbprint) and typ
// agent-handoff+jwt, and no crit; the payload is the JSON form.
func TestSec3_1_JWSHeader(t *testing.T) {
	w := newWorld(t, JWS)
	o := w.newOffer(planner, coder)
	s := w.sign(o)
	tok, err := jose.Parse(string(s.Octets), 0)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Typ != JWSType || tok.Alg != keys.ES256 || tok.Kid != w.key(planner).Public().Thumbprint() {
		t.Fatalf("header typ %q alg %q kid %q", tok.Typ, tok.Alg, tok.Kid)
	}
	if _, crit := tok.HeaderMember("crit"); crit {
		t.Fatal("crit in header")
	}
	if !bytes.Equal(tok.Payload, mustJSON(t, o)) {
		t.Fatal("payload is not the JSON form")
	}
	// A key loaded with another kid still signs with its thumbprint as kid.
	renamed := w.key(planner).WithKID("June 5")
	s2, _ := SignOffer(renamed, JWS, o)
	tok2, _ := jose.Parse(string(s2.Octets), 0)
	if tok2.Kid != renamed.Public().Thumbprint() {
		t.Fatalf("kid %q, want the thumbprint", tok2.Kid)
	}
}

// Section 3.1: typ must be agent-handoff+jwt; a typ of JWT (or none, or another
// type) is a bad signature.
func TestSec3_1_TypJWTRejected(t *testing.T) {
	w := newWorld(t, JWS)
	k := w.key(planner)
	payload := mustJSON(t, w.newOffer(planner, coder))
	for _, typ := range []any{"JWT", "jwt", "wit+jwt", "application/jwt", nil} {
		h := map[string]any{"alg": "ES256", "kid": k.Public().Thumbprint()}
		if typ != nil {
			h["typ"] = typ
		}
		r, _ := w.receiver(coder)
		d, err := receive(r, &Handoff{Offer: handJWS(t, h, payload, k)})
		wantReject(t, d, err, ReasonBadSignature)
		if !hasCause(err, errcode.WrongType) {
			t.Errorf("typ %v: cause %v, want wrong_type", typ, err)
		}
	}
	// The full media type name is the same type.
	h := map[string]any{"alg": "ES256", "kid": k.Public().Thumbprint(), "typ": "application/agent-handoff+jwt"}
	r, _ := w.receiver(coder)
	d, err := receive(r, &Handoff{Offer: handJWS(t, h, payload, k)})
	wantAccept(t, d, err)
}

// Section 3.1: no crit.
func TestSec3_1_CritRejected(t *testing.T) {
	w := newWorld(t, JWS)
	k := w.key(planner)
	h := map[string]any{"alg": "ES256", "kid": k.Public().Thumbprint(), "typ": JWSType, "crit": []string{"x"}, "x": 1}
	r, _ := w.receiver(coder)
	d, err := receive(r, &Handoff{Offer: handJWS(t, h, mustJSON(t, w.newOffer(planner, coder)), k)})
	wantReject(t, d, err, ReasonBadSignature)
	if !hasCause(err, errcode.UnsupportedCritical) {
		t.Fatal(err)
	}
}

// Section 3.1: alg is asymmetric; "none" and MAC algorithms are never used. The classic
// attack signs HS256 with the public key as the secret.
func TestSec3_1_MACAlgorithmRejected(t *testing.T) {
	w := newWorld(t, JWS)
	k := w.key(planner)
	payload := mustJSON(t, w.newOffer(planner, coder))
	pub, _ := json.Marshal(k.Public())
	for _, alg := range []string{"HS256", "HS384", "HS512"} {
		hb, _ := json.Marshal(map[string]any{"alg": alg, "kid": k.Public().Thumbprint(), "typ": JWSType})
		in := b64.EncodeToString(hb) + "." + b64.EncodeToString(payload)
		m := hmac.New(sha256.New, pub)
		m.Write([]byte(in))
		s := Signed{Form: JWS, Octets: []byte(in + "." + b64.EncodeToString(m.Sum(nil)))}
		r, _ := w.receiver(coder)
		d, err := receive(r, &Handoff{Offer: s})
		wantReject(t, d, err, ReasonBadSignature)
		if !hasCause(err, errcode.UnsupportedAlg) {
			t.Errorf("%s: %v", alg, err)
		}
	}
	// Algorithms this package does not accept.
	for _, alg := range []string{"RS256", "ES384", "PS256"} {
		r, _ := w.receiver(coder)
		d, err := receive(r, &Handoff{Offer: handJWS(t, map[string]any{"alg": alg, "kid": k.Public().Thumbprint(), "typ": JWSType}, payload, k)})
		wantReject(t, d, err, ReasonBadSignature)
	}
}

// Section 3: "An unsigned element MUST be treated as absent": alg none is rejected and
// nothing is answered or remembered.
func TestSec3_UnsignedTreatedAsAbsent(t *testing.T) {
	w := newWorld(t, JWS)
	o := w.newOffer(planner, coder)
	payload := mustJSON(t, o)
	hb, _ := json.Marshal(map[string]any{"alg": "none", "typ": JWSType})
	unsigned := Signed{Form: JWS, Octets: []byte(b64.EncodeToString(hb) + "." + b64.EncodeToString(payload) + ".")}
	r, recs := w.receiver(coder)
	for _, s := range []Signed{unsigned, {Form: JWS, Octets: append(unsigned.Octets, 'A', 'A')}} {
		d, err := receive(r, &Handoff{Offer: s})
		wantReject(t, d, err, ReasonBadSignature)
		if d.Reply != nil || d.Offer != nil || recs.Len() != 0 {
			t.Fatal("an unsigned offer was answered or remembered")
		}
	}
	// In a chain, an unsigned element breaks the chain.
	h, offers := w.chain(user, planner, coder)
	hb0, _ := json.Marshal(map[string]any{"alg": "none", "typ": JWSType})
	h.Chain[0] = Signed{Form: JWS, Octets: []byte(b64.EncodeToString(hb0) + "." + b64.EncodeToString(mustJSON(t, offers[0])) + ".")}
	d, err := receive(r, h)
	wantReject(t, d, err, ReasonBrokenChain)
	// An unsigned status is absent too: the delegator's hop does not change.
	dl := w.delegator(planner)
	ho, _ := dl.Offer(context.Background(), OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}})
	st := &Status{Hop: mustHop(t, w, ho), Offer: ho.Offer.Digest(), Iss: coder, Aud: planner, Iat: 1, State: StateCompleted}
	sb, _ := st.MarshalJSON()
	if _, err := dl.HandleStatus(context.Background(), Signed{Form: JWS, Octets: []byte(b64.EncodeToString(hb) + "." + b64.EncodeToString(sb) + ".")}); err == nil {
		t.Fatal("unsigned status accepted")
	}
	if hs, _ := dl.State(mustHop(t, w, ho)); hs.State != StateOffered {
		t.Fatalf("hop state %s after an unsigned status", hs.State)
	}
}

func mustHop(t *testing.T, w *world, h *Handoff) string {
	t.Helper()
	vo, err := VerifyOffer(context.Background(), w.trust, h.Offer, 0)
	if err != nil {
		t.Fatal(err)
	}
	return vo.Hop
}

// Section 3.2: COSE_Sign1 with tag 18, protected alg (-7) and content type
// application/agent-handoff+cbor, kid present; the payload is the CBOR form.
func TestSec3_2_COSEForm(t *testing.T) {
	w := newWorld(t, COSE)
	k := w.key(planner)
	o := w.newOffer(planner, coder)
	s := w.sign(o)
	if !bytes.HasPrefix(s.Octets, []byte{0xd2, 0x84}) {
		t.Fatalf("not tag 18 + array(4): %x", s.Octets[:2])
	}
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(s.Octets); err != nil {
		t.Fatal(err)
	}
	p := msg.Headers.Protected
	if alg, _ := p.Algorithm(); alg != cose.AlgorithmES256 || p[cose.HeaderLabelContentType] != ContentType ||
		string(p[cose.HeaderLabelKeyID].([]byte)) != k.Public().Thumbprint() {
		t.Fatalf("protected header %v", p)
	}
	if cb, _ := o.MarshalCBOR(); !bytes.Equal(msg.Payload, cb) {
		t.Fatal("payload is not the CBOR form")
	}

	payload, _ := o.MarshalCBOR()
	base := cose.ProtectedHeader{cose.HeaderLabelAlgorithm: cose.AlgorithmES256, cose.HeaderLabelContentType: ContentType,
		cose.HeaderLabelKeyID: []byte(k.Public().Thumbprint())}
	with := func(l any, v any) cose.ProtectedHeader {
		h := cose.ProtectedHeader{}
		for a, b := range base {
			h[a] = b
		}
		if v == nil {
			delete(h, l)
		} else {
			h[l] = v
		}
		return h
	}
	r, _ := w.receiver(coder)
	d, err := receive(r, &Handoff{Offer: handCOSE(t, base, payload, k, true)})
	wantAccept(t, d, err)
	for name, s := range map[string]Signed{
		"untagged":             handCOSE(t, base, payload, k, false),
		"no content type":      handCOSE(t, with(cose.HeaderLabelContentType, nil), payload, k, true),
		"other content type":   handCOSE(t, with(cose.HeaderLabelContentType, "application/cwt"), payload, k, true),
		"content type uint":    handCOSE(t, with(cose.HeaderLabelContentType, uint64(60)), payload, k, true),
		"JSON payload in COSE": handCOSE(t, base, mustJSON(t, o), k, true),
	} {
		r, _ := w.receiver(coder)
		d, err := receive(r, &Handoff{Offer: s})
		wantReject(t, d, err, ReasonBadSignature)
		_ = name
	}
	// A COSE message whose payload was altered.
	bad := bytes.Clone(s.Octets)
	bad[len(bad)-70] ^= 1
	r2, _ := w.receiver(coder)
	d, err = receive(r2, &Handoff{Offer: Signed{Form: COSE, Octets: bad}})
	if d.Outcome != OutcomeRejected {
		t.Fatalf("altered message: %s %v", d.Outcome, err)
	}
	// go-cose refuses a crit label it does not find; a crit that names a present label
	// still must not pass.
	ch := with(cose.HeaderLabelCritical, []any{int64(cose.HeaderLabelContentType)})
	r3, _ := w.receiver(coder)
	d, err = receive(r3, &Handoff{Offer: handCOSE(t, ch, payload, k, true)})
	wantReject(t, d, err, ReasonBadSignature)
	_ = cbor.RawMessage(nil)
}

// Section 3.3: the handoff digest is SHA-256 over the octets exactly as sent; a
// forwarder keeps the octets unchanged.
func TestSec3_3_DigestOverOctetsAsSent(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		s := w.sign(w.newOffer(user, planner))
		sum := sha256.Sum256(s.Octets)
		if s.Digest().Val != b64.EncodeToString(sum[:]) || s.Digest().Alg != SHA256 {
			t.Fatal("digest is not SHA-256 of the octets")
		}
		// The planner forwards: its chain carries the assistant's octets unchanged and
		// its prev is their digest.
		in := &Handoff{Offer: s}
		dl := w.delegator(planner)
		out, err := dl.Offer(context.Background(), OfferRequest{Offer: Offer{Aud: coder, Dialog: "ctx-7c1e"}, From: in})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Chain) != 1 || !bytes.Equal(out.Chain[0].Octets, s.Octets) {
			t.Fatal("forwarded chain element changed")
		}
		vo, err := VerifyOffer(context.Background(), w.trust, out.Offer, 0)
		if err != nil || !vo.Prev.Equal(s.Digest()) {
			t.Fatalf("prev %v: %v", vo.Prev, err)
		}
		// Through JSON and CBOR carriage the octets survive.
		jb, _ := out.MarshalJSON()
		back, _ := ParseHandoffJSON(jb, 0)
		cb, _ := out.MarshalCBOR()
		back2, _ := ParseHandoffCBOR(cb, 0)
		if !back.Chain[0].Equal(s) || !back2.Chain[0].Equal(s) {
			t.Fatal("carriage changed the octets")
		}
		r, _ := w.receiver(coder)
		d, err := receive(r, out)
		wantAccept(t, d, err)
	})
	// A JWS whose payload is the same JSON with other whitespace is other octets:
	// another digest, and the link from the next offer breaks.
	w := newWorld(t, JWS)
	h, offers := w.chain(user, planner, coder)
	payload := mustJSON(t, offers[0])
	spaced := bytes.ReplaceAll(payload, []byte(","), []byte(", "))
	k := w.key(user)
	h.Chain[0] = handJWS(t, map[string]any{"alg": "ES256", "kid": k.Public().Thumbprint(), "typ": JWSType}, spaced, k)
	r, _ := w.receiver(coder)
	d, err := receive(r, h)
	wantReject(t, d, err, ReasonBrokenChain)
}

// Section 3.4: a key is used only when the trust configuration binds it to the
// message's iss, and only with its one algorithm; a key in the message shows nothing.
func TestSec3_4_KeysBoundToIss(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		o := w.newOffer(planner, coder)
		w.key(tester)
		// Signed with a key that the configuration binds to another agent.
		r, _ := w.receiver(coder)
		d, err := receive(r, &Handoff{Offer: w.signWith(w.key(tester), o)})
		wantReject(t, d, err, ReasonUntrustedKey)
		// Signed with a key nobody trusts.
		d, err = receive(r, &Handoff{Offer: w.signWith(w.untrustedKey(), o)})
		wantReject(t, d, err, ReasonUntrustedKey)
		// From an agent with no keys at all.
		o2 := w.newOffer("spiffe://z.example/agent/unknown", coder)
		d, err = receive(r, &Handoff{Offer: w.signWith(w.untrustedKey(), o2)})
		wantReject(t, d, err, ReasonUntrustedKey)
		if !hasCause(err, errcode.UntrustedIssuer) {
			t.Fatal(err)
		}
		// The planner's own key passes.
		d, err = receive(r, &Handoff{Offer: w.sign(o)})
		wantAccept(t, d, err)
	})
	// One algorithm per key: an Ed25519 key bound to the planner signs with EdDSA; a
	// token that says ES256 under that kid is refused, and so is an EdDSA token under
	// an ES256 key's kid.
	w := newWorld(t, JWS)
	ed, _ := keys.Generate(keys.EdDSA)
	if err := w.trust.Bind(planner, ed.Public()); err != nil {
		t.Fatal(err)
	}
	o := w.newOffer(planner, coder)
	s, err := SignOffer(ed, JWS, o)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := w.receiver(coder)
	d, err := receive(r, &Handoff{Offer: s})
	wantAccept(t, d, err)
	es := w.key(planner)
	forged := handJWS(t, map[string]any{"alg": "EdDSA", "kid": es.Public().Thumbprint(), "typ": JWSType}, mustJSON(t, w.newOffer(planner, coder)), ed)
	d, err = receive(r, &Handoff{Offer: forged})
	wantReject(t, d, err, ReasonBadSignature)
	// The key carried in the header (jwk) is refused outright.
	pub, _ := json.Marshal(w.untrustedKey().Public())
	withJWK := handJWS(t, map[string]any{"alg": "ES256", "typ": JWSType, "jwk": json.RawMessage(pub)}, mustJSON(t, w.newOffer(planner, coder)), es)
	d, err = receive(r, &Handoff{Offer: withJWK})
	wantReject(t, d, err, ReasonBadSignature)
}

// Section 3: every status is signed by its iss.
func TestSec3_StatusSignedByIss(t *testing.T) {
	forEachForm(t, func(t *testing.T, w *world) {
		dl := w.delegator(planner)
		h, _ := dl.Offer(context.Background(), OfferRequest{Offer: Offer{Aud: coder, Dialog: "d"}})
		st := &Status{Hop: mustHop(t, w, h), Offer: h.Offer.Digest(), Iss: coder, Aud: planner, Iat: w.clock.Now().Unix(), State: StateAccepted}
		s, _ := SignStatus(w.key(tester), w.form, st)
		_, err := dl.HandleStatus(context.Background(), s)
		wantCode(t, err, errcode.HandoffUntrustedKey)
		// An offer is not a status (type), nor a status an offer.
		_, err = dl.HandleStatus(context.Background(), h.Offer)
		wantCode(t, err, errcode.HandoffBadSignature)
		good := w.signStatus(st)
		if _, err := VerifyOffer(context.Background(), w.trust, good, 0); !hasCause(err, errcode.HandoffBadSignature) {
			t.Fatalf("status taken for an offer: %v", err)
		}
	})
}

// Section 8.6: typ and content type keep another object signed with the same key from
// passing for an offer.
func TestSec8_6_CrossProtocolConfusion(t *testing.T) {
	w := newWorld(t, JWS)
	k := w.key(planner)
	payload := mustJSON(t, w.newOffer(planner, coder))
	// A Learnlog-style head: the same key, no typ.
	r, _ := w.receiver(coder)
	d, err := receive(r, &Handoff{Offer: handJWS(t, map[string]any{"alg": "ES256", "kid": k.Public().Thumbprint()}, payload, k)})
	wantReject(t, d, err, ReasonBadSignature)
	// Another token type signed by the same key.
	wit, _ := jose.Sign("wit+jwt", k, true, payload)
	d, err = receive(r, &Handoff{Offer: Signed{Form: JWS, Octets: []byte(wit)}})
	wantReject(t, d, err, ReasonBadSignature)
	// COSE with another content type.
	wc := newWorld(t, COSE)
	kc := wc.key(planner)
	cb, _ := wc.newOffer(planner, coder).MarshalCBOR()
	rc, _ := wc.receiver(coder)
	d, err = receive(rc, &Handoff{Offer: handCOSE(t, cose.ProtectedHeader{cose.HeaderLabelAlgorithm: cose.AlgorithmES256,
		cose.HeaderLabelContentType: "application/json", cose.HeaderLabelKeyID: []byte(kc.Public().Thumbprint())}, cb, kc, true)})
	wantReject(t, d, err, ReasonBadSignature)
	if !strings.Contains(err.Error(), "content type") {
		t.Fatal(err)
	}
}

// Section 3.1: "The protected header MUST contain alg, kid, and typ": a JWS without kid
// is refused even when the agent has a single key.
func TestSec3_1_KidRequired(t *testing.T) {
	w := newWorld(t, JWS)
	k := w.key(planner)
	payload := mustJSON(t, w.newOffer(planner, coder))
	for _, h := range []map[string]any{{"alg": "ES256", "typ": JWSType}, {"alg": "ES256", "typ": JWSType, "kid": ""}} {
		r, _ := w.receiver(coder)
		d, err := receive(r, &Handoff{Offer: handJWS(t, h, payload, k)})
		wantReject(t, d, err, ReasonBadSignature)
		if !hasCause(err, errcode.MissingParameter) {
			t.Fatal(err)
		}
	}
}

// rawCOSE builds a tagged COSE_Sign1 by hand (only to make messages go-cose refuses
// to sign): protected is the header map, the signature is ES256 over Sig_structure.
func rawCOSE(t *testing.T, protected map[int64]any, payload []byte, k *keys.PrivateKey) Signed {
	t.Helper()
	pb, err := cborEnc.Marshal(protected)
	if err != nil {
		t.Fatal(err)
	}
	tbs, _ := cborEnc.Marshal([]any{"Signature1", pb, []byte{}, payload})
	sig, err := k.Sign(tbs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cborEnc.Marshal(cbor.Tag{Number: 18, Content: []any{pb, map[int64]any{}, payload, sig}})
	if err != nil {
		t.Fatal(err)
	}
	return Signed{Form: COSE, Octets: b}
}

// Section 3.2: "The protected header MUST contain alg and content type". A message
// built by hand with both verifies; without alg it is refused.
func TestSec3_2_ProtectedAlgRequired(t *testing.T) {
	w := newWorld(t, COSE)
	k := w.key(planner)
	payload, _ := w.newOffer(planner, coder).MarshalCBOR()
	kid := []byte(k.Public().Thumbprint())
	r, _ := w.receiver(coder)
	d, err := receive(r, &Handoff{Offer: rawCOSE(t, map[int64]any{1: -7, 3: ContentType, 4: kid}, payload, k)})
	wantAccept(t, d, err)
	payload2, _ := w.newOffer(planner, coder).MarshalCBOR()
	for _, p := range []map[int64]any{{3: ContentType, 4: kid}, {1: -7, 4: kid}, {1: -35, 3: ContentType, 4: kid}} {
		r, _ := w.receiver(coder)
		d, err := receive(r, &Handoff{Offer: rawCOSE(t, p, payload2, k)})
		wantReject(t, d, err, ReasonBadSignature)
	}
}
