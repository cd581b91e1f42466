package archtest

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The layering of the whole module, as docs/library.md's "Architecture" table draws it,
// is the rule: TestWholeLayering reads the table itself, so the drawing and the rule
// cannot drift apart. Each row is a layer; its packages column names every package of
// the layer (a name ending in "/..." names a subtree); its "beside" column states which
// packages of the same layer a package may import ("`a` → `b`, `c`; `d` → `e`").
// A package may import any package of a lower layer, and one beside it only where the
// row says so; never one above.

// layerTable is the Architecture table as the test reads it.
type layerTable struct {
	rows []layerRow
}

type layerRow struct {
	layer    int
	line     int
	packages []string            // module-relative paths; "x/..." a subtree
	beside   map[string][]string // importer -> the packages of its layer it may import
}

var (
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	layerCell  = regexp.MustCompile(`^(\d+)\. `)
	tableStart = "## Architecture"
)

// readLayerTable parses the table of docs/library.md's Architecture section.
func readLayerTable(path string) (*layerTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		t       layerTable
		in      bool
		header  []string
		lineNum int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNum++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == tableStart:
			in = true
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "## "):
			in = false
			continue
		case !strings.HasPrefix(line, "|"):
			if len(t.rows) > 0 {
				in = false
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if header == nil {
			header = cells
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		col := func(name string) string {
			for i, h := range header {
				if h == name && i < len(cells) {
					return cells[i]
				}
			}
			return ""
		}
		m := layerCell.FindStringSubmatch(col("layer"))
		if m == nil {
			return nil, fmt.Errorf("%s:%d: the layer cell %q does not start with its number", path, lineNum, col("layer"))
		}
		n, _ := strconv.Atoi(m[1])
		row := layerRow{layer: n, line: lineNum, beside: map[string][]string{}}
		for _, s := range codeSpan.FindAllStringSubmatch(col("packages"), -1) {
			row.packages = append(row.packages, s[1])
		}
		for _, stmt := range strings.Split(col("beside it"), ";") {
			from, to, ok := strings.Cut(stmt, "→")
			if !ok {
				if strings.TrimSpace(stmt) != "" && strings.TrimSpace(stmt) != "none" {
					return nil, fmt.Errorf("%s:%d: %q is not \"`a` → `b`, `c`\"", path, lineNum, stmt)
				}
				continue
			}
			var targets []string
			for _, s := range codeSpan.FindAllStringSubmatch(to, -1) {
				targets = append(targets, s[1])
			}
			for _, s := range codeSpan.FindAllStringSubmatch(from, -1) {
				row.beside[s[1]] = append(row.beside[s[1]], targets...)
			}
		}
		t.rows = append(t.rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.rows) == 0 {
		return nil, fmt.Errorf("%s: no Architecture table", path)
	}
	return &t, nil
}

// layerOf returns the row of the module-relative package rel: the row naming it
// exactly, else the one whose subtree holding it is the longest.
func (t *layerTable) layerOf(rel string) (*layerRow, bool) {
	var best *layerRow
	bestLen := -1
	for i := range t.rows {
		for _, p := range t.rows[i].packages {
			if p == rel {
				return &t.rows[i], true
			}
			if sub, ok := strings.CutSuffix(p, "/..."); ok && (rel == sub || strings.HasPrefix(rel, sub+"/")) && len(sub) > bestLen {
				best, bestLen = &t.rows[i], len(sub)
			}
		}
	}
	return best, best != nil
}

// allowed reports whether a package of row may import imp, a package of the same row,
// by a statement of the row (its importer named exactly or by a subtree).
func (r *layerRow) allowed(importer, imp string) bool {
	for from, tos := range r.beside {
		if !matches(from, importer) {
			continue
		}
		for _, to := range tos {
			if matches(to, imp) {
				return true
			}
		}
	}
	return false
}

func matches(pattern, rel string) bool {
	if sub, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == sub || strings.HasPrefix(rel, sub+"/")
	}
	return pattern == rel
}

// TestWholeLayering: every package of the module is in one layer of the table, and
// every import goes to a lower layer or to a package beside it that the table names;
// every statement of the table holds for a real import, so the drawing shows no edge
// that is not there.
func TestWholeLayering(t *testing.T) {
	tab, err := readLayerTable("../../docs/library.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range checkLayering(tab, list(t, "./...")) {
		t.Error(e)
	}
}

