// The option vocabulary (issue 23 point 5): an option that sets a clock reads the same
// in every package, as jwx's options do: WithClock, taking func() time.Time, the type of
// time.Now and of a test clock's Now.

package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exportedFuncs parses every non-test Go file of the core module (not the modules
// nested in it, which have their own go.mod) and calls f with each exported function
// that has no receiver.
func exportedFuncs(t *testing.T, f func(file string, fn *ast.FuncDecl)) {
	t.Helper()
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range file.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() {
				f(path, fn)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
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
