package demo

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"strings"
	"unicode/utf8"
)

//go:embed report.html.tmpl
var reportTemplate string

// page is the HTML report's template. html/template escapes every string of the run
// for where it lands (text, attribute, SVG), so nothing a service or a peer put into a
// check's detail can become markup.
var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"join": strings.Join,
	"add":  func(a, b int) int { return a + b },
	"ms":   func(r Step) string { return roundStep(r.Duration).String() },
}).Parse(reportTemplate))

// WriteJSON writes r as one JSON document (`dialogtrust demo --json`).
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteHTML writes r as a self-contained HTML page (`dialogtrust demo --report FILE`):
// the topology as an inline SVG drawn from the hops, the parties, every hop, the
// glossary, every step with its checks marked passed, failed or skipped, and the
// summary. It loads nothing: no script, no style sheet, no image, no font, and its
// Content-Security-Policy forbids any.
func WriteHTML(w io.Writer, r *Report) error {
	return page.Execute(w, struct {
		R   *Report
		SVG diagram
	}{r, layout(r)})
}

// The diagram's geometry, in SVG user units.
const (
	svgColumn = 108 // width of one participant's column
	svgMargin = 20
	svgTop    = 70 // where the first hop's row starts
	svgRow    = 58 // height of one hop's row
	svgChar   = 6.6
)

// diagram is the topology as a sequence diagram: one column (lifeline) per
// participant, domain A's left of the dashed trust boundary and B's right of it, one
// arrow per hop in the order of the hops, labelled above with what the calls carried
// and below with what came back.
type diagram struct {
	Width, Height int
	Domains       []band
	Boundary      int // x of the trust boundary; 0 when one domain has no participant
	Columns       []column
	Rows          []row
}

type band struct {
	X, Width int
	Name     string
}

type column struct {
	X    int
	Name string
	B    bool // in domain B
}

type row struct {
	Index          int
	Hop            Hop
	Y, X1, X2      int
	LabelX         int
	Carries, Turns string
}

// layout places the participants and the hops.
func layout(r *Report) diagram {
	d := diagram{}
	x := map[string]int{}
	var second string
	if len(r.Domains) == 2 {
		second = r.Domains[1].Name
	}
	firstB := -1
	for i, p := range r.Participants {
		c := column{X: svgMargin + i*svgColumn + svgColumn/2, Name: p.Name, B: p.Domain == second}
		if c.B && firstB < 0 {
			firstB = i
		}
		x[p.Name] = c.X
		d.Columns = append(d.Columns, c)
	}
	n := len(r.Participants)
	d.Width = 2*svgMargin + n*svgColumn
	if firstB > 0 {
		d.Boundary = svgMargin + firstB*svgColumn
		d.Domains = []band{
			{X: svgMargin, Width: firstB * svgColumn, Name: "trust domain " + r.Domains[0].Name},
			{X: d.Boundary, Width: (n - firstB) * svgColumn, Name: "trust domain " + second},
		}
	}
	for i, h := range r.Hops {
		rw := row{Index: i, Hop: h, Y: svgTop + 30 + i*svgRow, X1: x[h.From], X2: x[h.To]}
		rw.LabelX = min(rw.X1, rw.X2) + 8
		labels := hopLabels(h)
		if len(h.Carries) > 0 {
			rw.Carries, rw.Turns = labels[0], labels[1]
		} else {
			rw.Turns = labels[0]
		}
		for _, l := range labels {
			d.Width = max(d.Width, rw.LabelX+int(float64(utf8.RuneCountInString(l))*svgChar)+svgMargin)
		}
		d.Rows = append(d.Rows, rw)
	}
	d.Height = svgTop + 30 + len(r.Hops)*svgRow
	return d
}
