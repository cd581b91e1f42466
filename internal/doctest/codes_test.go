package doctest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every rejection carries a stable, documented error code: each constant of type
// errcode.Code must stand in docs/errors.md, written as `code`.
func TestEveryErrorCodeIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(root, "errcode", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var n int
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					code, _ := strconv.Unquote(lit.Value)
					n++
					if !strings.Contains(string(doc), "`"+code+"`") {
						t.Errorf("errcode.%s (%q) is not documented in docs/errors.md", vs.Names[i].Name, code)
					}
				}
			}
		}
	}
	if n < 50 {
		t.Fatalf("found only %d error codes in errcode: the parse missed them", n)
	}
}
