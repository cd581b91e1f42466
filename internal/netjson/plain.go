package netjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// This file is the fast path of DecodeClaims, the one every token kind shares: a claims
// set in the plain form the project's issuers write (no white space, plain strings,
// non-negative integers, nested plain objects; see scanObject) is read in one scan,
// straight into the Go value, without encoding/json's reflection and without the
// separate name check; a member no field has is passed over, as the reference ignores
// it. Anything else (white space, escapes, arrays, null, a field the plan does not read,
// a repeated member, a value of another form) makes it give up, and
// the caller decodes the text through the reference path, DecodeObject, which also gives
// every error. What the fast path accepts it decodes exactly as the reference does:
// FuzzFastPathWIT, FuzzFastPathWPT, FuzzFastPathGrant and FuzzFastPathAllKinds hold the
// two equal; TestIssuedClaimsTakeTheFastPath that every issuer's claims take it.
//
// Which members it can read is worked out once per Go type (a plan): a string, a
// json.RawMessage, a nested struct (or a pointer to one of these), and a type that
// decodes itself but says, by PlainForm, what its UnmarshalJSON makes of a plain value
// (jose.NumericDate, jose.Audience). The values pointer fields point to are held in one
// allocation per object, as a hand-written decoder would hold them.

// PlainForm is what a type with its own UnmarshalJSON promises about plain values, so
// that the fast path may read them directly.
type PlainForm uint8

const (
	// PlainInteger: the type is of kind int64, and its UnmarshalJSON stores a
	// non-negative integer of at most 15 digits (exact in a float64) as that integer.
	PlainInteger PlainForm = iota + 1
	// PlainStringOrList: the type is of kind slice of strings, and its UnmarshalJSON
	// stores a single string as a list of that one string.
	PlainStringOrList
)

// PlainFormer is implemented (on the value) by a type that decodes itself and lets the
// fast path of DecodeClaims read its plain values; see PlainForm.
type PlainFormer interface{ PlainJSONForm() PlainForm }

// maxPlanDepth bounds the nesting of structs a plan follows; maxRawDepth the nesting
// of plain objects a json.RawMessage member may hold (a WIT's cnf.jwk is one flat
// object). Deeper text is left to the reference path.
const (
	maxPlanDepth = 3
	maxRawDepth  = 3
)

type plainKind uint8

const (
	plainString       plainKind = iota // a string field: a plain string
	plainRaw                           // json.RawMessage: any plain value, as its text
	plainInteger                       // PlainInteger
	plainStringOrList                  // PlainStringOrList
	plainStruct                        // a struct: a plain object, by its own plan
)

// plan says how the fast path fills one struct type.
type plan struct {
	members []member     // at most 64 (the seen set is a bit set)
	held    reflect.Type // a struct of the values pointer members point to; nil if none
	fields  *fields      // every field, as the name check sees them (names.go)
}

type member struct {
	name  string
	index []int // the field, as reflect.Value.FieldByIndex takes it
	kind  plainKind
	ptr   bool  // the field is a pointer to the value (held)
	slot  int   // held's field for a pointer member or a one-string list
	sub   *plan // plainStruct
}

var (
	planCache       sync.Map // reflect.Type -> *plan (nil: no fast path for it)
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	plainFormerType = reflect.TypeFor[PlainFormer]()
)

func planOf(t reflect.Type) *plan {
	if p, ok := planCache.Load(t); ok {
		return p.(*plan)
	}
	p := buildPlan(t, 0)
	planCache.Store(t, p)
	return p
}

// buildPlan returns t's plan, or nil when no member of t can be read directly. It
// reads the fields as the name check collects them (fieldsOf); ambiguous names (two
// fields, at any depth, under one name) and fields promoted through an embedded pointer
// are left out: encoding/json's rules for them are not worth copying.
func buildPlan(t reflect.Type, depth int) *plan {
	if t.Kind() != reflect.Struct || depth > maxPlanDepth {
		return nil
	}
	p := &plan{fields: fieldsOf(t)}
	var held []reflect.StructField
	for _, c := range p.fields.all {
		if c.ambiguous || c.viaPointer || len(p.members) == 64 || hasOption(c.opts, "string") {
			continue
		}
		m := member{name: c.name, index: c.index}
		et := c.typ
		if et.Kind() == reflect.Pointer && et.Name() == "" {
			// encoding/json gives a pointer field a new value and decodes into that
			// (by the value's own UnmarshalJSON, if it has one).
			m.ptr, et = true, et.Elem()
		}
		switch {
		case et.Kind() == reflect.Pointer:
			continue
		case et.Implements(plainFormerType) && reflect.PointerTo(et).Implements(unmarshalerType):
			switch reflect.Zero(et).Interface().(PlainFormer).PlainJSONForm() {
			case PlainInteger:
				if et.Kind() != reflect.Int64 { // 15 digits fit no smaller kind
					continue
				}
				m.kind = plainInteger
			case PlainStringOrList:
				if et.Kind() != reflect.Slice || et.Elem().Kind() != reflect.String || m.ptr {
					continue
				}
				m.kind = plainStringOrList
			default:
				continue
			}
		case et == rawMessageType:
			if m.ptr {
				continue
			}
			m.kind = plainRaw
		case custom(et):
			continue
		case et.Kind() == reflect.String:
			m.kind = plainString
		case et.Kind() == reflect.Struct:
			if m.sub = buildPlan(et, depth+1); m.sub == nil {
				continue
			}
			m.kind = plainStruct
		default:
			continue
		}
		switch {
		case m.ptr:
			m.slot = len(held)
			held = append(held, reflect.StructField{Name: "F" + itoa(len(held)), Type: et})
		case m.kind == plainStringOrList:
			m.slot = len(held)
			held = append(held, reflect.StructField{Name: "F" + itoa(len(held)), Type: reflect.ArrayOf(1, et.Elem())})
		}
		p.members = append(p.members, m)
	}
	if len(p.members) == 0 {
		return nil
	}
	if len(held) > 0 {
		p.held = reflect.StructOf(held)
	}
	return p
}

