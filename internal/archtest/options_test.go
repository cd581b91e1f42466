// The option vocabulary (issue 23 point 5): an option that sets a clock reads the same
// in every package, as jwx's options do: WithClock, taking func() time.Time, the type of
// time.Now and of a test clock's Now.

package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"strings"
	"testing"
)

// exportedFuncs calls f with each exported function without a receiver in the non-test
// Go files of the core module's packages (`go list`: the modules nested in it, with
// their own go.mod, are not among them).
func exportedFuncs(t *testing.T, f func(file string, fn *ast.FuncDecl)) {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}`, "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	for _, path := range strings.Fields(string(out)) {
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() {
				f(path, fn)
			}
		}
	}
}

// isNowFunc reports whether e is the type func() time.Time.
func isNowFunc(e ast.Expr) bool {
	ft, ok := e.(*ast.FuncType)
	if !ok || ft.Params.NumFields() != 0 || ft.Results.NumFields() != 1 {
		return false
	}
	sel, ok := ft.Results.List[0].Type.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "time" && sel.Sel.Name == "Time"
}

// TestOneClockOption (issue 23 point 5): every exported function that takes a clock
// alone and returns something (an option) is named WithClock, and every exported
// function named like a clock option takes func() time.Time. A SourceClock or
// IssuerClock beside a WithClock, or a WithClock taking another clock type, fails here.
func TestOneClockOption(t *testing.T) {
	seen := 0
	exportedFuncs(t, func(file string, fn *ast.FuncDecl) {
		params, results := fn.Type.Params, fn.Type.Results
		takesClockAlone := params.NumFields() == 1 && isNowFunc(params.List[0].Type)
		if results.NumFields() == 0 {
			return
		}
		namedLikeClock := strings.HasSuffix(fn.Name.Name, "Clock") && !strings.HasPrefix(fn.Name.Name, "New")
		switch {
		case takesClockAlone && fn.Name.Name != "WithClock":
			t.Errorf("%s: %s takes a clock alone: the option vocabulary names it WithClock", file, fn.Name.Name)
		case namedLikeClock && !takesClockAlone:
			t.Errorf("%s: %s is named like a clock option but does not take func() time.Time alone", file, fn.Name.Name)
		case takesClockAlone:
			seen++
		}
	})
	// The packages whose constructors keep time: dialog, handoff, httpsig, keys, store,
	// store/redisstore, txntoken, wit, wpt. Fewer means the walk missed them, and the
	// test would pass without looking.
	if seen < 9 {
		t.Fatalf("found %d WithClock options, want at least 9", seen)
	}
}
