package handoff

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tokenhash"
)

// Form is the signed form of an element (section 3).
type Form int

// Forms.
const (
	// JWS: JWS Compact Serialization over the JSON form (section 3.1).
	JWS Form = iota + 1
	// COSE: tagged COSE_Sign1 over the CBOR form (section 3.2).
	COSE
)

func (f Form) String() string {
	switch f {
	case JWS:
		return "jws"
	case COSE:
		return "cose"
	}
	return "unknown"
}

// DefaultMaxElementSize bounds one signed handoff (section 8.8): a JWS or an encoded
// COSE_Sign1, as octets.
const DefaultMaxElementSize = 16 << 10

// Signed is a signed handoff: its octets exactly as sent, and their form. The octets
// are never re-encoded: they are hashed (section 3.3) and forwarded as they are.
type Signed struct {
	Form   Form
	Octets []byte
}

// Digest returns the handoff digest (section 3.3): SHA-256 over the octets as sent.
func (s Signed) Digest() Digest { return SHA256Digest(s.Octets) }

// Text returns the JSON carriage form (section 3.2): the JWS itself, or the COSE
// message in base64url, which never contains a period.
func (s Signed) Text() string {
	if s.Form == COSE {
		return base64.RawURLEncoding.EncodeToString(s.Octets)
	}
	return string(s.Octets)
}

// Equal reports whether two signed handoffs are the same octets in the same form.
func (s Signed) Equal(o Signed) bool { return s.Form == o.Form && bytes.Equal(s.Octets, o.Octets) }

