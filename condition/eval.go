package condition

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// Vars are the values of a place's variables for one evaluation: a Go value per name
// (a struct of the type StructVar declared, a string, a []string, a map[string]any,
// ...). A value may be given lazily as a func() any, computed only if an expression
// reads it.
type Vars = map[string]any

// Program is one compiled expression. It is safe for concurrent use.
type Program struct {
	env   *Env
	src   Source
	expr  string
	want  Type
	prg   cel.Program
	loops bool
	// tracked says the evaluation runs under the runtime cost tracker: CEL's static
	// estimate of the worst case (worst) is over the cost limit or unknown.
	tracked bool
	worst   uint64
}

// Source is where the expression was written.
func (p *Program) Source() Source { return p.src }

// Expr is the expression's text.
func (p *Program) Expr() string { return p.expr }

// CostBound is CEL's static estimate of the expression's worst-case cost over values of
// the declared sizes (math.MaxUint64 when it has no bound), and whether that is within
// the cost limit, so that the expression is evaluated without the runtime tracker.
func (p *Program) CostBound() (worst uint64, static bool) { return p.worst, !p.tracked }

// Eval evaluates the expression over vars, as EvalInput over an Input of its own.
func (p *Program) Eval(ctx context.Context, vars Vars) (ref.Val, error) {
	in := p.env.NewInput(ctx, vars)
	defer in.Close()
	return p.EvalInput(in)
}

// EvalInput evaluates the expression over a request's Input under the cost limit and,
// when it loops, the deadline. The error is an *errcode.Error: condition_not_evaluated
// (Incomplete) when the cost limit, the deadline or the caller's context stopped it,
// condition_error (Failed) when it ended in an error. The result is CEL's value; the
// Bool, Strings and JSON forms give Go values.
//
// The cost limit is kept in one of two ways, decided at Compile: an expression whose
// worst case CEL bounds within the limit is evaluated as it is, one it cannot bound
// under the runtime cost tracker. An expression with a loop watches the deadline every
// few iterations; one without a loop cannot outrun its cost, so it only looks at the
// caller's context before it starts.
func (p *Program) EvalInput(in *Input) (ref.Val, error) {
	if in.env != p.env {
		// Its values were adapted with another environment's types: a mistake of the
		// place, refused rather than evaluated.
		return nil, p.failed(nil, "not evaluated: the input is of %s", in.env.place)
	}
	if cerr := in.ctx.Err(); cerr != nil {
		return nil, p.incomplete(cerr, "not evaluated: %v", cerr)
	}
	var (
		out ref.Val
		err error
	)
	if p.tracked {
		// The tracker keeps its count in the frame: a frame of its own.
		frame, ferr := interpreter.NewExecutionFrame(interpreter.Activation(in))
		if ferr != nil {
			return nil, p.failed(ferr, "not evaluated")
		}
		if p.loops {
			if err := frame.SetContext(in.deadlineContext(), interruptEvery); err != nil {
				frame.Close()
				return nil, p.failed(err, "not evaluated")
			}
		}
		out, _, err = p.prg.Eval(frame)
		frame.Close()
	} else {
		frame, ferr := in.sharedFrame(p.loops)
		if ferr != nil {
			return nil, p.failed(ferr, "not evaluated")
		}
		out, _, err = p.prg.Eval(frame)
	}
	if err != nil {
		if p.loops && errors.Is(err, interpreter.InterruptError{}) {
			err = fmt.Errorf("%w: %w", err, context.Cause(in.deadlineContext()))
		}
		return nil, p.evalError(err)
	}
	return out, nil
}

func (p *Program) evalError(err error) error {
	var cancelled interpreter.EvalCancelledError
	switch {
	case errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded:
		return p.incomplete(err, "stopped at the cost limit %d", p.env.cost)
	case errors.As(err, &cancelled),
		errors.Is(err, interpreter.InterruptError{}),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled):
		return p.incomplete(err, "stopped at the evaluation deadline")
	}
	return p.failed(err, "evaluation ended in an error")
}

