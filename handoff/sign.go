package handoff

import (
	"crypto/rand"

	"github.com/veraison/go-cose"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/jose"
	"github.com/dialogtrust/dialogtrust/keys"
)

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
	return signElement(key, form, o)
}

// SignStatus signs a status with key in form. Like SignOffer, it refuses a reference
// with a salt member (errcode.HandoffBadSignature).
func SignStatus(key *keys.PrivateKey, form Form, s *Status) (Signed, error) {
	if err := refsWithoutSalt(s.Refs); err != nil {
		return Signed{}, err
	}
	return signElement(key, form, s)
}

// encodable is what SignOffer and SignStatus sign: an Offer or a Status, in either
// encoding.
type encodable interface {
	MarshalJSON() ([]byte, error)
	MarshalCBOR() ([]byte, error)
}

// signElement signs el in form: its CBOR form in a COSE_Sign1, its JSON form in a JWS.
func signElement(key *keys.PrivateKey, form Form, el encodable) (Signed, error) {
	var payload []byte
	var err error
	if form == COSE {
		payload, err = el.MarshalCBOR()
	} else {
		payload, err = el.MarshalJSON()
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