// ParseSignedText reads the JSON carriage form: a JwsCompact, or base64url text of a
// COSE message (SignedHandoffJson).
func ParseSignedText(t string) (Signed, error) {
	if strings.IndexByte(t, '.') >= 0 {
		if !isJWSCompact(t) {
			return Signed{}, errcode.New(errcode.InvalidEncoding, "not a JWS compact serialization")
		}
		return Signed{Form: JWS, Octets: []byte(t)}, nil
	}
	if !isB64u(t) {
		return Signed{}, errcode.New(errcode.InvalidEncoding, "neither a JWS nor base64url")
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(t)
	if err != nil {
		return Signed{}, errcode.Wrap(errcode.InvalidEncoding, err, "COSE signed handoff is not base64url")
	}
	return Signed{Form: COSE, Octets: b}, nil
}

// SHA256Digest returns the sha-256 Digest of b.
func SHA256Digest(b []byte) Digest { return Digest{Alg: SHA256, Val: tokenhash.Of(b)} }

// digestMatches reports whether d names b. ok is false when the alg is not
// implemented: section 2 says what that means for each use.
func digestMatches(d Digest, b []byte) (match, ok bool) {
	if d.Alg != SHA256 {
		return false, false
	}
	return SHA256Digest(b).Val == d.Val, true
}

// coseAlgEd25519 is "Ed25519", the fully-specified COSE algorithm of EdDSA over
// Ed25519 (RFC 9864 section 2.2), which go-cose v1.3.0 does not know: its
// AlgorithmEd25519 is the polymorphic EdDSA (-8).
const coseAlgEd25519 cose.Algorithm = -19

// COSE algorithms accepted and the JOSE names of the same algorithms. A key is pinned to
// one algorithm, which may have two names: for an Ed25519 key EdDSA (-8, RFC 9053) and
// Ed25519 (-19, RFC 9864), as jose's rule has it for JWS ("EdDSA", "Ed25519").
var coseAlgs = map[cose.Algorithm]string{cose.AlgorithmES256: keys.ES256, cose.AlgorithmEdDSA: keys.EdDSA, coseAlgEd25519: keys.Ed25519}

// coseAlgFor is the COSE algorithm a key signs with: ES256 (-7) for a P-256 key, EdDSA
// (-8) for an Ed25519 key whichever name it is pinned to, since -8 is what every COSE
// implementation (go-cose among them) verifies.
func coseAlgFor(family keys.Family) (cose.Algorithm, bool) {
	switch family {
	case keys.FamilyES256:
		return cose.AlgorithmES256, true
	case keys.FamilyEd25519:
		return cose.AlgorithmEdDSA, true
	}
	return 0, false
}

// renamedVerifier is a go-cose verifier under another name of its algorithm: the
// Ed25519 verifier, which go-cose names EdDSA (-8), for a message whose alg is Ed25519
// (-19). The signature is the same (RFC 9864 section 2.2: only the identifier differs).
type renamedVerifier struct {
	cose.Verifier
	alg cose.Algorithm
}

func (v renamedVerifier) Algorithm() cose.Algorithm { return v.alg }

// SignOffer signs an offer with key in form. The key's kid in the header is its RFC
// 7638 thumbprint (sections 3.1, 3.2). It refuses what a receiver would refuse for
// carrying a secret: a grant that is not a digest (errcode.HandoffGrantMismatch) and a
// reference with a salt member (errcode.HandoffBadSignature).
func SignOffer(key *keys.PrivateKey, form Form, o *Offer) (Signed, error) {
	if o.Grant != nil {
		if err := checkGrantIsDigest(o.Grant); err != nil {
			return Signed{}, err
		}
	}
	if err := refsWithoutSalt(o.Refs); err != nil {
		return Signed{}, err
	}
	var payload []byte
	var err error
	if form == COSE {
		payload, err = o.MarshalCBOR()
	} else {
		payload, err = o.MarshalJSON()
	}
	if err != nil {
		return Signed{}, err
	}
	return signPayload(key, form, payload)
}

// SignStatus signs a status with key in form. Like SignOffer, it refuses a reference
// with a salt member (errcode.HandoffBadSignature).
func SignStatus(key *keys.PrivateKey, form Form, s *Status) (Signed, error) {
	if err := refsWithoutSalt(s.Refs); err != nil {
		return Signed{}, err
	}
	var payload []byte
	var err error
	if form == COSE {
		payload, err = s.MarshalCBOR()
	} else {
		payload, err = s.MarshalJSON()
	}
	if err != nil {
		return Signed{}, err
	}
	return signPayload(key, form, payload)
}

// refsWithoutSalt refuses, before signing, a reference that would put its salt into the
// element (section 2.2), with the code a receiver refuses it with at step 1.
func refsWithoutSalt(refs []ContextRef) error {
	for i := range refs {
		if _, ok := refs[i].Extra["salt"]; ok {
			return reject(ReasonBadSignature, "refs[%d] carries a salt member: the salt MUST NOT appear in the element (section 2.2)", i)
		}
	}
	return nil
}

// thumbprintKey returns key with its kid set to its thumbprint ("kid SHOULD be the JWK
// Thumbprint", section 3.1).
func thumbprintKey(key *keys.PrivateKey) *keys.PrivateKey {
	if tp := key.Public().Thumbprint(); tp != "" && tp != key.KID() {
		return key.WithKID(tp)
	}
	return key
}

func signPayload(key *keys.PrivateKey, form Form, payload []byte) (Signed, error) {
	if key == nil {
		return Signed{}, errcode.New(errcode.InvalidRequest, "no signing key")
	}
	key = thumbprintKey(key)
	switch form {
	case JWS:
		tok, err := jose.Sign(JWSType, key, true, payload)
		if err != nil {
			return Signed{}, err
		}
		return Signed{Form: JWS, Octets: []byte(tok)}, nil
	case COSE:
		alg, ok := coseAlgFor(key.Public().Family())
		if !ok {
			return Signed{}, errcode.New(errcode.UnsupportedAlg, "no COSE algorithm for a %s key", key.Alg())
		}
		signer, err := cose.NewSigner(alg, key.Signer())
		if err != nil {
			return Signed{}, errcode.Wrap(errcode.InvalidKey, err, "COSE signer")
		}
		msg := cose.NewSign1Message()
		msg.Headers.Protected.SetAlgorithm(alg)
		msg.Headers.Protected[cose.HeaderLabelContentType] = ContentType
		msg.Headers.Protected[cose.HeaderLabelKeyID] = []byte(key.KID())
		msg.Payload = payload
		if err := msg.Sign(rand.Reader, nil, signer); err != nil {
			return Signed{}, errcode.Wrap(errcode.InvalidKey, err, "COSE sign")
		}
		b, err := msg.MarshalCBOR()
		if err != nil {
			return Signed{}, errcode.Wrap(errcode.InvalidEncoding, err, "COSE encode")
		}
		return Signed{Form: COSE, Octets: b}, nil
	}
	return Signed{}, errcode.New(errcode.InvalidRequest, "unknown form %d", form)
}

// element is a signed handoff whose signed form has been checked and whose payload has
// been decoded, before or after its signature is checked.
type element struct {
	signed  Signed
	alg     string // JOSE name
	coseAlg cose.Algorithm
	kid     string
	offer   *Offer
	status  *Status
	iss     string
	payload []byte

	jws  *jose.Token
	cose *cose.Sign1Message
}

// unsigned marks an element without a signature (alg "none"): section 3 treats it as
// absent.
var errUnsigned = errors.New("unsigned element")

// parseElement checks the signed form (typ or content type, alg, no crit) and decodes
// the payload as want ("offer" or "status"), including v and type. Errors are the
// codes of the cause (jose's, InvalidClaim, InvalidEncoding ...); callers attach the
// reason. An element with alg "none" returns an error wrapping errUnsigned.
func parseElement(s Signed, want string, maxSize int) (*element, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxElementSize
	}
	if len(s.Octets) > maxSize {
		return nil, errcode.New(errcode.TokenTooLong, "signed handoff is %d octets, limit %d", len(s.Octets), maxSize)
	}
	e := &element{signed: s}
	switch s.Form {
	case JWS:
		t, err := jose.Parse(string(s.Octets), maxSize)
		if err != nil {
			return nil, err
		}
		if strings.EqualFold(t.Alg, "none") {
			return nil, errcode.Wrap(errcode.UnsupportedAlg, errUnsigned, "alg none: an unsigned element is treated as absent")
		}
		if err := t.CheckHeader(jose.Options{Typ: JWSType}); err != nil {
			return nil, err
		}
		// Section 3.1: "The protected header MUST contain alg, kid, and typ."
		if _, ok := t.HeaderMember("kid"); !ok || t.Kid == "" {
			return nil, errcode.New(errcode.MissingParameter, "the protected header has no kid")
		}
		e.jws, e.alg, e.kid, e.payload = t, t.Alg, t.Kid, t.Payload
	case COSE:
		if err := e.parseCOSE(); err != nil {
			return nil, err
		}
	default:
		return nil, errcode.New(errcode.MalformedToken, "unknown signed form")
	}
	var err error
	if want == "offer" {
		if s.Form == JWS {
			e.offer, err = ParseOfferJSON(e.payload)
		} else {
			e.offer, err = ParseOfferCBOR(e.payload)
		}
		if err == nil {
			e.iss = e.offer.Iss
		}
	} else {
		if s.Form == JWS {
			e.status, err = ParseStatusJSON(e.payload)
		} else {
			e.status, err = ParseStatusCBOR(e.payload)
		}
		if err == nil {
			e.iss = e.status.Iss
		}
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// parseCOSE checks a tagged COSE_Sign1 (section 3.2): tag 18, protected alg and content
// type, no crit, an attached payload.
func (e *element) parseCOSE() error {
	var msg cose.Sign1Message
	if err := msg.UnmarshalCBOR(e.signed.Octets); err != nil {
		return errcode.Wrap(errcode.MalformedToken, err, "not a tagged COSE_Sign1 (tag 18)")
	}
	p := msg.Headers.Protected
	if _, ok := p[cose.HeaderLabelCritical]; ok {
		return errcode.New(errcode.UnsupportedCritical, "crit header is not supported")
	}
	ct, ok := p[cose.HeaderLabelContentType].(string)
	if !ok || !strings.EqualFold(ct, ContentType) {
		return errcode.New(errcode.WrongType, "protected content type is %v, want %q", p[cose.HeaderLabelContentType], ContentType)
	}
	alg, err := p.Algorithm()
	if err != nil {
		return errcode.Wrap(errcode.UnsupportedAlg, err, "no protected alg")
	}
	name, ok := coseAlgs[alg]
	if !ok {
		return errcode.New(errcode.UnsupportedAlg, "COSE alg %v is not accepted", alg)
	}
	if msg.Payload == nil {
		return errcode.New(errcode.MalformedToken, "detached payload")
	}
	kid, ok := p[cose.HeaderLabelKeyID].([]byte)
	if !ok {
		// The kid is only a hint; the key still has to be bound to iss. One in the
		// unprotected header is as good as a missing one would be.
		kid, _ = msg.Headers.Unprotected[cose.HeaderLabelKeyID].([]byte)
	}
	e.cose, e.coseAlg, e.alg, e.kid, e.payload = &msg, alg, name, string(kid), msg.Payload
	return nil
}

// verify checks the signature with a key that trust binds to the element's iss
// (section 3.4): the key is chosen by kid among that agent's keys only, and its one
// algorithm must be the element's.
func (e *element) verify(ctx context.Context, trust Trust) (*keys.PublicKey, error) {
	if trust == nil {
		return nil, errcode.New(errcode.UntrustedIssuer, "no trust configuration")
	}
	ks, err := trust.KeysFor(ctx, e.iss)
	if err != nil {
		return nil, err
	}
	key, err := ks.LookupKey(ctx, e.kid)
	if err != nil {
		return nil, err
	}
	switch e.signed.Form {
	case JWS:
		// jose's rule, not string equality: "Ed25519" (RFC 9864) and "EdDSA" name the
		// one algorithm of an Ed25519 key; any other mismatch is refused.
		if err := e.jws.VerifyWith(key, false); err != nil {
			return nil, err
		}
	case COSE:
		// The same rule: the key's family, so that EdDSA (-8) and Ed25519 (-19) are the
		// one algorithm of an Ed25519 key, whichever name the key is pinned to.
		alg, ok := coseAlgFor(key.Family())
		if !ok || keys.FamilyOf(e.alg) != key.Family() {
			return nil, errcode.New(errcode.UnsupportedAlg, "alg %q does not match the key's %q", e.alg, key.Alg())
		}
		v, err := cose.NewVerifier(alg, key.Crypto())
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidKey, err, "COSE verifier")
		}
		if e.coseAlg != alg {
			v = renamedVerifier{v, e.coseAlg}
		}
		if err := e.cose.Verify(nil, v); err != nil {
			return nil, errcode.Wrap(errcode.InvalidSignature, err, "signature does not verify")
		}
	}
	return key, nil
}

