package condition

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

// Input is the variables of one request, for every expression of one Env evaluated
// over them (Program.EvalInput, BoolInput, StringsInput, JSONInput). What it shares
// between those evaluations is what they would otherwise each pay for:
//
//   - one deadline: the Env's deadline counts from NewInput (the caller's, when it is
//     earlier), and is looked up only when the first expression with a loop is
//     evaluated; a timer shared by the deadlines of one millisecond stops the loops
//     (deadline.go). The caller's cancellation is looked at before each expression;
//   - the variables as CEL values: a lazy value (func() any) is computed and adapted on
//     first use, then kept for the other expressions;
//   - one execution frame for the expressions evaluated without the runtime cost
//     tracker (an expression with the tracker gets a frame of its own, so that its
//     cost is its own).
//
// An Input is for one goroutine and the expressions of its Env. Close releases it (the
// frame, the Resolver); it must not be used after.
type Input struct {
	env   *Env
	ctx   context.Context
	start time.Time
	vars  Vars
	res   Resolver
	// resolved are the variables read so far, as CEL values.
	resolved []resolvedVar
	// frame is shared by the untracked expressions; framed says its context is set.
	frame  *interpreter.ExecutionFrame
	framed bool
	// deadline is the context of the request's deadline, taken on first need.
	deadline context.Context
}

type resolvedVar struct {
	name string
	val  any // a CEL value, or a pointer to a struct variable's struct
}

var inputPool = sync.Pool{New: func() any { return &Input{resolved: make([]resolvedVar, 0, 8)} }}

// NewInput starts the evaluations of one request over vars under ctx.
func (e *Env) NewInput(ctx context.Context, vars Vars) *Input {
	in := inputPool.Get().(*Input)
	in.env, in.ctx, in.vars, in.start = e, ctx, vars, time.Now()
	return in
}

// Resolver gives the variables of one request by name, as Vars does: a place whose
// variables are computed from the request's own values implements it on one struct,
// rather than a map of closures. Var is called at most once per name and Input; a
// struct variable may be given as a pointer to its struct.
type Resolver interface {
	Var(name string) (any, bool)
}

// NewInputFrom starts the evaluations of one request over the variables r gives.
func (e *Env) NewInputFrom(ctx context.Context, r Resolver) *Input {
	in := inputPool.Get().(*Input)
	in.env, in.ctx, in.res, in.start = e, ctx, r, time.Now()
	return in
}

// Close ends the request's evaluations (and releases a Resolver that has a Release
// method).
func (in *Input) Close() {
	if in == nil || in.env == nil {
		return
	}
	if r, ok := in.res.(interface{ Release() }); ok {
		r.Release()
	}
	if in.frame != nil {
		in.frame.Close()
	}
	clear(in.resolved)
	*in = Input{resolved: in.resolved[:0]}
	inputPool.Put(in)
}

// ResolveName implements interpreter.Activation: a variable of vars as a CEL value,
// computed (when lazy) and adapted once.
func (in *Input) ResolveName(name string) (any, bool) {
	for _, r := range in.resolved {
		if r.name == name {
			return r.val, true
		}
	}
	var (
		v  any
		ok bool
	)
	if in.res != nil {
		v, ok = in.res.Var(name)
	} else {
		v, ok = in.vars[name]
	}
	if !ok {
		return nil, false
	}
	switch f := v.(type) {
	case func() any:
		v = f()
	case func() ref.Val:
		v = f()
	}
	// A pointer to a struct variable's struct stays as it is: CEL reads its fields
	// through the pointer (StructVar), with no wrapper per request. Any other value is
	// adapted once here rather than at each read.
	if _, isVal := v.(ref.Val); !isVal && !isStructPointer(v) {
		v = in.env.env.CELTypeAdapter().NativeToValue(v)
	}
	in.resolved = append(in.resolved, resolvedVar{name, v})
	return v, true
}

func isStructPointer(v any) bool {
	t := reflect.TypeOf(v)
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct
}

// Parent implements interpreter.Activation.
func (in *Input) Parent() interpreter.Activation { return nil }

// deadlineContext is the context of the request's deadline (deadline.go): the Env's,
// counted from NewInput, or the caller's when that is earlier.
func (in *Input) deadlineContext() context.Context {
	if in.deadline == nil {
		at := in.start.Add(in.env.deadline)
		if d, ok := in.ctx.Deadline(); ok && d.Before(at) {
			at = d
		}
		in.deadline = deadlineAt(at)
	}
	return in.deadline
}

// sharedFrame is the frame of the expressions evaluated without the cost tracker;
// one with a loop needs it to watch the deadline.
func (in *Input) sharedFrame(loops bool) (*interpreter.ExecutionFrame, error) {
	if in.frame == nil {
		f, err := interpreter.NewExecutionFrame(interpreter.Activation(in))
		if err != nil {
			return nil, err
		}
		in.frame = f
	}
	if loops && !in.framed {
		if err := in.frame.SetContext(in.deadlineContext(), interruptEvery); err != nil {
			return nil, err
		}
		in.framed = true
	}
	return in.frame, nil
}

// BadValue is the value of a variable that cannot be given as it is (it is larger than
// the sizes its place declared, say): an expression that reads the variable ends in an
// error (condition_error), one that does not is unaffected.
func BadValue(format string, args ...any) any { return types.NewErr(format, args...) }
