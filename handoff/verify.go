package handoff

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

// renamedVerifier is a go-cose verifier under another name of its algorithm: the
// Ed25519 verifier, which go-cose names EdDSA (-8), for a message whose alg is Ed25519
// (-19). The signature is the same (RFC 9864 section 2.2: only the identifier differs).
type renamedVerifier struct {
	cose.Verifier
	alg cose.Algorithm
}

func (v renamedVerifier) Algorithm() cose.Algorithm { return v.alg }

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