// keyFailure tells whether a verify error means "no trusted key" (untrusted-key) as
// opposed to a bad signature, and whether it is Incomplete.
func keyFailure(err error) (untrusted, incomplete bool) {
	if errcode.KindOf(err) == errcode.Incomplete {
		return false, true
	}
	switch errcode.CodeOf(err) {
	case errcode.UnknownKey, errcode.UntrustedIssuer:
		return true, false
	}
	return false, false
}

// VerifiedOffer is an offer whose signed form and signature have been checked.
type VerifiedOffer struct {
	*Offer
	Signed Signed
	Digest Digest
	KID    string
	Alg    string

	// content names what the signature covers (see element.signedContent).
	content [32]byte
}

// signedContent names what the signature covers, apart from the signature: for a JWS
// its signing input (header and payload as sent); for COSE the protected header octets
// and the payload (what the Sig_structure holds). Two elements with the same content
// and different octets were not both made by the signer: ECDSA signatures are
// malleable, so anyone who has seen (r, s) can send (r, n-s), valid under the same key,
// and COSE's unprotected header and outer encoding are not signed at all.
func (e *element) signedContent() [32]byte {
	h := sha256.New()
	switch e.signed.Form {
	case JWS:
		raw := e.signed.Octets
		h.Write([]byte("jws\x00"))
		h.Write(raw[:bytes.LastIndexByte(raw, '.')])
	case COSE:
		// RawProtected is the bstr as sent; what is signed is its content (go-cose
		// re-encodes the bstr head deterministically before verifying).
		var prot []byte
		_ = cbor.Unmarshal(e.cose.Headers.RawProtected, &prot)
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(prot)))
		h.Write([]byte("cose\x00"))
		h.Write(n[:])
		h.Write(prot)
		h.Write(e.payload)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// VerifiedStatus is a status whose signed form and signature have been checked.