func (p *Program) incomplete(cause error, format string, args ...any) *errcode.Error {
	return errcode.Unavailable(errcode.ConditionNotEvaluated, cause, "%s: %s: %s", p.where(), p.env.place, fmt.Sprintf(format, args...))
}

func (p *Program) failed(cause error, format string, args ...any) *errcode.Error {
	return errcode.Wrap(errcode.ConditionError, cause, "%s: %s: %s", p.where(), p.env.place, fmt.Sprintf(format, args...))
}

// where names the expression in an error: its source, or the expression itself.
func (p *Program) where() string {
	if s := p.src.String(); s != "" {
		return s
	}
	return strconv.Quote(p.expr)
}

// Bool evaluates a condition over vars.
func (p *Program) Bool(ctx context.Context, vars Vars) (bool, error) {
	in := p.env.NewInput(ctx, vars)
	defer in.Close()
	return p.BoolInput(in)
}

// BoolInput evaluates a condition over a request's Input.
func (p *Program) BoolInput(in *Input) (bool, error) {
	out, err := p.EvalInput(in)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, p.failed(nil, "the result is %s, not a bool", out.Type())
	}
	return bool(b), nil
}

// Strings evaluates an expression whose result is a list of strings over vars.
func (p *Program) Strings(ctx context.Context, vars Vars) ([]string, error) {
	in := p.env.NewInput(ctx, vars)
	defer in.Close()
	return p.StringsInput(in)
}

// StringsInput evaluates an expression whose result is a list of strings over a
// request's Input.
func (p *Program) StringsInput(in *Input) ([]string, error) {
	out, err := p.EvalInput(in)
	if err != nil {
		return nil, err
	}
	l, ok := out.(traits.Lister)
	if !ok {
		return nil, p.failed(nil, "the result is %s, not a list of strings", out.Type())
	}
	n, _ := l.Size().(types.Int)
	strs := make([]string, 0, int(n))
	for i := types.Int(0); i < n; i++ {
		s, ok := l.Get(i).(types.String)
		if !ok {
			return nil, p.failed(nil, "the result is not a list of strings")
		}
		strs = append(strs, string(s))
	}
	return strs, nil
}

// JSON evaluates an expression and gives its result as a JSON value: nil, bool, int64,
// uint64, float64, string, []any or map[string]any (string keys only); a timestamp is
// its RFC 3339 text and a duration its whole seconds. Bytes and other values are a
// condition_error.
func (p *Program) JSON(ctx context.Context, vars Vars) (any, error) {
	in := p.env.NewInput(ctx, vars)
	defer in.Close()
	return p.JSONInput(in)
}

// JSONInput is JSON over a request's Input.
func (p *Program) JSONInput(in *Input) (any, error) {
	out, err := p.EvalInput(in)
	if err != nil {
		return nil, err
	}
	v, err := toJSON(out, 0)
	if err != nil {
		return nil, p.failed(err, "the result is not a JSON value")
	}
	return v, nil
}

// maxJSONDepth bounds the nesting of a result turned into JSON.
const maxJSONDepth = 32

func toJSON(v ref.Val, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("nested too deep")
	}
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		return float64(x), nil
	case types.String:
		return string(x), nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339Nano), nil
	case types.Duration:
		return int64(x.Duration / time.Second), nil
	case traits.Mapper:
		m := make(map[string]any, int(x.Size().(types.Int)))
		for it := x.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key of type %s", k.Type())
			}
			e, err := toJSON(x.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			m[string(ks)] = e
		}
		return m, nil
	case traits.Lister:
		n := int(x.Size().(types.Int))
		l := make([]any, 0, n)
		for i := 0; i < n; i++ {
			e, err := toJSON(x.Get(types.Int(i)), depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, e)
		}
		return l, nil
	}
	return nil, fmt.Errorf("a value of type %s", v.Type())
}
