package handoff

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"

	"github.com/dialogtrust/dialogtrust/internal/netjson"
)

// JSON decoding is done by hand over encoding/json's validator: json.Valid first, then a
// walk over the members of each object with internal/netjson.s scanners. This finds
// duplicate member names (which encoding/json would silently resolve "last wins", a
// classic parser-differential hole),
// keeps the raw text of the members this package does not understand, and decodes the
// members it does without reflection: a chain of 16 decodes 17 payloads, and that cost
// counts against the 1.2x budget of the chain benchmark.

// member is one member of a JSON object: its unescaped name and the raw text of its
// value.
type member struct {
	name string
	val  []byte
}

// objectMembers splits a JSON object (already known to be valid JSON) into members and
// refuses a repeated name.
func objectMembers(b []byte) ([]member, error) {
	i := netjson.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, invalid("not a JSON object")
	}
	// Size the slice from a cheap upper bound on the member count (one colon per
	// member at least), so that a two-member Digest does not allocate room for sixteen.
	ms := make([]member, 0, min(bytes.Count(b, []byte{':'}), 16))
	var seen map[string]struct{}
	i = netjson.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return ms, nil
	}
	for i < len(b) {
		end := netjson.StringEnd(b, i)
		name, err := jsonString(b[i:end])
		if err != nil {
			return nil, err
		}
		i = netjson.SkipSpace(b, end)
		i = netjson.SkipSpace(b, i+1) // ':'
		vend := netjson.ValueEnd(b, i)
		// A linear scan for the dozen members of an element; a set once an object is
		// larger, so that a Handoff of a megabyte of members costs linear time.
		if seen != nil {
			if _, dup := seen[name]; dup {
				return nil, invalid("member %q appears twice", name)
			}
			seen[name] = struct{}{}
		} else {
			for _, m := range ms {
				if m.name == name {
					return nil, invalid("member %q appears twice", name)
				}
			}
			if len(ms) == 32 {
				seen = make(map[string]struct{}, 64)
				for _, m := range ms {
					seen[m.name] = struct{}{}
				}
				seen[name] = struct{}{}
			}
		}
		ms = append(ms, member{name: name, val: b[i:vend]})
		i = netjson.SkipSpace(b, vend)
		if i < len(b) && b[i] == '}' {
			return ms, nil
		}
		i = netjson.SkipSpace(b, i+1) // ','
	}
	return nil, invalid("truncated JSON object")
}

// jsonString decodes a JSON string token. Invalid UTF-8 is refused rather than replaced.
func jsonString(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", invalid("not a JSON string")
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		if !utf8.Valid(in) {
			return "", invalid("string is not UTF-8")
		}
		return string(in), nil
	}
	var s string
	if err := netjson.DecodeObject(raw, &s); err != nil {
		return "", invalid("bad JSON string")
	}
	return s, nil
}

// jsonUint decodes a JSON number that is an unsigned integer written as one (CDDL uint:
// no sign, fraction or exponent). Values past 2^63-1 are refused: times are int64 here.
func jsonUint(raw []byte) (int64, error) {
	if len(raw) == 0 || len(raw) > 19 || (len(raw) > 1 && raw[0] == '0') {
		return 0, invalid("not an unsigned integer")
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, invalid("not an unsigned integer")
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, invalid("integer out of range")
	}
	return n, nil
}

// jsonAny decodes a value this package does not interpret, keeping numbers exact.
func jsonAny(raw []byte) (any, error) {
	var v any
	if err := netjson.DecodeKeepingNumbers(raw, &v); err != nil {
		return nil, invalid("bad JSON value")
	}
	return v, nil
}

func jsonText(raw []byte, what string) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", invalid("%s is not text", what)
	}
	return jsonString(raw)
}

func jsonDigest(raw []byte) (Digest, error) {
	ms, err := objectMembers(raw)
	if err != nil {
		return Digest{}, err
	}
	var d Digest
	var seen int
	for _, m := range ms {
		switch m.name {
		case "alg":
			d.Alg, err = jsonText(m.val, "digest alg")
		case "val":
			d.Val, err = jsonText(m.val, "digest val")
		default:
			return Digest{}, invalid("digest has member %q: Digest is a closed map", m.name)
		}
		if err != nil {
			return Digest{}, err
		}
		seen++
	}
	if seen != 2 {
		return Digest{}, invalid("digest needs alg and val")
	}
	return d, d.Validate()
}

