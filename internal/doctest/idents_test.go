package doctest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// goDecl is one exported top-level declaration of a package of this repository. For a
// type, members are its methods, its struct fields and its interface methods; bases are
// the types it stands for or embeds (an alias's target, a defined type's underlying
// named type, embedded fields and interfaces), whose members it has too.
type goDecl struct {
	isType  bool
	members map[string]bool
	bases   []typeRef
}

// typeRef names a type: pkg is the package name it is qualified with (empty for one of
// the declaring package), or a package of no interest when it is not this repository's.
type typeRef struct{ pkg, name string }

// goIndex maps a package name to its exported declarations. Packages of the same name
// (two directories both declaring package x) are merged: the docs write `x.Name`, and
// the name exists when either has it.
type goIndex map[string]map[string]*goDecl

// skipDir are directories that hold no package the docs can name.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "testdata" || name == "node_modules" || name == "vendor"
}

// walkFiles calls fn with the path of every file of the repository outside the
// directories skipDir names; an error of the walk or of fn fails the test.
func walkFiles(t *testing.T, fn func(path string) error) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		return fn(path)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// indexRepository parses every non-test Go file of the repository (the root module and
// the nested ones: deploy, interop, the SDK adapters) with go/parser and records the
// exported declarations of each package except main.
func indexRepository(t *testing.T) goIndex {
	t.Helper()
	fset := token.NewFileSet()
	idx := goIndex{}
	walkFiles(t, func(path string) error {
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name != "main" {
			idx.add(f)
		}
		return nil
	})
	return idx
}

// decl returns the declaration name of package pkg, made on first use.
func (idx goIndex) decl(pkg, name string) *goDecl {
	p := idx[pkg]
	if p == nil {
		p = map[string]*goDecl{}
		idx[pkg] = p
	}
	d := p[name]
	if d == nil {
		d = &goDecl{members: map[string]bool{}}
		p[name] = d
	}
	return d
}

func (idx goIndex) add(f *ast.File) {
	pkg := f.Name.Name
	if idx[pkg] == nil {
		idx[pkg] = map[string]*goDecl{}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				if d.Name.IsExported() {
					idx.decl(pkg, d.Name.Name)
				}
				continue
			}
			if recv := refOf(d.Recv.List[0].Type); recv != nil {
				td := idx.decl(pkg, recv.name)
				td.isType = true
				td.members[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							idx.decl(pkg, n.Name)
						}
					}
				case *ast.TypeSpec:
					td := idx.decl(pkg, s.Name.Name)
					td.isType = true
					idx.addType(td, s.Type)
				}
			}
		}
	}
}

// addType records the fields, interface methods and base types of a type expression.
func (idx goIndex) addType(td *goDecl, e ast.Expr) {
	switch e := e.(type) {
	case *ast.StructType:
		for _, fld := range e.Fields.List {
			if len(fld.Names) == 0 {
				if r := refOf(fld.Type); r != nil {
					td.members[r.name] = true // an embedded field is named by its type
					td.bases = append(td.bases, *r)
				}
			}
			for _, n := range fld.Names {
				td.members[n.Name] = true
			}
		}
	case *ast.InterfaceType:
		for _, m := range e.Methods.List {
			if len(m.Names) == 0 {
				if r := refOf(m.Type); r != nil {
					td.bases = append(td.bases, *r)
				}
			}
			for _, n := range m.Names {
				td.members[n.Name] = true
			}
		}
	default:
		if r := refOf(e); r != nil {
			td.bases = append(td.bases, *r)
		}
	}
}

// refOf names the type of x, T, *T, pkg.T or a generic instance of one; nil for any
// other type expression.
func refOf(e ast.Expr) *typeRef {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return &typeRef{name: x.Name}
		case *ast.SelectorExpr:
			if p, ok := x.X.(*ast.Ident); ok {
				return &typeRef{pkg: p.Name, name: x.Sel.Name}
			}
			return nil
		default:
			return nil
		}
	}
}

// hasMember reports whether type name of package pkg has member m (a method or field,
// its own or promoted). ok is false when that cannot be decided here: the type, or a
// type it stands for or embeds, is of another module (net/http's, go-redis's ...).
func (idx goIndex) hasMember(pkg, name, m string, seen map[typeRef]bool) (has, ok bool) {
	r := typeRef{pkg, name}
	if seen[r] {
		return false, true
	}
	seen[r] = true
	d := idx[pkg][name]
	if d == nil {
		return false, true // a predeclared type (string, int ...): no members
	}
	if d.members[m] {
		return true, true
	}
	ok = true
	for _, b := range d.bases {
		bp := b.pkg
		if bp == "" {
			bp = pkg
		}
		if _, ours := idx[bp]; !ours {
			ok = false
			continue
		}
		h, k := idx.hasMember(bp, b.name, m, seen)
		if h {
			return true, true
		}
		ok = ok && k
	}
	return false, ok
}

// check reports what is wrong with the qualified name parts (package, name and at most
// one member), or "" when it exists or cannot be checked.
func (idx goIndex) check(parts []string) string {
	pkg, name := parts[0], parts[1]
	d := idx[pkg][name]
	if d == nil {
		return "package " + pkg + " has no exported " + name
	}
	if len(parts) < 3 || !d.isType {
		return ""
	}
	if has, ok := idx.hasMember(pkg, name, parts[2], map[typeRef]bool{}); !has && ok {
		return pkg + "." + name + " has no method or field " + parts[2]
	}
	return ""
}

// dotted is a chain of Go identifiers joined by dots: x.Y, x.Y.Z.
var dotted = regexp.MustCompile(`[\pL_][\pL\pN_]*(?:\.[\pL_][\pL\pN_]*)+`)

