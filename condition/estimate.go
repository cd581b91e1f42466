package condition

import (
	"strings"

	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// Within declares how large the values of the variable can be, as a promise of the
// place that gives them: no string, list or map it holds, at any depth, is larger than
// max (characters, elements or entries; 0: unknown), and, tighter, the value at each
// path below it is at most the size given. A path is the field names from the variable
// down, with @items for a list's elements and @values for a map's values, "" the
// variable itself: {"scopes": 512, "scopes.@items": 1024}.
//
// The sizes feed CEL's static cost estimate (see Compile): an expression whose worst
// case over values of these sizes stays within the cost limit is evaluated without the
// runtime cost tracker. A place that declares a size must make sure its values keep it
// (grantpolicy refuses a request that breaks one): a value larger than declared could
// take an expression past the cost limit unnoticed.
func (v Var) Within(max uint64, paths map[string]uint64) Var {
	v.maxSize = max
	if len(paths) > 0 {
		v.sizes = make(map[string]uint64, len(paths))
		for p, n := range paths {
			v.sizes[p] = n
		}
	}
	return v
}

// sizeEstimator gives CEL's cost estimate the declared sizes of the variables' values.
// It answers only for an expression whose path CEL tracked from a declared variable
// through field selections and indexing (trusted): CEL also builds a path for a field
// of a computed value ({"request": x}.request), and that path says nothing of the
// value's size.
type sizeEstimator struct {
	vars    map[string]Var
	trusted map[int64]bool
}

func (s *sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	path := n.Path()
	if len(path) == 0 || n.Expr() == nil || !s.trusted[n.Expr().ID()] {
		return nil
	}
	v, ok := s.vars[path[0]]
	if !ok {
		return nil
	}
	if t := n.Type(); t != nil {
		switch t.Kind() {
		case types.BoolKind, types.IntKind, types.UintKind, types.DoubleKind, types.DurationKind,
			types.TimestampKind, types.NullTypeKind:
			return nil // CEL knows a scalar's size
		}
	}
	if n, ok := v.sizes[strings.Join(path[1:], ".")]; ok {
		return &checker.SizeEstimate{Min: 0, Max: n}
	}
	if v.maxSize > 0 {
		return &checker.SizeEstimate{Min: 0, Max: v.maxSize}
	}
	return nil
}

func (s *sizeEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil // CEL's own estimates, and those of the extensions
}

// trustedPaths are the expressions whose value is a declared variable or a part of one
// reached by field selection and indexing: an identifier of a variable that no
// comprehension variable hides, an iteration variable over such a value, and a field
// or element of one. Their CEL paths name what they hold.
func trustedPaths(root celast.Expr, declared map[string]Var) map[int64]bool {
	trusted := map[int64]bool{}
	// scope maps the comprehension variables in scope to whether their range is
	// trusted; an accumulator (or a cel.bind variable) never is.
	var scope []struct {
		name string
		ok   bool
	}
	lookup := func(name string) (ok, local bool) {
		for i := len(scope) - 1; i >= 0; i-- {
			if scope[i].name == name {
				return scope[i].ok, true
			}
		}
		return false, false
	}
	var walk func(e celast.Expr) bool
	walk = func(e celast.Expr) bool {
		ok := false
		switch e.Kind() {
		case celast.IdentKind:
			name := e.AsIdent()
			if inScope, local := lookup(name); local {
				ok = inScope
			} else {
				_, ok = declared[name]
			}
		case celast.SelectKind:
			sel := e.AsSelect()
			ok = walk(sel.Operand()) && !sel.IsTestOnly()
		case celast.CallKind:
			call := e.AsCall()
			if call.IsMemberFunction() {
				walk(call.Target())
			}
			for i, a := range call.Args() {
				if t := walk(a); i == 0 && t && call.FunctionName() == operators.Index && len(call.Args()) == 2 {
					ok = true
				}
			}
		case celast.ListKind:
			for _, x := range e.AsList().Elements() {
				walk(x)
			}
		case celast.MapKind:
			for _, ent := range e.AsMap().Entries() {
				walk(ent.AsMapEntry().Key())
				walk(ent.AsMapEntry().Value())
			}
		case celast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				walk(f.AsStructField().Value())
			}
		case celast.ComprehensionKind:
			c := e.AsComprehension()
			rangeOK := walk(c.IterRange())
			walk(c.AccuInit())
			n := len(scope)
			scope = append(scope, struct {
				name string
				ok   bool
			}{c.AccuVar(), false})
			walk(c.Result()) // the accumulator and nothing else is in scope for the result
			// The iteration variables see the range: one (the element, or a map's key,
			// both of the range's path) or two (index or key, and the value).
			if c.HasIterVar2() {
				scope = append(scope, struct {
					name string
					ok   bool
				}{c.IterVar(), false}, struct {
					name string
					ok   bool
				}{c.IterVar2(), rangeOK})
			} else {
				scope = append(scope, struct {
					name string
					ok   bool
				}{c.IterVar(), rangeOK})
			}
			walk(c.LoopCondition())
			walk(c.LoopStep())
			scope = scope[:n]
		}
		if ok {
			trusted[e.ID()] = true
		}
		return ok
	}
	walk(root)
	return trusted
}