type VerifiedStatus struct {
	*Status
	Signed Signed
	Digest Digest
	KID    string
	Alg    string
}

// VerifyOffer performs step 1 of section 5.1 on one signed offer: the signed form,
// v and type, and the signature with a key trust binds to iss. Errors carry the codes
// of reasons bad-signature or untrusted-key (or are Incomplete), wrapping the cause.
func VerifyOffer(ctx context.Context, trust Trust, s Signed, maxSize int) (*VerifiedOffer, error) {
	e, err := parseElement(s, "offer", maxSize)
	if err != nil {
		return nil, rejectWrap(ReasonBadSignature, err, "signed offer")
	}
	return e.verifiedOffer(ctx, trust)
}

func (e *element) verifiedOffer(ctx context.Context, trust Trust) (*VerifiedOffer, error) {
	key, err := e.verify(ctx, trust)
	if err != nil {
		return nil, signatureError(err, "offer")
	}
	return &VerifiedOffer{Offer: e.offer, Signed: e.signed, Digest: e.signed.Digest(), KID: e.kidOr(key), Alg: e.alg,
		content: e.signedContent()}, nil
}

func signatureError(err error, what string) error {
	untrusted, incomplete := keyFailure(err)
	switch {
	case incomplete:
		return err
	case untrusted:
		return rejectWrap(ReasonUntrustedKey, err, "no key bound to the %s's iss has its kid", what)
	}
	return rejectWrap(ReasonBadSignature, err, "%s signature", what)
}

