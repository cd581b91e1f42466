package netjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/dialogtrust/dialogtrust/errcode"
)

// NameError reports a member whose name differs from a field's name only in case.
type NameError struct {
	Name  string // as received, cut with errcode.Cut
	Field string // the field's name
}

func (e *NameError) Error() string {
	return "member \"" + e.Name + "\" is not \"" + e.Field + "\": JSON member names are case-sensitive"
}

// checkNames checks the member names of the JSON value data against the type of v
// (what data was, or will be, decoded into): a name that equals a field's only under
// case folding is a NameError, a name an object gives twice where it decodes into
// something is a DuplicateError. data must be valid JSON; text that is not is reported
// as an error.
func checkNames(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil
	}
	s := scanner{b: data}
	s.space()
	if err := s.value(resolve(t), 0); err != nil {
		return err
	}
	return nil
}

// maxDepth bounds nesting (encoding/json itself stops at 10000).
const maxDepth = 10000

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// custom reports whether t decodes itself.
func custom(t reflect.Type) bool {
	if t.Implements(unmarshalerType) || t.Implements(textUnmarshalerType) {
		return true
	}
	if t.Kind() != reflect.Pointer {
		p := reflect.PointerTo(t)
		return p.Implements(unmarshalerType) || p.Implements(textUnmarshalerType)
	}
	return false
}

// fields of a struct type, as encoding/json names them (promoted fields included).
type fields struct {
	byName map[string]field
	names  []string
	all    []structField // every field collect found, in declaration order
}

// field is one struct field: its type as value expects it (see resolve) and its
// position in names, for the duplicate check. One map lookup finds both, keyed by the
// member's raw octets (a lookup with string(raw) does not allocate).
type field struct {
	typ   reflect.Type
	index int
}

// structField is a field as collect finds it, with what the fast path's plan needs.
type structField struct {
	name       string
	typ        reflect.Type // as declared
	index      []int        // as reflect.Value.FieldByIndex takes it
	opts       string       // the tag's options
	viaPointer bool         // promoted through an embedded pointer
	ambiguous  bool         // another field has the same name
}

var fieldCache sync.Map // reflect.Type -> *fields

func fieldsOf(t reflect.Type) *fields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*fields)
	}
	f := &fields{byName: map[string]field{}}
	collect(t, nil, false, &f.all, 0)
	count := map[string]int{}
	for _, sf := range f.all {
		count[sf.name]++
	}
	for i := range f.all {
		sf := &f.all[i]
		sf.ambiguous = count[sf.name] > 1
		if _, dup := f.byName[sf.name]; !dup { // the first one found
			f.byName[sf.name] = field{typ: resolve(sf.typ), index: len(f.names)}
			f.names = append(f.names, sf.name)
		}
	}
	fieldCache.Store(t, f)
	return f
}

// resolvedCache holds resolve's answers: Implements is a method-set search, too slow
// to repeat for every value of every token.
var resolvedCache sync.Map // reflect.Type -> resolvedType

type resolvedType struct{ t reflect.Type }

// resolve returns the type value checks a JSON value against when it decodes into t:
// t without its pointers, or nil (skip the value, names unchecked) for a type that
// decodes itself or an interface.
func resolve(t reflect.Type) reflect.Type {
	if t == nil {
		return nil
	}
	if r, ok := resolvedCache.Load(t); ok {
		return r.(resolvedType).t
	}
	r := t
	for r.Kind() == reflect.Pointer && !custom(r) {
		r = r.Elem()
	}
	if custom(r) || r.Kind() == reflect.Interface {
		r = nil
	}
	resolvedCache.Store(t, resolvedType{r})
	return r
}

