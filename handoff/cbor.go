package handoff

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/fxamacker/cbor/v2"
)

// CBOR is fxamacker/cbor's. Encoding uses Core Deterministic Encoding (RFC 8949 section
// 4.2.1: preferred serialization, definite lengths, map keys sorted bytewise), so the
// payload this package signs is reproducible. Decoding accepts any well-formed encoding
// (the handoff digest is over the octets as sent, so nothing needs to be canonical) but
// refuses duplicate map keys, indefinite lengths and invalid UTF-8, bounds nesting and
// container sizes, and decodes the members it understands with tags forbidden, so that
// a tagged value cannot pass for a plain one.
var (
	cborEnc    cbor.EncMode
	cborDec    cbor.DecMode // for the whole payload and for values it does not interpret
	cborStrict cbor.DecMode // for the members it understands
)

func init() {
	var err error
	eo := cbor.CoreDetEncOptions()
	if cborEnc, err = eo.EncMode(); err != nil {
		panic(err)
	}
	do := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthForbidden,
		MaxNestedLevels:  16,
		MaxArrayElements: 4096,
		MaxMapPairs:      4096,
		UTF8:             cbor.UTF8RejectInvalid,
		IntDec:           cbor.IntDecConvertNone,
	}
	if cborDec, err = do.DecMode(); err != nil {
		panic(err)
	}
	do.TagsMd = cbor.TagsForbidden
	if cborStrict, err = do.DecMode(); err != nil {
		panic(err)
	}
}

func cborMap(b []byte, what string) (map[string]cbor.RawMessage, error) {
	var m map[string]cbor.RawMessage
	if err := cborDec.Unmarshal(b, &m); err != nil || m == nil {
		return nil, invalid("%s is not a CBOR map with text keys", what)
	}
	return m, nil
}

// cborMapValue decodes a member whose value is a map (a digest, obo, a reference).
func cborMapValue(raw []byte, what string) (map[string]cbor.RawMessage, error) {
	if major(raw) != cborMapT {
		return nil, invalid("%s is not a map", what)
	}
	return cborMap(raw, what)
}

// CBOR major types of the first octet.
const (
	cborUint  = 0
	cborBytes = 2
	cborTextT = 3
	cborMapT  = 5
)

func major(raw []byte) int {
	if len(raw) == 0 {
		return -1
	}
	return int(raw[0] >> 5)
}

func cborText(raw []byte, what string) (string, error) {
	var s string
	if major(raw) != cborTextT || cborStrict.Unmarshal(raw, &s) != nil {
		return "", invalid("%s is not text", what)
	}
	return s, nil
}

func cborUintValue(raw []byte, what string) (int64, error) {
	var n uint64
	if major(raw) != cborUint || cborStrict.Unmarshal(raw, &n) != nil {
		return 0, invalid("%s is not an unsigned integer", what)
	}
	if n > math.MaxInt64 {
		return 0, invalid("%s is out of range", what)
	}
	return int64(n), nil
}

func cborAny(raw []byte) (any, error) {
	var v any
	if err := cborDec.Unmarshal(raw, &v); err != nil {
		return nil, invalid("bad CBOR value")
	}
	return v, nil
}

func cborDigest(raw []byte) (Digest, error) {
	m, err := cborMapValue(raw, "digest")
	if err != nil {
		return Digest{}, err
	}
	if len(m) != 2 {
		return Digest{}, invalid("digest has %d members: Digest is a closed map of alg and val", len(m))
	}
	a, okA := m["alg"]
	v, okV := m["val"]
	if !okA || !okV {
		return Digest{}, invalid("digest needs alg and val")
	}
	var d Digest
	if d.Alg, err = cborText(a, "digest alg"); err != nil {
		return Digest{}, err
	}
	if d.Val, err = cborText(v, "digest val"); err != nil {
		return Digest{}, err
	}
	return d, d.Validate()
}

func cborExtra(extra *map[string]any, k string, raw []byte) error {
	v, err := cborAny(raw)
	if err != nil {
		return err
	}
	if *extra == nil {
		*extra = make(map[string]any)
	}
	(*extra)[k] = v
	return nil
}

func cborPrincipal(raw []byte) (*Principal, error) {
	m, err := cborMapValue(raw, "obo")
	if err != nil {
		return nil, err
	}
	p := &Principal{}
	if _, ok := m["sub"]; !ok {
		return nil, invalid("obo needs sub")
	}
	if err := cborMembersInto(m, p); err != nil {
		return nil, err
	}
	return p, nil
}

func cborRef(raw cbor.RawMessage) (ContextRef, error) {
	m, err := cborMapValue(raw, "reference")
	if err != nil {
		return ContextRef{}, err
	}
	var r ContextRef
	_, hasKind := m["kind"]
	_, hasDig := m["dig"]
	if !hasKind || !hasDig {
		return ContextRef{}, invalid("reference needs kind and dig")
	}
	if err := cborMembersInto(m, &r); err != nil {
		return ContextRef{}, err
	}
	return r, r.Validate()
}

func cborRefs(raw []byte) ([]ContextRef, error) {
	var items []cbor.RawMessage
	if major(raw) != 4 || cborDec.Unmarshal(raw, &items) != nil {
		return nil, invalid("refs is not an array")
	}
	if len(items) == 0 {
		return nil, invalid("refs is empty")
	}
	return convertEach(items, cborRef)
}

