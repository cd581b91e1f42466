package condition

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
)

type testRequester struct {
	Workload    string `cel:"workload"`
	TrustDomain string `cel:"trust_domain"`
	Proof       string `cel:"proof"`
}

func testEnv(t *testing.T, opts ...Option) *Env {
	t.Helper()
	env, err := NewEnv("test place", []Var{
		StructVar("requester", testRequester{}),
		Variable("scopes", StringList),
		Variable("claims", Object),
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func testVars() Vars {
	return Vars{
		"requester": testRequester{Workload: "spiffe://a.test/agent", TrustDomain: "a.test", Proof: "http-sig"},
		"scopes":    []string{"read", "write", "admin"},
		"claims":    map[string]any{"dept": "sales", "groups": []any{"a", "b"}},
	}
}

func TestBoolOverStructAndMap(t *testing.T) {
	env := testEnv(t)
	for expr, want := range map[string]bool{
		`requester.workload.startsWith("spiffe://a.test/") && requester.proof == "http-sig"`: true,
		`claims.dept == "sales"`:                                  true,
		`claims.?missing.orValue("x") == "x"`:                     true,
		`"admin" in scopes && requester.trust_domain == "b.test"`: false,
		`scopes.all(s, s.size() > 2)`:                             true,
	} {
		p, err := env.Compile(Source{}, expr, Bool)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		got, err := p.Bool(context.Background(), testVars())
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
}

func TestStringsAndJSON(t *testing.T) {
	env := testEnv(t)
	p, err := env.Compile(Source{}, `scopes.filter(s, s != "admin")`, StringList)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Strings(context.Background(), testVars())
	if err != nil || !reflect.DeepEqual(got, []string{"read", "write"}) {
		t.Fatalf("Strings = %v, %v", got, err)
	}
	j, err := env.Compile(Source{}, `{"dept": claims.dept, "n": size(scopes), "wl": requester.workload}`, Object)
	if err != nil {
		t.Fatal(err)
	}
	v, err := j.JSON(context.Background(), testVars())
	want := map[string]any{"dept": "sales", "n": int64(3), "wl": "spiffe://a.test/agent"}
	if err != nil || !reflect.DeepEqual(v, want) {
		t.Fatalf("JSON = %#v, %v", v, err)
	}
}

// A type error at load names the file, the line (offset by the expression's own line)
// and the expression.
func TestTypeErrorAtLoadHasFileLineAndExpression(t *testing.T) {
	env := testEnv(t)
	src := Source{File: "policy.yaml", Line: 12, Column: 11, Field: "rules[1].when"}
	for _, c := range []struct {
		expr, want string
		want2      Type
	}{
		{`requester.wrkload == "x"`, "policy.yaml:12:", Bool},
		{"requester.workload == \"x\" &&\n  scopes == 3", "policy.yaml:13", Bool},
		{`requester.workload`, "the result is string where bool is needed", Bool},
		{`scopes.size()`, "where list(string) is needed", StringList},
		{`requester.workload ==`, "policy.yaml:12", Bool},
	} {
		_, err := env.Compile(src, c.expr, c.want2)
		var ce *CompileError
		if !errors.As(err, &ce) {
			t.Fatalf("%q: got %v, want a CompileError", c.expr, err)
		}
		msg := err.Error()
		for _, w := range []string{c.want, "rules[1].when", "test place", c.expr[:8]} {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: error %q does not contain %q", c.expr, msg, w)
			}
		}
	}
}

func TestCostLimitRefuses(t *testing.T) {
	env := testEnv(t, WithCostLimit(50))
	p, err := env.Compile(Source{File: "p.yaml", Line: 3}, `scopes.map(a, scopes.map(b, scopes.map(c, a + b + c))).size() > 0`, Bool)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Bool(context.Background(), testVars())
	if errcode.CodeOf(err) != errcode.ConditionNotEvaluated || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("got %v, want condition_not_evaluated (incomplete)", err)
	}
	if !strings.Contains(err.Error(), "p.yaml:3") || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("error %q does not say where and why", err)
	}
}

func TestDeadlineRefuses(t *testing.T) {
	env := testEnv(t, WithCostLimit(1<<62), WithDeadline(time.Nanosecond))
	p, err := env.Compile(Source{}, `lists.range(100000).all(i, i >= 0)`, Bool)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Bool(context.Background(), testVars())
	if errcode.CodeOf(err) != errcode.ConditionNotEvaluated || errcode.KindOf(err) != errcode.Incomplete {
		t.Fatalf("got %v, want condition_not_evaluated (incomplete)", err)
	}
	// A cancelled caller stops an expression without a loop too.
	q, _ := env.Compile(Source{}, `true`, Bool)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.Bool(ctx, testVars()); errcode.CodeOf(err) != errcode.ConditionNotEvaluated {
		t.Fatalf("cancelled: got %v", err)
	}
}

func TestEvaluationErrorRefuses(t *testing.T) {
	env := testEnv(t)
	for _, expr := range []string{`claims.missing == "x"`, `int(claims.dept) > 0`, `claims.dept`} {
		p, err := env.Compile(Source{Field: "f"}, expr, Bool)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.Bool(context.Background(), testVars())
		if errcode.CodeOf(err) != errcode.ConditionError || errcode.KindOf(err) != errcode.Failed {
			t.Errorf("%s: got %v, want condition_error (failed)", expr, err)
		}
	}
	p, _ := env.Compile(Source{}, `claims.groups`, StringList)
	if _, err := p.Strings(context.Background(), Vars{"claims": map[string]any{"groups": []any{1}}}); errcode.CodeOf(err) != errcode.ConditionError {
		t.Errorf("a list of ints as strings: got %v", err)
	}
	if _, err := p.Strings(context.Background(), testVars()); err != nil {
		t.Errorf("a dyn list of strings: %v", err)
	}
}

func TestLazyVariable(t *testing.T) {
	env := testEnv(t)
	p, _ := env.Compile(Source{}, `requester.proof == "wpt" || claims.dept == "sales"`, Bool)
	called := 0
	vars := testVars()
	vars["claims"] = func() any { called++; return map[string]any{"dept": "sales"} }
	if ok, err := p.Bool(context.Background(), vars); !ok || err != nil || called != 1 {
		t.Fatalf("got %v %v, called %d", ok, err, called)
	}
}

func TestEnvRefusesTwoVariablesOfOneName(t *testing.T) {
	if _, err := NewEnv("x", []Var{Variable("a", String), Variable("a", Int)}); err == nil {
		t.Fatal("two variables named a accepted")
	}
}
