package handoff

import (
	"encoding/json"
	"strings"

	"github.com/fxamacker/cbor/v2"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// The JSON and the CBOR parser of an offer and a status share one switch over the
// CDDL's member names (Offer.member, Status.member); each encoding only walks its
// members (decodeJSON, decodeCBOR) and says how one value of a kind is read (value).

// value is the raw value of one member and the encoding it is written in.
type value struct {
	raw  []byte
	cbor bool
}

func (v value) text(what string) (string, error) {
	if v.cbor {
		return cborText(v.raw, what)
	}
	return jsonText(v.raw, what)
}

func (v value) uint(what string) (int64, error) {
	if v.cbor {
		return cborUintValue(v.raw, what)
	}
	return jsonUint(v.raw)
}

func (v value) digest() (Digest, error) {
	if v.cbor {
		return cborDigest(v.raw)
	}
	return jsonDigest(v.raw)
}

// optionalText reads the text of a member the CDDL makes optional.
func (v value) optionalText(what string) (*string, error) {
	s, err := v.text(what)
	return &s, err
}

// optionalDigest reads a digest held by a member the CDDL makes optional.
func (v value) optionalDigest() (*Digest, error) {
	d, err := v.digest()
	return &d, err
}

func (v value) principal() (*Principal, error) {
	if v.cbor {
		return cborPrincipal(v.raw)
	}
	return jsonPrincipal(v.raw)
}

func (v value) any() (any, error) {
	if v.cbor {
		return cborAny(v.raw)
	}
	return jsonAny(v.raw)
}

func (v value) refs() ([]ContextRef, error) {
	if v.cbor {
		return cborRefs(v.raw)
	}
	return jsonRefs(v.raw)
}

// decodable is an offer, a status, an obo principal or a context reference as its
// parsers fill it in.
type decodable interface {
	// member decodes the member name; it reports whether the CDDL names it (else it
	// is an extra) and, for a required one, its bit: the bit of needs[i] is 1<<i.
	member(name string, v value) (bit uint, known bool, err error)
	extras() *map[string]any
}

// The required members of each element, in the order of their bits.
var (
	offerNeeds  = []string{"hop", "dialog", "iss", "aud", "iat", "exp"}
	statusNeeds = []string{"hop", "offer", "iss", "aud", "iat", "state"}
)

// envelopeMember decodes the members an offer and a status share: v and type (the
// header check has read them), hop, iss, aud, iat and refs.
func envelopeMember(name string, v value, hop, iss, aud *string, iat *int64, refs *[]ContextRef) (bit uint, known bool, err error) {
	switch name {
	case "v", "type":
		return 0, true, nil
	case "hop":
		*hop, err = v.text("hop")
		return 1, true, err
	case "iss":
		*iss, err = v.text("iss")
		return 4, true, err
	case "aud":
		*aud, err = v.text("aud")
		return 8, true, err
	case "iat":
		*iat, err = v.uint("iat")
		return 16, true, err
	case "refs":
		*refs, err = v.refs()
		return 0, true, err
	}
	return 0, false, nil
}

func (o *Offer) extras() *map[string]any { return &o.Extra }

func (o *Offer) member(name string, v value) (bit uint, known bool, err error) {
	switch name {
	case "dialog":
		o.Dialog, err = v.text("dialog")
		return 2, true, err
	case "exp":
		o.Exp, err = v.uint("exp")
		return 32, true, err
	case "task":
		o.Task, err = v.optionalText("task")
	case "obo":
		o.Obo, err = v.principal()
	case "grant":
		o.Grant, err = v.optionalDigest()
	case "prev":
		o.Prev, err = v.optionalDigest()
	default:
		return envelopeMember(name, v, &o.Hop, &o.Iss, &o.Aud, &o.Iat, &o.Refs)
	}
	return 0, true, err
}

func (s *Status) extras() *map[string]any { return &s.Extra }

func (s *Status) member(name string, v value) (bit uint, known bool, err error) {
	var t string
	switch name {
	case "offer":
		s.Offer, err = v.digest()
		return 2, true, err
	case "state":
		t, err = v.text("state")
		s.State = State(t)
		return 32, true, err
	case "reason":
		t, err = v.text("reason")
		r := Reason(t)
		s.Reason = &r
	case "detail":
		t, err = v.text("detail")
		s.Detail = &t
	default:
		return envelopeMember(name, v, &s.Hop, &s.Iss, &s.Aud, &s.Iat, &s.Refs)
	}
	return 0, true, err
}

// parseInto fills e from b with decode (decodeJSON, decodeCBOR) and validates it.
func parseInto[E interface {
	decodable
	Validate() error
}](b []byte, decode func([]byte, string, []string, decodable) error, what string, needs []string, e E) (E, error) {
	if err := decode(b, what, needs, e); err != nil {
		var none E
		return none, err
	}
	return e, e.Validate()
}

// decodeJSON fills e from the JSON object b, an element of type what.
func decodeJSON(b []byte, what string, needs []string, e decodable) error {
	if !json.Valid(b) {
		return errcode.New(errcode.InvalidEncoding, "%s is not JSON", what)
	}
	ms, err := objectMembers(b)
	if err != nil {
		return err
	}
	if err := jsonHeader(ms, what); err != nil {
		return err
	}
	have, err := jsonMembersInto(ms, e)
	if err != nil {
		return err
	}
	if have != 1<<len(needs)-1 {
		return invalid("%s needs %s and %s", what, strings.Join(needs[:len(needs)-1], ", "), needs[len(needs)-1])
	}
	return nil
}

// decodeCBOR fills e from the CBOR map b, an element of type what.
func decodeCBOR(b []byte, what string, needs []string, e decodable) error {
	if major(b) != cborMapT {
		return errcode.New(errcode.InvalidEncoding, "%s is not a CBOR map", what)
	}
	m, err := cborMap(b, what)
	if err != nil {
		return err
	}
	if err := cborHeader(m, what); err != nil {
		return err
	}
	if err := cborRequire(m, needs...); err != nil {
		return err
	}
	return cborMembersInto(m, e)
}

// jsonMembersInto decodes the members ms of a JSON object into e, the ones e does not
// know as extras; it returns the bits of the required members it saw.
func jsonMembersInto(ms []member, e decodable) (uint, error) {
	var have uint
	for _, m := range ms {
		bit, known, err := e.member(m.name, value{raw: m.val})
		if err == nil && !known {
			err = putExtra(e.extras(), m)
		}
		if err != nil {
			return 0, err
		}
		have |= bit
	}
	return have, nil
}

// cborMembersInto decodes the members of a CBOR map into e, the ones e does not know
// as extras. (The CBOR parsers check the required members before, on the map.)
func cborMembersInto(m map[string]cbor.RawMessage, e decodable) error {
	for k, raw := range m {
		_, known, err := e.member(k, value{raw: raw, cbor: true})
		if err == nil && !known {
			err = cborExtra(e.extras(), k, raw)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (p *Principal) extras() *map[string]any { return &p.Extra }

// member decodes a member of an obo principal: sub is required (bit 1).
func (p *Principal) member(name string, v value) (bit uint, known bool, err error) {
	switch name {
	case "sub":
		p.Sub, err = v.text("obo.sub")
		return 1, true, err
	case "iss":
		p.Iss, err = v.optionalText("obo.iss")
		return 0, true, err
	}
	return 0, false, nil
}

func (r *ContextRef) extras() *map[string]any { return &r.Extra }

// member decodes a member of a context reference: kind (bit 1) and dig (bit 2) are
// required; a null proof is kept as Null.
func (r *ContextRef) member(name string, v value) (bit uint, known bool, err error) {
	switch name {
	case "kind":
		r.Kind, err = v.text("kind")
		return 1, true, err
	case "dig":
		r.Dig, err = v.digest()
		return 2, true, err
	case "loc":
		r.Loc, err = v.optionalText("loc")
	case "proof":
		r.Proof, err = v.any()
		if r.Proof == nil && err == nil {
			r.Proof = Null{}
		}
	default:
		return 0, false, nil
	}
	return 0, true, err
}

// convertEach returns conv of every element of xs, or conv's first error: the array
// step of the decoders (refs, a chain) and of the value conversions (toJSONValue,
// toCBORValue).
func convertEach[T, U any](xs []T, conv func(T) (U, error)) ([]U, error) {
	out := make([]U, len(xs))
	for i, x := range xs {
		c, err := conv(x)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}