func cborHeader(m map[string]cbor.RawMessage, want string) error {
	v, okV := m["v"]
	t, okT := m["type"]
	if !okV || !okT {
		return invalid("v and type are required")
	}
	if n, err := cborUintValue(v, "v"); err != nil || n != Version {
		return invalid("v is not 1")
	}
	if s, err := cborText(t, "type"); err != nil || s != want {
		return invalid("type is not %q", want)
	}
	return nil
}

func cborRequire(m map[string]cbor.RawMessage, names ...string) error {
	for _, n := range names {
		if _, ok := m[n]; !ok {
			return invalid("member %q is required", n)
		}
	}
	return nil
}

// ParseOfferCBOR decodes the CBOR form of a HandoffOffer and checks it against the CDDL.
func ParseOfferCBOR(b []byte) (*Offer, error) {
	return parseInto(b, decodeCBOR, "offer", offerNeeds, &Offer{})
}

// ParseStatusCBOR decodes the CBOR form of a HandoffStatus and checks it against the CDDL.
func ParseStatusCBOR(b []byte) (*Status, error) {
	return parseInto(b, decodeCBOR, "status", statusNeeds, &Status{})
}

func digestMap(d Digest) map[string]any { return map[string]any{"alg": d.Alg, "val": d.Val} }

func refsValue(refs []ContextRef) ([]any, error) {
	out := make([]any, len(refs))
	for i, r := range refs {
		m := map[string]any{"kind": r.Kind, "dig": digestMap(r.Dig)}
		if r.Loc != nil {
			m["loc"] = *r.Loc
		}
		if r.Proof != nil {
			p, err := toCBORValue(r.Proof)
			if err != nil {
				return nil, err
			}
			m["proof"] = p
		}
		if err := addExtra(m, r.Extra); err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

func addExtra(m map[string]any, extra map[string]any) error {
	for k, v := range extra {
		c, err := toCBORValue(v)
		if err != nil {
			return err
		}
		m[k] = c
	}
	return nil
}

// MarshalCBOR writes the CBOR form of the offer in Core Deterministic Encoding.
func (o *Offer) MarshalCBOR() ([]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	m := map[string]any{"v": Version, "type": "offer", "hop": o.Hop, "dialog": o.Dialog, "iss": o.Iss,
		"aud": o.Aud, "iat": uint64(o.Iat), "exp": uint64(o.Exp)}
	if o.Task != nil {
		m["task"] = *o.Task
	}
	if o.Obo != nil {
		p := map[string]any{"sub": o.Obo.Sub}
		if o.Obo.Iss != nil {
			p["iss"] = *o.Obo.Iss
		}
		if err := addExtra(p, o.Obo.Extra); err != nil {
			return nil, err
		}
		m["obo"] = p
	}
	if o.Grant != nil {
		m["grant"] = digestMap(*o.Grant)
	}
	if o.Prev != nil {
		m["prev"] = digestMap(*o.Prev)
	}
	return cborElement(m, o.Refs, o.Extra)
}

// MarshalCBOR writes the CBOR form of the status in Core Deterministic Encoding.
func (s *Status) MarshalCBOR() ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	m := map[string]any{"v": Version, "type": "status", "hop": s.Hop, "offer": digestMap(s.Offer),
		"iss": s.Iss, "aud": s.Aud, "iat": uint64(s.Iat), "state": string(s.State)}
	if s.Reason != nil {
		m["reason"] = string(*s.Reason)
	}
	if s.Detail != nil {
		m["detail"] = *s.Detail
	}
	return cborElement(m, s.Refs, s.Extra)
}

// cborElement adds the refs and the extra members that close an offer or a status to
// m and encodes it.
func cborElement(m map[string]any, refs []ContextRef, extra map[string]any) ([]byte, error) {
	if refs != nil {
		r, err := refsValue(refs)
		if err != nil {
			return nil, err
		}
		m["refs"] = r
	}
	if err := addExtra(m, extra); err != nil {
		return nil, err
	}
	return cborMarshal(m)
}

// convertMap converts each value of a generic map with conv.
func convertMap[K comparable](x map[K]any, conv func(any) (any, error)) (map[K]any, error) {
	out := make(map[K]any, len(x))
	for k, e := range x {
		c, err := conv(e)
		if err != nil {
			return nil, err
		}
		out[k] = c
	}
	return out, nil
}

func cborMarshal(v any) ([]byte, error) {
	b, err := cborEnc.Marshal(v)
	if err != nil {
		return nil, invalid("cannot encode CBOR: %v", err)
	}
	return b, nil
}

// toCBORValue converts a generic value (from JSON or CBOR) into one fxamacker/cbor
// encodes: a JSON number becomes an integer when it is one, else a float.
func toCBORValue(v any) (any, error) {
	switch x := v.(type) {
	case Null:
		return nil, nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return nil, invalid("number %s has no CBOR form", x)
		}
		return f, nil
	case []any:
		return convertEach(x, toCBORValue)
	case map[string]any:
		return convertMap(x, toCBORValue)
	case map[any]any:
		return convertMap(x, toCBORValue)
	}
	return v, nil
}