// qualifiedNames returns the names in text that are qualified by a package of idx and
// name an exported identifier: `tts.Config`, `agent.Agent.Start`, `*txntoken.Claims`.
// A chain is taken whole, so `r.tts.X` (a field of a variable) is not read as package
// tts; file names (`oauth.md`, `tts.yaml`) are not exported identifiers, and a chain
// after a slash or hyphen is a path or host name (`docker/tts.Dockerfile`).
func (idx goIndex) qualifiedNames(text string) [][]string {
	var out [][]string
	for _, loc := range dotted.FindAllStringIndex(text, -1) {
		if loc[0] > 0 && strings.ContainsAny(text[loc[0]-1:loc[0]], "-/") {
			continue // a file or host name: deploy/docker/tts.Dockerfile, tts-b.Example
		}
		parts := strings.Split(text[loc[0]:loc[1]], ".")
		if _, ours := idx[parts[0]]; !ours {
			continue
		}
		if r := []rune(parts[1]); !unicode.IsUpper(r[0]) {
			continue
		}
		if len(parts) > 3 {
			parts = parts[:3]
		}
		out = append(out, parts)
	}
	return out
}

// identDocFiles are the Markdown files read for Go names: README.md, docs/*.md and the
// README of every package or module below the root.
func identDocFiles(t *testing.T) []string {
	t.Helper()
	files := docFiles(t)
	walkFiles(t, func(path string) error {
		if filepath.Base(path) == "README.md" && path != filepath.Join(root, "README.md") {
			files = append(files, path)
		}
		return nil
	})
	return files
}

// TestDocumentedGoNamesExist (issue 23 point 4): every Go identifier the documentation
// names as pkg.Name or pkg.Type.Member, in a code span of prose or in a go code block
// (fenced ```go, or indented, which is how the guides show Go), must exist in the
// package of that name of this repository: a removed or renamed API must not stay
// taught. Names of other packages (net/http ...) are not checked, nor members of types
// that embed or stand for another module's type.
func TestDocumentedGoNamesExist(t *testing.T) {
	idx := indexRepository(t)
	for _, want := range []string{"tts", "txntoken", "oauth", "agent", "dialog", "kit"} {
		if len(idx[want]) == 0 {
			t.Fatalf("package %s not found: the index of the repository is broken", want)
		}
	}
	var checked int
	var bad []string
	for _, file := range identDocFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		rel = filepath.ToSlash(rel)
		report := func(n int, text string) {
			for _, parts := range idx.qualifiedNames(text) {
				checked++
				if why := idx.check(parts); why != "" {
					bad = append(bad, rel+":"+strconv.Itoa(n)+": "+strings.Join(parts, ".")+": "+why)
				}
			}
		}
		lines := strings.Split(string(data), "\n")
		prose, code := split(string(data))
		for _, l := range prose {
			for _, span := range codeSpan.FindAllString(l.text, -1) {
				report(l.n, span)
			}
		}
		for _, b := range code {
			fence := strings.TrimSpace(lines[b.n-1])
			if strings.HasPrefix(fence, "```") && fence != "```go" {
				continue // shell, YAML, JSON
			}
			first := b.n
			if strings.HasPrefix(fence, "```") {
				first++
			}
			for i, l := range b.lines {
				report(first+i, l)
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	if checked < 100 {
		t.Fatalf("checked only %d qualified Go names in the docs: the scan missed them", checked)
	}
	t.Logf("checked %d qualified Go names", checked)
}

// TestQualifiedNameCheck: the check itself, on declarations parsed from source, so
// that it is known to fail for each kind of stale name.
func TestQualifiedNameCheck(t *testing.T) {
	src := map[string]string{
		"a": `package a
import "net/http"
type T struct{ Field int; B; *http.Client }
type B struct{ Inner string }
func (B) Promoted() {}
func (*T) Method() {}
type Alias = T
type G[X any] struct{}
func (G[X]) Gen() {}
type I interface{ Do(); J }
type J interface{ Undo() }
func F() {}
const C = 1
var V = 2`,
	}
	idx := goIndex{}
	for name, s := range src {
		f, err := parser.ParseFile(token.NewFileSet(), name+".go", s, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		idx.add(f)
	}
	for text, want := range map[string]string{
		"`a.T`": "", "`a.F()`": "", "`a.C`": "", "`*a.V`": "",
		"`a.T.Field`": "", "`a.T.Method`": "", "`a.T.Inner`": "", "`a.T.Promoted`": "",
		"`a.Alias.Method`": "", "`a.G.Gen`": "", "`a.I.Do`": "", "`a.I.Undo`": "",
		"`a.T.Do`":       "", // T embeds *http.Client: not decidable here
		"`a.Missing`":    "package a has no exported Missing",
		"`a.B.Method`":   "a.B has no method or field Method",
		"`a.I.Method`":   "a.I has no method or field Method",
		"`a.F.Anything`": "",
	} {
		names := idx.qualifiedNames(text)
		if len(names) != 1 {
			t.Errorf("%s: found %d names, want 1", text, len(names))
			continue
		}
		if got := idx.check(names[0]); got != want {
			t.Errorf("%s: %q, want %q", text, got, want)
		}
	}
	for _, text := range []string{"`oauth.md`", "`x.a.T`", "`net/http.Client`", "`tts.yaml`", "`docker/a.Dockerfile`", "`x-a.T`", "`http.Client`"} {
		if names := idx.qualifiedNames(text); len(names) != 0 {
			t.Errorf("%s: read %v as a name of this repository", text, names)
		}
	}
}
