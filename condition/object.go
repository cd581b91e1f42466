package condition

import (
	"encoding/json"
	"reflect"
	"sync"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// LazyObject is a JSON object as an expression reads it, map(string, dyn), computed from
// its source on first read: a request whose expressions never read a token's claims or
// its request_details never has them decoded. It may be the type of a field of a
// StructVar (*LazyObject) and is then declared map(string, dyn); a nil *LazyObject reads as
// an empty object. Once computed it is only read, so one LazyObject (a cached token's
// claims) may serve the evaluations of many requests at once.
type LazyObject struct {
	once   sync.Once
	src    any
	decode func(src any) map[string]any
	val    traits.Mapper
}

// NewLazyObject is a LazyObject whose members decode gives from src on first read (a
// function of src rather than a closure, so that a place may keep LazyObjects in a
// struct it reuses: Reset), as the JSON
// readers give them: nil, bool, float64, json.Number, int64, string, []any and
// map[string]any. They are turned into CEL values once, every number a double (as a
// google.protobuf.Struct has it), so that a read is a map lookup; a member of another
// Go type is null.
func NewLazyObject(src any, decode func(src any) map[string]any) *LazyObject {
	return &LazyObject{src: src, decode: decode}
}

// Reset makes o as NewLazyObject(src, decode) would, for a LazyObject of one request
// kept in a struct that serves the next: none may be reading it.
func (o *LazyObject) Reset(src any, decode func(src any) map[string]any) {
	*o = LazyObject{src: src, decode: decode}
}

var (
	objectType  = types.NewMapType(types.StringType, types.DynType)
	emptyMapper = types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{})
)

func (o *LazyObject) mapper() traits.Mapper {
	if o == nil {
		return emptyMapper
	}
	o.once.Do(func() {
		o.val = emptyMapper
		if o.decode != nil {
			if m := o.decode(o.src); len(m) > 0 {
				o.val = jsonValue(m, 0).(traits.Mapper)
			}
			o.decode, o.src = nil, nil
		}
	})
	return o.val
}

// jsonValue is a JSON value as a CEL value; below maxJSONDepth levels (deeper than
// any verified token or request can nest) it is null.
func jsonValue(v any, depth int) ref.Val {
	if depth > maxJSONDepth {
		return types.NullValue
	}
	switch x := v.(type) {
	case bool:
		return types.Bool(x)
	case string:
		return types.String(x)
	case float64:
		return types.Double(x)
	case int64:
		return types.Double(float64(x))
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return types.NullValue
		}
		return types.Double(f)
	case []any:
		l := make([]ref.Val, len(x))
		for i, e := range x {
			l[i] = jsonValue(e, depth+1)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, l)
	case map[string]any:
		m := make(map[ref.Val]ref.Val, len(x))
		for k, e := range x {
			m[types.String(k)] = jsonValue(e, depth+1)
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m)
	}
	return types.NullValue
}

// The methods of ref.Val and traits.Mapper, those of the decoded map.

func (o *LazyObject) ConvertToNative(t reflect.Type) (any, error) {
	return o.mapper().ConvertToNative(t)
}
func (o *LazyObject) ConvertToType(t ref.Type) ref.Val { return o.mapper().ConvertToType(t) }
func (o *LazyObject) Equal(other ref.Val) ref.Val      { return o.mapper().Equal(other) }
func (o *LazyObject) Type() ref.Type                   { return objectType }
func (o *LazyObject) Value() any                       { return o.mapper().Value() }
func (o *LazyObject) Contains(v ref.Val) ref.Val       { return o.mapper().Contains(v) }
func (o *LazyObject) Get(key ref.Val) ref.Val          { return o.mapper().Get(key) }
func (o *LazyObject) Iterator() traits.Iterator        { return o.mapper().Iterator() }
func (o *LazyObject) Size() ref.Val                    { return o.mapper().Size() }
func (o *LazyObject) Find(key ref.Val) (ref.Val, bool) { return o.mapper().Find(key) }

// HasTrait says which traits the map has (CEL's size, in, index).
func (o *LazyObject) HasTrait(trait int) bool {
	if t, ok := o.mapper().(interface{ HasTrait(int) bool }); ok {
		return t.HasTrait(trait)
	}
	return false
}

// IsZeroValue says the object is empty.
func (o *LazyObject) IsZeroValue() bool { return o.mapper().Size() == types.IntZero }