// VerifyStatusSignature checks a signed status's form (type "status") and its signature
// with a key trust binds to status.iss (section 5.6, first sentence). Section 5.6's
// remaining checks need the offer: see CheckStatus.
func VerifyStatusSignature(ctx context.Context, trust Trust, s Signed, maxSize int) (*VerifiedStatus, error) {
	e, err := parseElement(s, "status", maxSize)
	if err != nil {
		return nil, rejectWrap(ReasonBadSignature, err, "signed status")
	}
	key, err := e.verify(ctx, trust)
	if err != nil {
		return nil, signatureError(err, "status")
	}
	return &VerifiedStatus{Status: e.status, Signed: s, Digest: s.Digest(), KID: e.kidOr(key), Alg: e.alg}, nil
}

// Handoff is what the host protocol carries (section 2.1): the signed offer and the
// chain of earlier signed offers, oldest first. It is not signed.
type Handoff struct {
	Offer Signed
	Chain []Signed // nil when absent; never empty when present
	Extra map[string]any
}

// DefaultMaxHandoffSize bounds an encoded Handoff object before it is decoded.
const DefaultMaxHandoffSize = 1 << 20

// maxDecodedChain bounds the chain array while decoding, far above any sensible
// maximum chain length, so that the length check (too-deep) stays the receiver's.
const maxDecodedChain = 1024

// ParseHandoffJSON decodes the JSON form of a Handoff (chain elements are
// SignedHandoffJson: a JWS, or base64url of a COSE message).
func ParseHandoffJSON(b []byte, maxSize int) (*Handoff, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxHandoffSize
	}
	if len(b) > maxSize {
		return nil, errcode.New(errcode.BodyTooLarge, "handoff is %d octets, limit %d", len(b), maxSize)
	}
	if !json.Valid(b) {
		return nil, errcode.New(errcode.InvalidEncoding, "handoff is not JSON")
	}
	ms, err := objectMembers(b)
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "handoff")
	}
	h := &Handoff{}
	hasOffer := false
	for _, m := range ms {
		switch m.name {
		case "offer":
			var t string
			if t, err = jsonText(m.val, "offer"); err == nil {
				h.Offer, err = ParseSignedText(t)
			}
			hasOffer = true
		case "chain":
			h.Chain, err = jsonChain(m.val)
		default:
			err = putExtra(&h.Extra, m)
		}
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidEncoding, err, "handoff member %q", m.name)
		}
	}
	if !hasOffer {
		return nil, errcode.New(errcode.InvalidEncoding, "handoff has no offer")
	}
	return h, nil
}