func hasOption(opts, want string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == want {
			return true
		}
	}
	return false
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// decodePlain is the fast path: it decodes data into *v (a zero struct) when data is a
// plain object every member of which v's plan reads, and reports whether it did. When
// it did not, *v is zero again.
func decodePlain(data []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	e := rv.Elem()
	if e.Kind() != reflect.Struct || !e.IsZero() {
		return false
	}
	p := planOf(e.Type())
	if p == nil {
		return false
	}
	// One copy of the text; the decoded strings are substrings of it.
	text := string(data)
	if end, ok := p.decode(text, 0, e); ok && end == len(text) {
		return true
	}
	e.SetZero()
	return false
}

// decode reads the plain object at text[i] into the struct v and returns the index
// after it; false when the text is not one this plan reads.
func (p *plan) decode(text string, i int, v reflect.Value) (int, bool) {
	var seen uint64
	var held reflect.Value
	return walkObject(text, i, func(name Span, at int) (int, bool) {
		m := p.find(text[name.Start:name.End])
		if m < 0 {
			return p.skip(text, name, at)
		}
		if seen&(1<<m) != 0 {
			return 0, false
		}
		seen |= 1 << m
		mb := &p.members[m]
		f := v.FieldByIndex(mb.index)
		dst := f
		if mb.ptr || mb.kind == plainStringOrList {
			if !held.IsValid() {
				held = reflect.New(p.held).Elem()
			}
			dst = held.Field(mb.slot)
		}
		var end int
		var ok bool
		switch mb.kind {
		case plainString, plainStringOrList:
			if end, ok = plainStringEnd(text, at); !ok {
				return 0, false
			}
			if s := text[at+1 : end-1]; mb.kind == plainString {
				dst.SetString(s)
			} else {
				setOne(f, dst, s)
			}
		case plainInteger:
			// At most 15 digits: below 2^53, read exactly through a float too. Longer
			// ones are left to the reference path.
			if end, ok = plainValueEnd(text, at, 0); !ok || text[at] == '"' || end-at > 15 {
				return 0, false
			}
			var x int64
			for _, c := range []byte(text[at:end]) {
				x = x*10 + int64(c-'0')
			}
			dst.SetInt(x)
		case plainRaw:
			if end, ok = plainValueEnd(text, at, maxRawDepth+1); !ok {
				return 0, false
			}
			dst.SetBytes([]byte(text[at:end]))
		case plainStruct:
			if end, ok = mb.sub.decode(text, at, dst); !ok {
				return 0, false
			}
		}
		if mb.ptr {
			f.Set(dst.Addr())
		}
		return end, true
	})
}

// setOne makes the field f (addressable, of a slice-of-string kind) the list of the one
// string s, held in slot (addressable, a [1]string-kind array of f's element type). It
// writes through unsafe pointers because reflect.Value.Slice allocates a slice header
// per call; the plan checked both kinds, and a slice of any string kind has the layout
// of a []string.
func setOne(f, slot reflect.Value, s string) {
	arr := (*[1]string)(slot.Addr().UnsafePointer())
	arr[0] = s
	*(*[]string)(f.Addr().UnsafePointer()) = arr[:]
}

// skip passes over a member the plan does not read: one the reference path ignores
// too (no field has its name, in any case), when its value is plain. A member of a
// field the plan does not read, or one whose name equals a field's only under case
// folding (a NameError there), makes the fast path give up.
func (p *plan) skip(text string, name Span, at int) (int, bool) {
	n := text[name.Start:name.End]
	if _, known := p.fields.byName[n]; known {
		return 0, false
	}
	for _, f := range p.fields.names {
		if strings.EqualFold(f, n) {
			return 0, false
		}
	}
	return plainValueEnd(text, at, maxRawDepth+1)
}

// find returns the index of the member named name, or -1.
func (p *plan) find(name string) int {
	for i := range p.members {
		if p.members[i].name == name {
			return i
		}
	}
	return -1
}
