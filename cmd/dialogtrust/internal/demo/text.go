package demo

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The picture's two columns, in characters: domain A left of the boundary, domain B
// right of it; with the margins the picture fits 80 columns.
const (
	colA = 38
	colB = 38
)

// WriteText writes r as the text `dialogtrust demo` prints: the title, the picture of
// the topology drawn from the run's calls, the glossary, every step with its checks,
// the summary, and last the counts line ("38 passed, 0 failed").
func WriteText(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, r.Title)
	writePicture(bw, r)
	writeGlossary(bw, r)
	for _, st := range r.Steps {
		fmt.Fprintf(bw, "\n[%d/%d] %s\n", st.N, steps, st.Title)
		for _, in := range st.Info {
			fmt.Fprintf(bw, "        %s\n", in)
		}
		for _, c := range r.StepChecks(st.N) {
			switch c.Result {
			case Passed:
				fmt.Fprintf(bw, "   ok   %s\n", c.Name)
			case Skipped:
				fmt.Fprintf(bw, "  skip  %s: %s\n", c.Name, c.Detail)
			default:
				fmt.Fprintf(bw, "  FAIL  %s%s\n", c.Name, failure(c))
			}
		}
		fmt.Fprintf(bw, "        (step %d took %s)\n", st.N, roundStep(st.Duration))
	}
	if r.Error != "" {
		fmt.Fprintf(bw, "\nThe run stopped: %s\n", r.Error)
	}
	fmt.Fprintln(bw, "\nWhat this run proved:")
	for _, s := range r.Summary {
		writeWrapped(bw, "    ", "- "+s, 78)
	}
	fmt.Fprintf(bw, "\n%s\n", r.Counts())
	return bw.Flush()
}

func failure(c Check) string {
	var s string
	if c.Code != "" {
		s += " [" + c.Code + "]"
	}
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}

// roundStep rounds a step's time for printing: a whole step takes a few milliseconds
// on loopback, so to 10µs (to 1ms from a second on).
func roundStep(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// writePicture draws who called whom: domain A's parties left of the boundary, domain
// B's right of it, one arrow per Hop (an arrow across the boundary crosses it), and
// under each arrow what its calls carried (→) and what came back (←).
func writePicture(w io.Writer, r *Report) {
	fmt.Fprintln(w, "\nWho called whom in this run (every arrow is calls the demo's workloads made):")
	if len(r.Domains) < 2 {
		fmt.Fprintln(w, "  no call was made: the run stopped before the trust domains were up")
		return
	}
	left := r.Domains[0].Name
	fmt.Fprintf(w, "\n  %s┃ %s\n", pad("trust domain "+r.Domains[0].Name, colA), "trust domain "+r.Domains[1].Name)
	fmt.Fprintf(w, "  %s╂%s\n", strings.Repeat("─", colA), strings.Repeat("─", colB))
	for _, h := range mergeSenders(r.Hops) {
		fromLeft, toLeft := h.FromDomain == left, h.ToDomain == left
		var arrow string
		switch {
		case fromLeft && toLeft:
			arrow = pad(h.From+" ──▶ "+h.To, colA) + "┃"
		case !fromLeft && !toLeft:
			arrow = pad("", colA) + "┃ " + h.From + " ──▶ " + h.To
		case fromLeft:
			arrow = h.From + " " + strings.Repeat("─", max(1, colA-utf8.RuneCountInString(h.From)-1)) + "╂──▶ " + h.To
		default:
			arrow = h.To + " ◀" + strings.Repeat("─", max(1, colA-utf8.RuneCountInString(h.To)-2)) + "╂── " + h.From
		}
		fmt.Fprintf(w, "  %s\n", arrow)
		// The labels go on domain A's side of an arrow inside domain A, else on B's.
		for _, l := range hopLabels(h) {
			if fromLeft && toLeft {
				for _, part := range wrap(l, colA-5) {
					fmt.Fprintf(w, "  %s┃\n", pad("    "+part, colA))
				}
			} else {
				for _, part := range wrap(l, colB-4) {
					fmt.Fprintf(w, "  %s┃   %s\n", pad("", colA), part)
				}
			}
		}
	}
	fmt.Fprintln(w, "\nParties:")
	for _, p := range r.Participants {
		writeWrapped(w, "      ", fmt.Sprintf("%s (%s, %s): %s", p.Name, p.Domain, p.ID, p.Role), 78)
	}
}

// hopLabels are the lines under a hop's arrow: what the calls carried (→), what came
// back (←) with how many calls in which steps, and how many were refused.
func hopLabels(h Hop) []string {
	var l []string
	if len(h.Carries) > 0 {
		l = append(l, "→ "+strings.Join(h.Carries, ", "))
	}
	steps := make([]string, len(h.Steps))
	for i, s := range h.Steps {
		steps[i] = fmt.Sprint(s)
	}
	calls := fmt.Sprintf("(%d call", h.Requests)
	if h.Requests != 1 {
		calls += "s"
	}
	calls += ", step " + strings.Join(steps, ", ")
	if h.Refused > 0 {
		calls += fmt.Sprintf("; %d REFUSED", h.Refused)
	}
	calls += ")"
	if len(h.Returns) > 0 {
		calls = "← " + strings.Join(h.Returns, ", ") + " " + calls
	}
	return append(l, calls)
}

// mergeSenders draws hops that differ only by their sender as one arrow ("A1, A2,
// tool ──▶ WIT issuer A"), to keep the picture short; the report keeps them apart.
func mergeSenders(hs []Hop) []Hop {
	var out []Hop
	for _, h := range hs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.To == h.To && last.FromDomain == h.FromDomain && last.ToDomain == h.ToDomain && h.Refused == 0 && last.Refused == 0 &&
				slices.Equal(last.Carries, h.Carries) && slices.Equal(last.Returns, h.Returns) && slices.Equal(last.Steps, h.Steps) {
				last.From += ", " + h.From
				last.Requests += h.Requests
				continue
			}
		}
		out = append(out, h)
	}
	return out
}

func writeGlossary(w io.Writer, r *Report) {
	fmt.Fprintln(w, "\nTerms:")
	for _, t := range r.Glossary {
		writeWrapped(w, "      ", t.Term+": "+t.Meaning, 78)
	}
}

// writeWrapped writes s wrapped at width: its first line after two spaces, the others
// after indent.
func writeWrapped(w io.Writer, indent, s string, width int) {
	for i, l := range wrap(s, width-utf8.RuneCountInString(indent)) {
		if i == 0 {
			fmt.Fprintf(w, "  %s\n", l)
		} else {
			fmt.Fprintf(w, "%s%s\n", indent, l)
		}
	}
}

// wrap breaks s into lines of at most width characters at spaces (a longer word
// stays whole).
func wrap(s string, width int) []string {
	var lines []string
	var cur string
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = word
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(word) > width:
			lines = append(lines, cur)
			cur = word
		default:
			cur += " " + word
		}
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

func pad(s string, n int) string {
	if c := utf8.RuneCountInString(s); c < n {
		return s + strings.Repeat(" ", n-c)
	}
	return s
}