func jsonChain(raw []byte) ([]Signed, error) {
	var items []string
	if len(raw) == 0 || raw[0] != '[' || netjson.DecodeObject(raw, &items) != nil {
		return nil, invalid("chain is not an array of text")
	}
	if len(items) == 0 {
		return nil, invalid("chain is present but empty")
	}
	if len(items) > maxDecodedChain {
		return nil, invalid("chain has %d elements", len(items))
	}
	out := make([]Signed, len(items))
	for i, t := range items {
		s, err := ParseSignedText(t)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// MarshalJSON writes the JSON form of the Handoff. Its receiver is a value, so that a
// Handoff and a *Handoff marshal to the same wire shape (section 2.1).
func (h Handoff) MarshalJSON() ([]byte, error) {
	if h.Chain != nil && len(h.Chain) == 0 {
		return nil, invalid("chain is present but empty")
	}
	w := &jsonWriter{}
	w.open()
	w.key("offer")
	w.str(h.Offer.Text())
	if h.Chain != nil {
		w.key("chain")
		w.buf.WriteByte('[')
		for i, c := range h.Chain {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			w.str(c.Text())
		}
		w.buf.WriteByte(']')
	}
	for k := range h.Extra {
		if reserved(handoffMembers, k) {
			return nil, invalid("extra member %q shadows a defined member", k)
		}
	}
	w.extra(h.Extra)
	w.close()
	return w.buf.Bytes(), w.err
}

// ParseHandoffCBOR decodes the CBOR form of a Handoff (SignedHandoffCbor: a JWS as
// text, a COSE message as a byte string).
func ParseHandoffCBOR(b []byte, maxSize int) (*Handoff, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxHandoffSize
	}
	if len(b) > maxSize {
		return nil, errcode.New(errcode.BodyTooLarge, "handoff is %d octets, limit %d", len(b), maxSize)
	}
	if major(b) != cborMapT {
		return nil, errcode.New(errcode.InvalidEncoding, "handoff is not a CBOR map")
	}
	m, err := cborMap(b, "handoff")
	if err != nil {
		return nil, errcode.Wrap(errcode.InvalidEncoding, err, "handoff")
	}
	h := &Handoff{}
	off, ok := m["offer"]
	if !ok {
		return nil, errcode.New(errcode.InvalidEncoding, "handoff has no offer")
	}
	for k, v := range m {
		switch k {
		case "offer":
			h.Offer, err = cborSigned(off)
		case "chain":
			var items []cbor.RawMessage
			if major(v) != 4 || cborDec.Unmarshal(v, &items) != nil {
				err = invalid("chain is not an array")
				break
			}
			if len(items) == 0 || len(items) > maxDecodedChain {
				err = invalid("chain has %d elements", len(items))
				break
			}
			h.Chain = make([]Signed, len(items))
			for i, it := range items {
				if h.Chain[i], err = cborSigned(it); err != nil {
					break
				}
			}
		default:
			err = cborExtra(&h.Extra, k, v)
		}
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidEncoding, err, "handoff member %q", k)
		}
	}
	return h, nil
}

func cborSigned(raw []byte) (Signed, error) {
	switch major(raw) {
	case cborTextT:
		t, err := cborText(raw, "signed handoff")
		if err != nil {
			return Signed{}, err
		}
		if !isJWSCompact(t) {
			return Signed{}, invalid("text signed handoff is not a JWS compact serialization")
		}
		return Signed{Form: JWS, Octets: []byte(t)}, nil
	case cborBytes:
		var b []byte
		if err := cborStrict.Unmarshal(raw, &b); err != nil {
			return Signed{}, invalid("bad byte string")
		}
		return Signed{Form: COSE, Octets: b}, nil
	}
	return Signed{}, invalid("signed handoff is neither text (JWS) nor a byte string (COSE)")
}

func signedValue(s Signed) any {
	if s.Form == COSE {
		return s.Octets
	}
	return string(s.Octets)
}

// MarshalCBOR writes the CBOR form of the Handoff in Core Deterministic Encoding.
func (h *Handoff) MarshalCBOR() ([]byte, error) {
	if h.Chain != nil && len(h.Chain) == 0 {
		return nil, invalid("chain is present but empty")
	}
	m := map[string]any{"offer": signedValue(h.Offer)}
	if h.Chain != nil {
		c := make([]any, len(h.Chain))
		for i, s := range h.Chain {
			c[i] = signedValue(s)
		}
		m["chain"] = c
	}
	for k := range h.Extra {
		if reserved(handoffMembers, k) {
			return nil, invalid("extra member %q shadows a defined member", k)
		}
	}
	if err := addExtra(m, h.Extra); err != nil {
		return nil, err
	}
	return cborMarshal(m)
}

// kidOr returns the kid the element named, or else the key's own.
func (e *element) kidOr(k interface{ KID() string }) string {
	if e.kid != "" {
		return e.kid
	}
	return k.KID()
}

// DecodeOffer decodes a signed offer's payload after checking its signed form, without
// checking the signature: for an agent reading an offer it made or has already
// verified (the command line's "handoff status"). Never accept work on it.
func DecodeOffer(s Signed) (*Offer, error) {
	e, err := parseElement(s, "offer", 0)
	if err != nil {
		return nil, rejectWrap(ReasonBadSignature, err, "signed offer")
	}
	return e.offer, nil
}
