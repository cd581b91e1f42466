package condition

import (
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
	decode func() any
	val    traits.Mapper
}

// NewLazyObject is a LazyObject whose value decode gives on first read: a map[string]any of
// JSON values, a *structpb.Struct, or another value CEL reads as a map; anything else
// (nil) is an empty object.
func NewLazyObject(decode func() any) *LazyObject { return &LazyObject{decode: decode} }

var (
	objectType  = types.NewMapType(types.StringType, types.DynType)
	emptyMapper = types.DefaultTypeAdapter.NativeToValue(map[string]any{}).(traits.Mapper)
)

func (o *LazyObject) mapper() traits.Mapper {
	if o == nil {
		return emptyMapper
	}
	o.once.Do(func() {
		o.val = emptyMapper
		if o.decode != nil {
			if m, ok := types.DefaultTypeAdapter.NativeToValue(o.decode()).(traits.Mapper); ok {
				o.val = m
			}
			o.decode = nil
		}
	})
	return o.val
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