// collect appends t's fields to out as encoding/json names them, entering embedded
// structs (through pointers too) without a name of their own.
func collect(t reflect.Type, prefix []int, viaPointer bool, out *[]structField, depth int) {
	if depth > 8 {
		return
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		index := append(append([]int(nil), prefix...), i)
		if sf.Anonymous && name == "" {
			et, ptr := ft, false
			if et.Kind() == reflect.Pointer {
				et, ptr = et.Elem(), true
			}
			if et.Kind() == reflect.Struct {
				collect(et, index, viaPointer || ptr, out, depth+1)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		*out = append(*out, structField{name: name, typ: ft, index: index, opts: opts, viaPointer: viaPointer})
	}
}

type scanner struct {
	b []byte
	i int
}

type syntaxError struct{}

func (syntaxError) Error() string { return "netjson: not valid JSON" }

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value checks the value at s.i against t (a type resolve returned; nil: skip it) and
// moves past it.
func (s *scanner) value(t reflect.Type, depth int) error {
	if depth > maxDepth {
		return syntaxError{}
	}
	if s.i >= len(s.b) {
		return syntaxError{}
	}
	switch s.b[s.i] {
	case '{':
		return s.object(t, depth)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = resolve(t.Elem())
		}
		s.i++
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		for {
			s.space()
			if err := s.value(elem, depth+1); err != nil {
				return err
			}
			if more, err := s.separator(']'); !more {
				return err
			}
		}
	case '"':
		_, _, err := s.str()
		return err
	default: // number, true, false, null
		start := s.i
		for s.i < len(s.b) && !endsScalar(s.b[s.i]) {
			s.i++
		}
		if s.i == start {
			return syntaxError{}
		}
		return nil
	}
}

// separator moves past what follows a member or an element: a comma (more follow) or
// the closing octet of the object or array (none follow); anything else is an error.
func (s *scanner) separator(closing byte) (more bool, err error) {
	s.space()
	if s.i >= len(s.b) {
		return false, syntaxError{}
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return true, nil
	case closing:
		s.i++
		return false, nil
	}
	return false, syntaxError{}
}

// endsScalar reports the octets that end a number, true, false or null: a separator
// or white space. (A switch: strings.ContainsRune per octet showed in profiles.)
func endsScalar(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

func (s *scanner) object(t reflect.Type, depth int) error {
	var fs *fields
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fs = fieldsOf(t)
		case reflect.Map:
			elem = resolve(t.Elem())
		}
	}
	s.i++
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	// A member named twice decodes as its last copy in encoding/json, and perhaps as
	// the first in another parser: refused (RFC 7519 section 4 allows rejecting; RFC
	// 8259 section 4 leaves it open). Checked for the members that decode into
	// something: a struct's fields (a bit set, no allocation for up to 64 fields) and
	// every member of a map.
	var seenFields uint64
	var seen map[string]struct{}
	var mapNames memberNames
	for {
		s.space()
		raw, escaped, err := s.str()
		if err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return syntaxError{}
		}
		s.i++
		s.space()
		next := elem
		if fs != nil {
			// The member's name as a string only where it is needed: decoded when it
			// has escapes, else looked up by its raw octets without a copy.
			var f field
			var ok bool
			var name string
			if escaped {
				var dec string
				if json.Unmarshal(quoted(raw), &dec) != nil {
					return syntaxError{}
				}
				name = dec
				f, ok = fs.byName[name]
			} else {
				f, ok = fs.byName[string(raw)]
			}
			if ok {
				next = f.typ
				if dup := s.seenField(f.index, raw, escaped, name, &seenFields, &seen); dup {
					if !escaped {
						name = string(raw)
					}
					return duplicate(name)
				}
			} else {
				if !escaped {
					name = string(raw)
				}
				for _, n := range fs.names {
					if strings.EqualFold(n, name) {
						return &NameError{Name: errcode.Cut(name), Field: n}
					}
				}
				next = nil
			}
		}
		if fs == nil && t != nil && t.Kind() == reflect.Map {
			if dup, err := mapNames.add(raw, escaped); err != nil {
				return err
			} else if dup != "" {
				return duplicate(dup)
			}
		}
		if err := s.value(next, depth+1); err != nil {
			return err
		}
		if more, err := s.separator('}'); !more {
			return err
		}
	}
}

// seenField records that the object named the struct field at index (name: raw, or
// decoded when escaped) and reports whether it had named it before.
func (s *scanner) seenField(index int, raw []byte, escaped bool, decoded string, bits *uint64, overflow *map[string]struct{}) bool {
	if index < 64 {
		if *bits&(1<<index) != 0 {
			return true
		}
		*bits |= 1 << index
		return false
	}
	name := decoded
	if !escaped {
		name = string(raw)
	}
	if *overflow == nil {
		*overflow = make(map[string]struct{})
	}
	if _, dup := (*overflow)[name]; dup {
		return true
	}
	(*overflow)[name] = struct{}{}
	return false
}

// memberNames tracks the names of one object's members (a map's entries) for the
// duplicate check: the first few as raw octets in place, without allocating (a token
// request's context and a JOSE header are small maps), then, or as soon as a name has
// an escape, in a map of decoded names.
type memberNames struct {
	raw  [8][]byte
	n    int
	seen map[string]struct{}
}

// add records a name (raw octets between the quotes; escaped: they hold an escape) and
// returns it, decoded, when the object named it before.
func (m *memberNames) add(raw []byte, escaped bool) (string, error) {
	if m.seen == nil && !escaped && m.n < len(m.raw) {
		for _, r := range m.raw[:m.n] {
			if string(r) == string(raw) {
				return string(raw), nil
			}
		}
		m.raw[m.n] = raw
		m.n++
		return "", nil
	}
	if m.seen == nil {
		m.seen = make(map[string]struct{}, 2*len(m.raw))
		for _, r := range m.raw[:m.n] {
			m.seen[string(r)] = struct{}{}
		}
	}
	name := string(raw)
	if escaped {
		if json.Unmarshal(quoted(raw), &name) != nil {
			return "", syntaxError{}
		}
	}
	if _, dup := m.seen[name]; dup {
		return name, nil
	}
	m.seen[name] = struct{}{}
	return "", nil
}

// DuplicateError reports a member that an object names twice.
type DuplicateError struct{ Name string }

func (e *DuplicateError) Error() string {
	return "member \"" + e.Name + "\" appears twice"
}

func duplicate(name string) error { return &DuplicateError{Name: errcode.Cut(name)} }

func quoted(raw []byte) []byte {
	q := make([]byte, 0, len(raw)+2)
	q = append(q, '"')
	q = append(q, raw...)
	return append(q, '"')
}

// str reads a string at s.i and returns its text between the quotes.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, syntaxError{}
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			s.i = j + 1
			return s.b[start:j], escaped, nil
		}
	}
	return nil, false, syntaxError{}
}
