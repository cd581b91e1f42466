package doctest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// filePath is a code span that names a file of the repository by its path:
// `cmd/internal/ttsservice/default.yaml`, `handoff/doc.go`.
var filePath = regexp.MustCompile("^`([A-Za-z0-9_.][A-Za-z0-9_./-]*/[A-Za-z0-9_.-]+\\.(?:md|go|mod|yaml|yml|json|txt|sh|Dockerfile))`$")

// mdPath is a Markdown file named by its path in a Go comment: docs/operator.md.
var mdPath = regexp.MustCompile(`(?:^|[\s(])([A-Za-z0-9_.][A-Za-z0-9_.-]*/[A-Za-z0-9_./-]*\.md)\b`)

// outside reports a path the repository does not hold by design: the specifications,
// which live beside the checkout (../shared/specs from the root, shared/specs in the
// packages' doc comments).
func outside(p string) bool {
	return strings.HasPrefix(p, "../shared/") || strings.HasPrefix(p, "shared/specs/")
}

// exists reports whether p names a file relative to the repository root or to dir.
func exists(dir, p string) bool {
	for _, base := range []string{root, dir} {
		if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(p))); err == nil {
			return true
		}
	}
	return false
}

// TestDocumentedPathsExist (issue 23 point 4): a file the documentation names by its
// path in a code span, or a Go comment names as a Markdown file (cmd/tts/doc.go cited
// an architecture note in a notes directory the repository does not have), must exist,
// relative to the repository root or to the naming file.
func TestDocumentedPathsExist(t *testing.T) {
	var checked int
	for _, file := range identDocFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		prose, _ := split(string(data))
		for _, l := range prose {
			for _, span := range codeSpan.FindAllString(l.text, -1) {
				m := filePath.FindStringSubmatch(span)
				if m == nil || outside(m[1]) {
					continue
				}
				checked++
				if !exists(filepath.Dir(file), m[1]) {
					t.Errorf("%s:%d: %s does not exist", filepath.ToSlash(rel), l.n, m[1])
				}
			}
		}
	}
	fset := token.NewFileSet()
	walkFiles(t, func(path string) error {
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, g := range f.Comments {
			for _, c := range g.List {
				for _, m := range mdPath.FindAllStringSubmatch(c.Text, -1) {
					if outside(m[1]) {
						continue
					}
					checked++
					if !exists(filepath.Dir(path), m[1]) {
						t.Errorf("%s:%d: %s does not exist", filepath.ToSlash(rel), fset.Position(c.Pos()).Line, m[1])
					}
				}
			}
		}
		return nil
	})
	if checked < 20 {
		t.Fatalf("checked only %d paths: the scan missed them", checked)
	}
	t.Logf("checked %d paths", checked)
}