// checkLayering returns every break of the table's rule in pkgs.
func checkLayering(tab *layerTable, pkgs []pkg) []string {
	var errs []string
	errorf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	used := map[string]bool{} // "row:from→to" statements a real import used
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		row, ok := tab.layerOf(rel)
		if !ok {
			errorf("%s is in no layer of docs/library.md's Architecture table", rel)
			continue
		}
		for _, imp := range p.Imports {
			irel, ok := relative(imp)
			if !ok {
				continue
			}
			irow, ok := tab.layerOf(irel)
			switch {
			case !ok:
				continue // reported as a package of its own
			case irow.layer < row.layer:
			case irow.layer > row.layer:
				errorf("%s (layer %d) imports %s of layer %d, above it", rel, row.layer, irel, irow.layer)
			case irow != row:
				errorf("%s imports %s: both in layer %d, on two rows", rel, irel, row.layer)
			case row.allowed(rel, irel):
				for from, tos := range row.beside {
					for _, to := range tos {
						if matches(from, rel) && matches(to, irel) {
							used[fmt.Sprintf("%d:%s→%s", row.line, from, to)] = true
						}
					}
				}
			default:
				errorf("%s imports %s beside it in layer %d, which docs/library.md (line %d) does not state", rel, irel, row.layer, row.line)
			}
		}
	}
	for _, row := range tab.rows {
		for from, tos := range row.beside {
			for _, to := range tos {
				if !used[fmt.Sprintf("%d:%s→%s", row.line, from, to)] {
					errorf("docs/library.md:%d states %s → %s, which no package imports", row.line, from, to)
				}
			}
		}
	}
	// Every named package exists: a row naming one that is gone draws a stale picture.
	var rels []string
	for _, p := range pkgs {
		if rel, ok := relative(p.ImportPath); ok {
			rels = append(rels, rel)
		}
	}
	for _, row := range tab.rows {
		for _, name := range row.packages {
			if !slices.ContainsFunc(rels, func(rel string) bool { return matches(name, rel) }) {
				errorf("docs/library.md:%d names %s, which is no package of the module", row.line, name)
			}
		}
	}
	return errs
}

func relative(importPath string) (string, bool) {
	if importPath == module {
		return ".", true
	}
	return strings.CutPrefix(importPath, module+"/")
}

// TestWholeLayeringFailsOnBreaks: the rule catches an import above, an unstated one
// beside, a package in no layer and a stated edge no import uses.
func TestWholeLayeringFailsOnBreaks(t *testing.T) {
	tab := &layerTable{rows: []layerRow{
		{layer: 0, line: 1, packages: []string{"errcode"}, beside: map[string][]string{}},
		{layer: 1, line: 2, packages: []string{"wit", "wpt", "cmd/..."}, beside: map[string][]string{"wpt": {"wit"}, "cmd/...": {"wpt"}}},
	}}
	p := func(path string, imps ...string) pkg {
		q := pkg{ImportPath: module + "/" + path}
		for _, i := range imps {
			q.Imports = append(q.Imports, module+"/"+i)
		}
		return q
	}
	for _, c := range []struct {
		name string
		pkgs []pkg
		want int
	}{
		{"holds", []pkg{p("errcode"), p("wit", "errcode"), p("wpt", "wit", "errcode"), p("cmd/x", "wpt")}, 0},
		{"above", []pkg{p("errcode", "wit"), p("wit"), p("wpt", "wit"), p("cmd/x", "wpt")}, 1},
		{"beside, unstated", []pkg{p("errcode"), p("wit", "wpt"), p("wpt", "wit"), p("cmd/x", "wpt")}, 1},
		{"in no layer", []pkg{p("errcode"), p("wit"), p("wpt", "wit"), p("cmd/x", "wpt"), p("other")}, 1},
		{"stated, unused", []pkg{p("errcode"), p("wit"), p("wpt"), p("cmd/x", "wpt")}, 1},
		{"named, gone", []pkg{p("wit"), p("wpt", "wit"), p("cmd/x", "wpt")}, 1},
	} {
		if errs := checkLayering(tab, c.pkgs); len(errs) != c.want {
			t.Errorf("%s: %d errors %q, want %d", c.name, len(errs), errs, c.want)
		}
	}
}
