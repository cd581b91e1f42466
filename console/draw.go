package console

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The picture is a sequence diagram, drawn on the server: one column per workload (its
// name on top), one arrow per record, top to bottom in the trail's order, from the
// caller to what it called (a token's audience, a receiver), labelled with what was
// decided. Refusals are red and carry their code.
const (
	colWidth  = 210
	marginX   = 20
	headerH   = 64
	rowHeight = 40
	labelMax  = 40 // runes of a name or label drawn; the whole is in its <title>
)

// Picture is the SVG's layout.
type Picture struct {
	Width, Height int
	Nodes         []Node
	Edges         []Edge
}

// Node is one workload's column.
type Node struct {
	Name, Label, Domain string
	X, BoxX, BoxW       int
	LineBottom          int
}

// Edge is one record's arrow.
type Edge struct {
	N              int
	From, To       string
	X1, X2, Y      int
	LabelX, LabelY int
	Label, Title   string
	Class          string
	Self           bool
	LoopPath       string
}

// draw lays out rows (revocation records are listed, not drawn).
func draw(rows []Row) Picture {
	var names []string
	col := map[string]int{}
	const others = "(other workloads)"
	place := func(n string) int {
		if i, ok := col[n]; ok {
			return i
		}
		if len(names) >= maxNodes-1 {
			if i, ok := col[others]; ok {
				col[n] = i
				return i
			}
			names = append(names, others)
			col[others] = len(names) - 1
			col[n] = len(names) - 1
			return col[n]
		}
		names = append(names, n)
		col[n] = len(names) - 1
		return col[n]
	}
	var p Picture
	y := headerH + rowHeight/2
	for _, r := range rows {
		if r.Revocation {
			continue
		}
		from := place(r.From)
		for _, to := range r.To {
			t := place(to)
			e := Edge{N: r.N, From: r.From, To: to, X1: x(from), X2: x(t), Y: y, Class: r.Decision, Self: from == t}
			e.Label, e.Title = edgeLabel(r)
			e.LabelX, e.LabelY = (e.X1+e.X2)/2, y-6
			if e.Self {
				e.LoopPath = fmt.Sprintf("M %d %d h 40 v 14 h -36", e.X1, y-7)
				e.LabelX = e.X1 + 46
				e.LabelY = y + 4
			}
			p.Edges = append(p.Edges, e)
			y += rowHeight
		}
	}
	p.Height = y + 10
	for i, n := range names {
		cx := x(i)
		p.Nodes = append(p.Nodes, Node{Name: n, Label: cut(n, labelMax/2+8), Domain: cut(domainOf(n), labelMax/2+8), X: cx,
			BoxX: cx - colWidth/2 + 8, BoxW: colWidth - 16, LineBottom: p.Height - 4})
	}
	p.Width = 2*marginX + max(1, len(names))*colWidth
	return p
}

func x(col int) int { return marginX + col*colWidth + colWidth/2 }

// edgeLabel is what an arrow says, short and whole.
func edgeLabel(r Row) (label, title string) {
	var parts []string
	parts = append(parts, r.Decision)
	if r.Code != "" {
		parts = append(parts, r.Code)
	}
	if r.Op != "" {
		parts = append(parts, r.Op)
	} else if len(r.Scopes) > 0 {
		parts = append(parts, strings.Join(r.Scopes, " "))
	}
	if r.Hop != "" {
		parts = append(parts, "hop "+r.Hop)
	}
	if r.Issued != "" {
		parts = append(parts, "token "+r.Issued+"…")
	}
	whole := fmt.Sprintf("#%d %s: %s → %s, %s", r.N, r.Handler, r.From, strings.Join(r.To, ", "), strings.Join(parts, ", "))
	return cut(strings.Join(parts, " · "), labelMax+10), cut(whole, 512)
}

// show makes s safe to read: control, format (bidirectional overrides, zero-width) and
// line/paragraph separator characters are written as \u escapes, so a name cannot
// reorder or hide what the operator reads. (HTML escaping is html/template's.)
func show(s string) string {
	if !strings.ContainsFunc(s, hidden) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if hidden(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hidden(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// cut is show(s), at most n runes (an ellipsis ends what was cut).
func cut(s string, n int) string {
	s = show(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}
