package handoff

import (
	"encoding/json"

	"github.com/fxamacker/cbor/v2"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

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
	return convertEach(items, ParseSignedText)
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
