package condition

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/google/cel-go/cel"
)

// sizedEnv declares scopes (a list of at most n strings of at most 16 characters),
// requester (a struct, no sizes) and claims (an object, no sizes).
func sizedEnv(t *testing.T, n uint64, opts ...Option) *Env {
	t.Helper()
	env, err := NewEnv("test place", []Var{
		StructVar("requester", testRequester{}),
		Variable("scopes", StringList).Within(0, map[string]uint64{"": n, "@items": 16}),
		Variable("claims", Object),
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// The cost limit keeps refusing what it refused when the runtime tracker was on for
// every expression: an expression whose worst case CEL cannot bound within the limit
// (a triple loop over a list of up to 1000 scopes under a limit of 50) keeps the
// tracker and is stopped, as could not be completed; if Compile left the tracker out
// of it, the evaluation would succeed and this test fail.
func TestCostLimitRefusesUnboundedWorstCase(t *testing.T) {
	env := sizedEnv(t, 1000, WithCostLimit(50))
	p, err := env.Compile(Source{File: "p.yaml", Line: 4}, `scopes.map(a, scopes.map(b, scopes.map(c, a + b + c))).size() > 0`, Bool)
	if err != nil {
		t.Fatal(err)
	}
	if worst, static := p.CostBound(); static || worst <= 50 {
		t.Fatalf("CostBound = %d, %v: a triple loop over 1000 scopes is within a limit of 50", worst, static)
	}
	_, err = p.Bool(context.Background(), testVars())
	if errcode.CodeOf(err) != errcode.ConditionNotEvaluated || !strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("got %v, want condition_not_evaluated at the cost limit", err)
	}
}

// An expression evaluated without the tracker never costs more than the limit: over
// values of the declared sizes, the cost CEL's tracker counts stays within the static
// worst case, and that within the limit. The expressions are those of the places'
// documented examples and of the benchmark.
func TestStaticBoundCoversTheRuntimeCost(t *testing.T) {
	const limit = 5000
	env := sizedEnv(t, 8, WithCostLimit(limit))
	full := make([]string, 8)
	for i := range full {
		full[i] = strings.Repeat(string(rune('a'+i)), 16)
	}
	vars := Vars{
		"requester": testRequester{Workload: strings.Repeat("w", 64), TrustDomain: "a.test", Proof: "wpt"},
		"scopes":    full,
		"claims":    map[string]any{"sub": "alice", "dept": "sales"},
	}
	for _, expr := range []string{
		`requester.workload == "wimse://a.example/agent/a1" && requester.proof in ["wpt", "httpsig"] && claims.sub == "alice"`,
		`scopes.filter(s, s in ["aaaaaaaaaaaaaaaa", "trip.book"]).size() >= 0`,
		`scopes.all(s, s.startsWith("a")) || scopes.exists(s, s == "bbbbbbbbbbbbbbbb")`,
		`scopes.map(a, scopes.filter(b, a == b)).size() == 8`,
		`size(scopes) <= 8 && scopes.exists_one(s, s.endsWith("c"))`,
	} {
		p, err := env.Compile(Source{}, expr, Bool)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		worst, static := p.CostBound()
		if !static || worst > limit {
			t.Fatalf("%s: CostBound = %d, %v; want a static bound within %d", expr, worst, static, limit)
		}
		actual := trackedCost(t, env, expr, vars)
		if actual > worst {
			t.Errorf("%s: the tracker counted %d, more than the static worst case %d", expr, actual, worst)
		}
		if _, err := p.Bool(context.Background(), vars); err != nil {
			t.Errorf("%s: %v", expr, err)
		}
	}
}

// trackedCost is the cost CEL's runtime tracker counts for expr over vars.
func trackedCost(t *testing.T, env *Env, expr string, vars Vars) uint64 {
	t.Helper()
	ast, iss := env.env.Compile(expr)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prg, err := env.env.Program(ast, cel.CostTracking(nil), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		t.Fatal(err)
	}
	_, det, err := prg.Eval(vars)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return *det.ActualCost()
}

// A declared size applies only to what an expression reads of the variable through
// field selections and indexing: a field of a computed value that happens to have the
// variable's name and path, or a comprehension variable that hides it, is of unknown
// size, so the expression keeps the tracker.
func TestDeclaredSizeOnlyOnTheVariablesOwnPaths(t *testing.T) {
	env := sizedEnv(t, 2, WithCostLimit(1000))
	for expr, wantStatic := range map[string]bool{
		`scopes.all(s, s.contains("x"))`: true,
		`scopes[0].contains("x")`:        true,
		// CEL's path of this list is "scopes": taken for the variable's, the loop
		// would be bounded by its 2 elements.
		`{"scopes": claims.groups}.scopes.all(s, s == "x")`:                false,
		`[claims.groups].all(scopes, scopes.all(s, s == "x"))`:             false,
		`claims.groups.all(g, g.contains("x"))`:                            false,
		`(size(scopes) > 0 ? scopes : claims.groups).all(s, s.size() > 0)`: false,
	} {
		p, err := env.Compile(Source{}, expr, Bool)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if _, static := p.CostBound(); static != wantStatic {
			t.Errorf("%s: static = %v, want %v", expr, static, wantStatic)
		}
	}
	// Without a declared size nothing of unknown length is bounded.
	p, _ := testEnv(t).Compile(Source{}, `scopes.all(s, s.contains("x"))`, Bool)
	if worst, static := p.CostBound(); static || worst != math.MaxUint64 {
		t.Errorf("undeclared sizes: CostBound = %d, %v", worst, static)
	}
}

// A variable given as BadValue ends an expression that reads it in condition_error.
func TestBadValueRefuses(t *testing.T) {
	env := sizedEnv(t, 2)
	p, _ := env.Compile(Source{}, `scopes.all(s, s != "")`, Bool)
	vars := testVars()
	vars["scopes"] = func() any { return BadValue("scopes: %d, more than declared", 3) }
	if _, err := p.Bool(context.Background(), vars); errcode.CodeOf(err) != errcode.ConditionError {
		t.Fatalf("got %v, want condition_error", err)
	}
	q, _ := env.Compile(Source{}, `requester.proof == "http-sig"`, Bool)
	if ok, err := q.Bool(context.Background(), vars); !ok || err != nil {
		t.Fatalf("an expression that does not read it: %v %v", ok, err)
	}
}

// One Input serves every expression of a request: a lazy variable is computed once
// for all of them, and the deadline is the request's: once it has passed, a second
// expression with a loop is stopped as well, as could not be completed.
func TestInputSharedByTheRequestsExpressions(t *testing.T) {
	env := testEnv(t, WithCostLimit(1<<62), WithDeadline(time.Nanosecond))
	calls := 0
	vars := testVars()
	vars["claims"] = func() any { calls++; return map[string]any{"dept": "sales"} }
	in := env.NewInput(context.Background(), vars)
	defer in.Close()
	a, _ := env.Compile(Source{}, `claims.dept == "sales"`, Bool)
	b, _ := env.Compile(Source{}, `claims.dept.size() == 5`, Bool)
	for _, p := range []*Program{a, b} {
		if ok, err := p.BoolInput(in); !ok || err != nil {
			t.Fatalf("%s: %v %v", p.Expr(), ok, err)
		}
	}
	if calls != 1 {
		t.Errorf("the lazy variable was computed %d times", calls)
	}
	loop, _ := env.Compile(Source{}, `lists.range(100000).all(i, i >= 0)`, Bool)
	for i := 0; i < 2; i++ {
		if _, err := loop.BoolInput(in); errcode.CodeOf(err) != errcode.ConditionNotEvaluated {
			t.Fatalf("evaluation %d past the request's deadline: %v", i, err)
		}
	}
}

// The caller's earlier deadline wins over the environment's: a loop of a hundred
// million iterations under an hour's deadline stops at the caller's two milliseconds.
func TestCallersEarlierDeadlineWins(t *testing.T) {
	env := testEnv(t, WithCostLimit(1<<62), WithDeadline(time.Hour))
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(2*time.Millisecond))
	defer cancel()
	loop, _ := env.Compile(Source{}, `lists.range(100000).all(i, lists.range(1000).all(j, i + j >= 0))`, Bool)
	if _, err := loop.Bool(ctx, testVars()); errcode.CodeOf(err) != errcode.ConditionNotEvaluated {
		t.Fatalf("got %v", err)
	}
}

// The deadlines of one tick share one context, cancelled with DeadlineExceeded when
// the tick ends.
func TestDeadlinesOfOneTickShareOneTimer(t *testing.T) {
	past := time.Now().Add(-time.Second).Truncate(deadlineTick)
	a, b := deadlineAt(past.Add(time.Microsecond)), deadlineAt(past.Add(deadlineTick-time.Microsecond))
	if a != b {
		t.Error("two deadlines of one tick have two contexts")
	}
	if c := deadlineAt(past.Add(deadlineTick + time.Microsecond)); c == a {
		t.Error("deadlines of two ticks share a context")
	}
	<-a.Done() // its tick has ended: the timer fires at once
	if !errors.Is(context.Cause(a), context.DeadlineExceeded) {
		t.Errorf("cause %v", context.Cause(a))
	}
}

// A LazyObject is decoded on first read only, once, and reads as a map(string, dyn)
// whose numbers are doubles; a nil one is an empty object.
func TestLazyObject(t *testing.T) {
	type holder struct {
		Claims *LazyObject `cel:"claims"`
	}
	env, err := NewEnv("test place", []Var{StructVar("subject", holder{})})
	if err != nil {
		t.Fatal(err)
	}
	decoded := 0
	obj := NewLazyObject(nil, func(any) map[string]any {
		decoded++
		return map[string]any{"sub": "alice", "n": int64(3), "groups": []any{"a", "b"}, "o": map[string]any{"x": true}}
	})
	for expr, want := range map[string]bool{
		`subject.claims.sub == "alice" && has(subject.claims.groups)`: true,
		`subject.claims.n == 3.0 && type(subject.claims.n) == double`: true,
		`"b" in subject.claims.groups && subject.claims.o.x`:          true,
		`size(subject.claims) == 4 && "o" in subject.claims`:          true,
		`subject.claims.exists(k, k == "sub")`:                        true,
		`subject.claims == {"sub": "alice"}`:                          false,
		`type(subject.claims) == map`:                                 true,
	} {
		p, err := env.Compile(Source{}, expr, Bool)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		got, err := p.Bool(context.Background(), Vars{"subject": &holder{Claims: obj}})
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
	if decoded != 1 {
		t.Errorf("decoded %d times", decoded)
	}
	p, _ := env.Compile(Source{}, `size(subject.claims) == 0 && !has(subject.claims.sub)`, Bool)
	if ok, err := p.Bool(context.Background(), Vars{"subject": holder{}}); !ok || err != nil {
		t.Errorf("a nil object: %v %v", ok, err)
	}
	j, _ := env.Compile(Source{}, `subject.claims.o`, Dyn)
	if v, err := j.JSON(context.Background(), Vars{"subject": &holder{Claims: obj}}); err != nil || v.(map[string]any)["x"] != true {
		t.Errorf("JSON of a member: %v %v", v, err)
	}
}

// An Input serves the expressions of its own environment only.
func TestInputOfAnotherEnvironmentRefused(t *testing.T) {
	a, b := testEnv(t), testEnv(t)
	p, _ := a.Compile(Source{}, `true`, Bool)
	in := b.NewInput(context.Background(), testVars())
	defer in.Close()
	if _, err := p.BoolInput(in); errcode.CodeOf(err) != errcode.ConditionError {
		t.Fatalf("got %v", err)
	}
}
