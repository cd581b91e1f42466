package condition

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
)

// Source says where an expression was written, for the errors at load and the log
// lines of a refusal.
type Source struct {
	File string // the configuration file ("" for one built in or given in code)
	// Line and Column are where the expression's text begins (1-based; 0 if unknown).
	// A YAML block scalar (when: |) begins on the line after its key.
	Line, Column int
	Field        string // the field path, such as policy.rules[2].when
}

// String is file:line:column: field, leaving out what is unknown.
func (s Source) String() string {
	var b strings.Builder
	b.WriteString(s.File)
	if s.Line > 0 {
		if b.Len() > 0 {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(s.Line))
		if s.Column > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(s.Column))
		}
	}
	if s.Field != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(s.Field)
	}
	return b.String()
}

// CompileError is an expression that does not parse, does not type-check against its
// place's variables, or whose result is not of the type its field needs. Its text names
// the file, the line, the field and the expression.
type CompileError struct {
	Source Source
	Place  string
	Expr   string
	// Line and Column locate the first problem in the file (Line 0 if unknown).
	Line, Column int
	Problems     []string // CEL's messages, one per problem
}

func (e *CompileError) Error() string {
	pos := e.Source
	pos.Line, pos.Column = e.Line, e.Column
	return fmt.Sprintf("%s: %s: %s in %s", pos, e.Place, strings.Join(e.Problems, "; "), strconv.Quote(e.Expr))
}

// Compile parses and type-checks expr, whose result must be of type want (Bool,
// StringList, Object, String, ...; dyn is accepted and checked when evaluated), and
// plans it with the environment's limits. The error is a *CompileError.
func (e *Env) Compile(src Source, expr string, want Type) (*Program, error) {
	ast, iss := e.env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		ce := &CompileError{Source: src, Place: e.place, Expr: expr, Line: src.Line, Column: src.Column}
		for i, ie := range iss.Errors() {
			loc := ie.Location
			if i == 0 && loc != nil && src.Line > 0 {
				ce.Line, ce.Column = position(src, loc.Line(), loc.Column()+1)
			}
			msg := ie.Message
			if loc != nil {
				msg = fmt.Sprintf("%s (at %d:%d of the expression)", msg, loc.Line(), loc.Column()+1)
			}
			ce.Problems = append(ce.Problems, msg)
		}
		return nil, ce
	}
	out := ast.OutputType()
	if !want.IsAssignableType(out) && !out.IsExactType(cel.DynType) {
		return nil, &CompileError{Source: src, Place: e.place, Expr: expr, Line: src.Line, Column: src.Column,
			Problems: []string{fmt.Sprintf("the result is %s where %s is needed", out, want)}}
	}
	// CEL's static estimate of the worst case, over values of the sizes the variables
	// declared (Var.Within): within the cost limit, the runtime tracker could never
	// stop the evaluation, so it is left out; otherwise (a loop over a list of unknown
	// length, a string function over a claim) it counts every step.
	est, err := e.env.EstimateCost(ast, &sizeEstimator{vars: e.vars, trusted: trustedPaths(ast.NativeRep().Expr(), e.vars)})
	if err != nil {
		est.Max = math.MaxUint64
	}
	tracked := est.Max > e.cost
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	loops := hasComprehension(ast.NativeRep().Expr())
	if loops {
		opts = append(opts, cel.InterruptCheckFrequency(interruptEvery))
	}
	if tracked {
		opts = append(opts, cel.CostLimit(e.cost))
	}
	prg, err := e.env.Program(ast, opts...)
	if err != nil {
		return nil, &CompileError{Source: src, Place: e.place, Expr: expr, Line: src.Line, Column: src.Column,
			Problems: []string{err.Error()}}
	}
	return &Program{env: e, src: src, expr: expr, want: want, prg: prg, loops: loops, tracked: tracked, worst: est.Max}, nil
}

// interruptEvery is how many loop iterations pass between two looks at the deadline.
const interruptEvery = 32

// position is the file line and column of a 1-based line and column in the expression.
func position(src Source, line, col int) (int, int) {
	if line > 1 {
		return src.Line + line - 1, 0
	}
	if src.Column > 0 {
		return src.Line, src.Column + col - 1
	}
	return src.Line, 0
}

// hasComprehension says whether an expression contains a loop (a macro such as all,
// exists, map or filter expands to a comprehension).
func hasComprehension(e celast.Expr) bool {
	found := false
	visitor := celast.NewExprVisitor(func(x celast.Expr) {
		if x.Kind() == celast.ComprehensionKind {
			found = true
		}
	})
	celast.PostOrderVisit(e, visitor)
	return found
}
