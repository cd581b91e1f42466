package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, relative to this package's directory.
const root = "../.."

// docFiles are the Markdown files whose links are checked: README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("no docs/*.md found")
	}
	return append(files, more...)
}

// line is one line of Markdown prose (not code), with its 1-based number.
type line struct {
	n    int
	text string
}

// block is one code block: fenced (```) or indented by four spaces.
type block struct {
	n     int
	lines []string
}

// split separates a Markdown text into prose lines and code blocks. An indented line
// starts a code block only after a blank line, so that indented continuation lines of
// list items stay prose.
func split(text string) (prose []line, code []block) {
	var (
		fenced   bool
		indented bool
		cur      block
		prevDone = true // previous line blank (or start of file)
	)
	flush := func() {
		if cur.lines != nil {
			code = append(code, cur)
		}
		cur = block{}
	}
	for i, l := range strings.Split(text, "\n") {
		n := i + 1
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case fenced:
			if strings.HasPrefix(trimmed, "```") {
				fenced = false
				flush()
			} else {
				cur.lines = append(cur.lines, l)
			}
		case strings.HasPrefix(trimmed, "```"):
			if indented {
				indented = false
				flush()
			}
			fenced = true
			cur = block{n: n, lines: []string{}}
		case indented && (strings.HasPrefix(l, "    ") || strings.TrimSpace(l) == ""):
			cur.lines = append(cur.lines, l)
		case !indented && prevDone && strings.HasPrefix(l, "    ") && strings.TrimSpace(l) != "":
			indented = true
			cur = block{n: n, lines: []string{l}}
		default:
			if indented {
				indented = false
				flush()
			}
			prose = append(prose, line{n, l})
		}
		prevDone = strings.TrimSpace(l) == ""
	}
	flush()
	return prose, code
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	mdLink   = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)
	heading  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// slug is the anchor GitHub gives a heading: lower case, markup and punctuation removed
// (letters, digits, '-' and '_' kept), spaces turned into '-'.
func slug(h string) string {
	h = mdLink.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors lists the heading anchors of a Markdown file, numbering repeated ones as
// GitHub does (x, x-1, x-2, ...).
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	prose, _ := split(string(data))
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose {
		m := heading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		s := slug(m[2])
		if k := seen[s]; k > 0 {
			out[s+"-"+strconv.Itoa(k)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestRelativeLinksResolve: every relative link in README.md and docs/*.md names a file
// or directory of the repository, and every #anchor a heading of the Markdown file it
// points into.
func TestRelativeLinksResolve(t *testing.T) {
	cache := map[string]map[string]bool{}
	links := 0
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		prose, _ := split(string(data))
		for _, l := range prose {
			text := codeSpan.ReplaceAllString(l.text, "")
			for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
				target := m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := filepath.Base(filepath.Dir(file)) + "/" + filepath.Base(file) + ":" + strconv.Itoa(l.n)
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s: link %q: %s does not exist", where, target, path)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s: link %q: an anchor into a file that is not Markdown", where, target)
					continue
				}
				a, ok := cache[dest]
				if !ok {
					a = anchors(t, dest)
					cache[dest] = a
				}
				if !a[anchor] {
					t.Errorf("%s: link %q: %s has no heading with anchor #%s", where, target, filepath.Base(dest), anchor)
				}
			}
		}
	}
	if links == 0 {
		t.Fatal("found no relative links at all: the parser is broken")
	}
}

// TestREADMEFirstBlock: the first code block of README is the first command a newcomer
// runs, and CI runs it verbatim.
func TestREADMEFirstBlock(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, code := split(string(data))
	if len(code) == 0 {
		t.Fatal("README.md has no code block")
	}
	got := strings.TrimSpace(strings.Join(code[0].lines, "\n"))
	if want := "go run ./cmd/dialogtrust dev"; got != want {
		t.Errorf("README.md's first code block (line %d) is %q, want %q", code[0].n, got, want)
	}
}

// keyFlag matches a command-line flag that names a file a private key is written to.
var keyFlag = regexp.MustCompile(`--(?:out|key-out)[ =](\S+)`)

// TestSnippetsKeepKeysOutOfTheWorkingTree: a snippet that writes a key writes it to a
// directory the reader chose ("$d/..." from mktemp -d, or an absolute path), never to
// a relative path that would land in the working tree.
func TestSnippetsKeepKeysOutOfTheWorkingTree(t *testing.T) {
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, code := split(string(data))
		for _, b := range code {
			for i, l := range b.lines {
				for _, m := range keyFlag.FindAllStringSubmatch(l, -1) {
					arg := strings.Trim(m[1], `"'[]`)
					if arg == "FILE" || strings.HasPrefix(arg, "$") || strings.HasPrefix(arg, "/") {
						continue
					}
					t.Errorf("%s:%d: %q writes a key into the working directory; use a directory such as \"$(mktemp -d)\"",
						filepath.Base(file), b.n+i, strings.TrimSpace(l))
				}
			}
		}
	}
}

// TestSlug: anchors as GitHub makes them for headings of this documentation.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"dialogtrust dev":                                  "dialogtrust-dev",
		"Subject tokens (oauth.md 1.4)":                    "subject-tokens-oauthmd-14",
		"1. Redis stopped during load — `TestRedisOutage`": "1-redis-stopped-during-load--testredisoutage",
		"The target, on a quiet machine (2026-11-30)":      "the-target-on-a-quiet-machine-2026-11-30",
		"Load: `dialogtrust bench tts`":                    "load-dialogtrust-bench-tts",
		"See [the guide](docs/operator.md) for store_type": "see-the-guide-for-store_type",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}