func jsonPrincipal(raw []byte) (*Principal, error) {
	ms, err := objectMembers(raw)
	if err != nil {
		return nil, invalid("obo is not a map")
	}
	p := &Principal{}
	have, err := jsonMembersInto(ms, p)
	if err != nil {
		return nil, err
	}
	if have != 1 {
		return nil, invalid("obo needs sub")
	}
	return p, nil
}

func putExtra(extra *map[string]any, m member) error {
	v, err := jsonAny(m.val)
	if err != nil {
		return err
	}
	if *extra == nil {
		*extra = make(map[string]any)
	}
	(*extra)[m.name] = v
	return nil
}

func jsonRef(raw json.RawMessage) (ContextRef, error) {
	ms, err := objectMembers(raw)
	if err != nil {
		return ContextRef{}, invalid("reference is not a map")
	}
	var r ContextRef
	have, err := jsonMembersInto(ms, &r)
	if err != nil {
		return ContextRef{}, err
	}
	if have != 3 {
		return ContextRef{}, invalid("reference needs kind and dig")
	}
	return r, r.Validate()
}

func jsonRefs(raw []byte) ([]ContextRef, error) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, invalid("refs is not an array")
	}
	var items []json.RawMessage
	if err := netjson.DecodeObject(raw, &items); err != nil {
		return nil, invalid("refs is not an array")
	}
	if len(items) == 0 {
		return nil, invalid("refs is empty")
	}
	return convertEach(items, jsonRef)
}

// header checks v and type.
func jsonHeader(ms []member, want string) error {
	var v, typ bool
	for _, m := range ms {
		switch m.name {
		case "v":
			if string(m.val) != "1" {
				return invalid("v is not 1")
			}
			v = true
		case "type":
			s, err := jsonText(m.val, "type")
			if err != nil || s != want {
				return invalid("type is not %q", want)
			}
			typ = true
		}
	}
	if !v || !typ {
		return invalid("v and type are required")
	}
	return nil
}

// ParseOfferJSON decodes the JSON form of a HandoffOffer and checks it against the CDDL.
func ParseOfferJSON(b []byte) (*Offer, error) {
	return parseInto(b, decodeJSON, "offer", offerNeeds, &Offer{})
}

// ParseStatusJSON decodes the JSON form of a HandoffStatus and checks it against the CDDL.
func ParseStatusJSON(b []byte) (*Status, error) {
	return parseInto(b, decodeJSON, "status", statusNeeds, &Status{})
}

// jsonWriter writes JSON in a fixed member order without HTML escaping.
type jsonWriter struct {
	buf   bytes.Buffer
	first []bool
	err   error
	// invalid is the validation error of the element begin opened.
	invalid error
}

func (w *jsonWriter) open() {
	w.buf.WriteByte('{')
	w.first = append(w.first, true)
}

func (w *jsonWriter) close() {
	w.buf.WriteByte('}')
	w.first = w.first[:len(w.first)-1]
}

func (w *jsonWriter) key(k string) {
	if !w.first[len(w.first)-1] {
		w.buf.WriteByte(',')
	}
	w.first[len(w.first)-1] = false
	w.str(k)
	w.buf.WriteByte(':')
}

func (w *jsonWriter) str(s string) {
	if !utf8.ValidString(s) && w.err == nil {
		w.err = invalid("text is not UTF-8")
	}
	w.buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			w.buf.WriteByte('\\')
			w.buf.WriteByte(c)
		case c == '\n':
			w.buf.WriteString(`\n`)
		case c == '\r':
			w.buf.WriteString(`\r`)
		case c == '\t':
			w.buf.WriteString(`\t`)
		case c < 0x20:
			w.buf.WriteString(`\u00`)
			w.buf.WriteByte("0123456789abcdef"[c>>4])
			w.buf.WriteByte("0123456789abcdef"[c&15])
		default:
			w.buf.WriteByte(c)
		}
	}
	w.buf.WriteByte('"')
}

func (w *jsonWriter) int(n int64) { w.buf.WriteString(strconv.FormatInt(n, 10)) }

func (w *jsonWriter) any(v any) {
	jv, err := toJSONValue(v)
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jv); err != nil {
		if w.err == nil {
			w.err = invalid("value cannot be written as JSON: %v", err)
		}
		return
	}
	w.buf.Write(bytes.TrimRight(b.Bytes(), "\n"))
}

func (w *jsonWriter) extra(m map[string]any) {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		w.key(k)
		w.any(m[k])
	}
}

func (w *jsonWriter) digest(d Digest) {
	w.open()
	w.key("alg")
	w.str(d.Alg)
	w.key("val")
	w.str(d.Val)
	w.close()
}

