package condition

import (
	"fmt"
	"reflect"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
)

// Type is the CEL type of a variable or of an expression's result.
type Type = *cel.Type

// The types a place declares its variables with and asks its expressions' results in.
var (
	Bool       Type = cel.BoolType
	String     Type = cel.StringType
	Int        Type = cel.IntType
	Uint       Type = cel.UintType
	Double     Type = cel.DoubleType
	Timestamp  Type = cel.TimestampType
	Duration   Type = cel.DurationType
	Dyn        Type = cel.DynType
	StringList Type = cel.ListType(cel.StringType)
	// StringMap is map(string, string).
	StringMap Type = cel.MapType(cel.StringType, cel.StringType)
	// Object is map(string, dyn): a JSON object such as a token's claims.
	Object Type = cel.MapType(cel.StringType, cel.DynType)
)

// ListOf is list(elem).
func ListOf(elem Type) Type { return cel.ListType(elem) }

// MapOf is map(key, value).
func MapOf(key, value Type) Type { return cel.MapType(key, value) }

// Var declares one variable an expression of a place may use.
type Var struct {
	Name string
	Type Type
	// native is the Go struct type behind an object variable (StructVar).
	native reflect.Type
	// maxSize and sizes are what Within declared (0 and nil: unknown).
	maxSize uint64
	sizes   map[string]uint64
}

// Variable declares a variable of a CEL type.
func Variable(name string, t Type) Var { return Var{Name: name, Type: t} }

// StructVar declares a variable whose value is a Go struct (or a pointer to one) of the
// type of zero: its exported fields are the variable's fields, named by their `cel`
// struct tag where they have one, and each is type-checked at load
// (requester.workload is a string; requester.wrkload does not compile). A field of a
// struct type is an object of its own; a map or slice field is a CEL map or list.
func StructVar(name string, zero any) Var {
	rt := reflect.TypeOf(zero)
	for rt != nil && rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	return Var{Name: name, native: rt}
}

// Env is the environment of one place conditions are written: its variables, the
// functions every expression may call, and the limits of an evaluation. It is safe for
// concurrent use, and so is every Program it compiles.
type Env struct {
	place    string
	env      *cel.Env
	vars     map[string]Var
	cost     uint64
	deadline time.Duration
}

// Default limits of an evaluation. The cost is CEL's runtime cost, a count of the
// operations an evaluation performed weighted by their size (one comparison is 1, a
// string function proportional to the string); a condition over a token's claims and
// a handful of scopes costs tens to hundreds.
const (
	DefaultCostLimit = 100_000
	DefaultDeadline  = 10 * time.Millisecond
)

// Option configures an Env.
type Option func(*Env)

// WithCostLimit sets the runtime cost an evaluation may reach before it is stopped
// (condition_not_evaluated). Zero keeps DefaultCostLimit.
func WithCostLimit(limit uint64) Option {
	return func(e *Env) {
		if limit > 0 {
			e.cost = limit
		}
	}
}

// WithDeadline sets how long an evaluation of an expression with a loop may run
// before it is stopped (condition_not_evaluated); an earlier deadline of the caller's
// context wins. Zero keeps DefaultDeadline.
func WithDeadline(d time.Duration) Option {
	return func(e *Env) {
		if d > 0 {
			e.deadline = d
		}
	}
}

// NewEnv declares the environment of place (a name for errors and logs, such as "tts
// issuance policy") with its variables. Two variables of one name, or a struct
// variable CEL cannot represent, are an error.
func NewEnv(place string, vars []Var, opts ...Option) (*Env, error) {
	e := &Env{place: place, cost: DefaultCostLimit, deadline: DefaultDeadline}
	for _, o := range opts {
		o(e)
	}
	e.vars = make(map[string]Var, len(vars))
	var natives []any
	var decls []cel.EnvOption
	for _, v := range vars {
		if _, twice := e.vars[v.Name]; v.Name == "" || twice {
			return nil, fmt.Errorf("condition: %s: variable %q declared twice or unnamed", place, v.Name)
		}
		e.vars[v.Name] = v
		t := v.Type
		if v.native != nil {
			if v.native.Kind() != reflect.Struct {
				return nil, fmt.Errorf("condition: %s: variable %q: %s is not a struct", place, v.Name, v.native)
			}
			natives = append(natives, v.native)
			t = cel.ObjectType(nativeName(v.native))
		}
		if t == nil {
			return nil, fmt.Errorf("condition: %s: variable %q has no type", place, v.Name)
		}
		decls = append(decls, cel.Variable(v.Name, t))
	}
	envOpts := []cel.EnvOption{
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		ext.Sets(),
		ext.Lists(),
	}
	if len(natives) > 0 {
		envOpts = append(envOpts, ext.NativeTypes(append(natives, ext.ParseStructTags(true))...))
	}
	envOpts = append(envOpts, decls...)
	env, err := cel.NewEnv(envOpts...)
	if err != nil {
		return nil, fmt.Errorf("condition: %s: %w", place, err)
	}
	e.env = env
	return e, nil
}

// Place is the name the environment was declared with.
func (e *Env) Place() string { return e.place }

// nativeName is the name CEL's native types give a Go struct: the last element of its
// package path and the type's name.
func nativeName(t reflect.Type) string {
	pkg := t.PkgPath()
	for i := len(pkg) - 1; i >= 0; i-- {
		if pkg[i] == '/' {
			pkg = pkg[i+1:]
			break
		}
	}
	return pkg + "." + t.Name()
}
