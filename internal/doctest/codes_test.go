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
	pkgs, err := parser.ParseDir(fset, filepath.Join(root, "errcode"), func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, p := range pkgs {
		for _, f := range p.Files {
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
	}
	if n < 50 {
		t.Fatalf("found only %d error codes in errcode: the parse missed them", n)
	}
}