func (w *jsonWriter) refs(refs []ContextRef) {
	w.buf.WriteByte('[')
	for i, r := range refs {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		w.open()
		w.key("kind")
		w.str(r.Kind)
		w.key("dig")
		w.digest(r.Dig)
		if r.Loc != nil {
			w.key("loc")
			w.str(*r.Loc)
		}
		if r.Proof != nil {
			w.key("proof")
			w.any(r.Proof)
		}
		w.extra(r.Extra)
		w.close()
	}
	w.buf.WriteByte(']')
}

// begin opens an offer or a status: v, type and hop, the members both start with. A
// failed validation (invalid) is kept as the writer's error, so that end returns it and
// nothing of what is written after.
func (w *jsonWriter) begin(invalid error, typ, hop string) {
	w.invalid = invalid
	w.open()
	w.key("v")
	w.int(Version)
	w.key("type")
	w.str(typ)
	w.key("hop")
	w.str(hop)
}

// envelope writes iss, aud and iat, which an offer and a status carry in this order.
func (w *jsonWriter) envelope(iss, aud string, iat int64) {
	w.key("iss")
	w.str(iss)
	w.key("aud")
	w.str(aud)
	w.key("iat")
	w.int(iat)
}

// end writes the refs and the extra members that close an offer or a status.
func (w *jsonWriter) end(refs []ContextRef, extra map[string]any) ([]byte, error) {
	if w.invalid != nil {
		return nil, w.invalid
	}
	if refs != nil {
		w.key("refs")
		w.refs(refs)
	}
	w.extra(extra)
	w.close()
	return w.buf.Bytes(), w.err
}

// MarshalJSON writes the JSON form of the offer: members in the order of the CDDL, then
// the extra members sorted by name, no insignificant whitespace. (The example offer of
// section 2.3 comes out byte for byte.)
func (o *Offer) MarshalJSON() ([]byte, error) {
	w := &jsonWriter{}
	w.begin(o.Validate(), "offer", o.Hop)
	w.key("dialog")
	w.str(o.Dialog)
	if o.Task != nil {
		w.key("task")
		w.str(*o.Task)
	}
	w.envelope(o.Iss, o.Aud, o.Iat)
	w.key("exp")
	w.int(o.Exp)
	if o.Obo != nil {
		w.key("obo")
		w.open()
		w.key("sub")
		w.str(o.Obo.Sub)
		if o.Obo.Iss != nil {
			w.key("iss")
			w.str(*o.Obo.Iss)
		}
		w.extra(o.Obo.Extra)
		w.close()
	}
	if o.Grant != nil {
		w.key("grant")
		w.digest(*o.Grant)
	}
	if o.Prev != nil {
		w.key("prev")
		w.digest(*o.Prev)
	}
	return w.end(o.Refs, o.Extra)
}

// MarshalJSON writes the JSON form of the status (CDDL order, then extras by name).
func (s *Status) MarshalJSON() ([]byte, error) {
	w := &jsonWriter{}
	w.begin(s.Validate(), "status", s.Hop)
	w.key("offer")
	w.digest(s.Offer)
	w.envelope(s.Iss, s.Aud, s.Iat)
	w.key("state")
	w.str(string(s.State))
	if s.Reason != nil {
		w.key("reason")
		w.str(string(*s.Reason))
	}
	if s.Detail != nil {
		w.key("detail")
		w.str(*s.Detail)
	}
	return w.end(s.Refs, s.Extra)
}

// toJSONValue converts a generic value (from JSON or CBOR) into one encoding/json
// writes as the draft's JSON form would have it: byte strings become base64url text
// (as a proof is carried in JSON, Appendix A), CBOR maps need text keys.
func toJSONValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, json.Number, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, invalid("NaN or infinity has no JSON form")
		}
		return x, nil
	case *big.Int:
		return json.Number(x.String()), nil
	case big.Int:
		return json.Number(x.String()), nil
	case Null:
		return nil, nil
	case []byte:
		return base64.RawURLEncoding.EncodeToString(x), nil
	case []any:
		return convertEach(x, toJSONValue)
	case map[string]any:
		return convertMap(x, toJSONValue)
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, invalid("a map with a non-text key has no JSON form")
			}
			c, err := toJSONValue(e)
			if err != nil {
				return nil, err
			}
			out[ks] = c
		}
		return out, nil
	case cbor.Tag, cbor.SimpleValue:
		return nil, invalid("a CBOR tag or simple value has no JSON form")
	}
	return nil, invalid("value of type %T has no JSON form", v)
}
