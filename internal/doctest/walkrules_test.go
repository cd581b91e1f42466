package doctest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOutputMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, got string
		want         bool
	}{
		{"a\nb", "a\nb\n", true},
		{"a\nb", "a\nc", false},
		{"a\nb", "a\nb\nc", false},
		{"a\n...\nc", "a\nb\nb2\nc", true},
		{"a\n...\nc", "a\nc", true},
		{"...", "", true},
		{"x ... y", "x 1 2 y", true},
		{"x ... y", "x 1 2 z", false},
		{"Ready in ...s. Next", "Ready in 0.1s. Next", true},
		{"http://127.0.0.1:...", "http://127.0.0.1:4242", true},
		{"removes ....", "removes /a/b.", true},
		{"removes ....", "removes /a/b", false},
		{"a...a", "a", false},
		{"a  ", "a", true},
		{"a\n\n", "a", true},
	} {
		if got := outputMatches(strings.Split(c.pattern, "\n"), strings.Split(c.got, "\n")); got != c.want {
			t.Errorf("%q against %q: %v, want %v", c.pattern, c.got, got, c.want)
		}
	}
}

func TestSectionSteps(t *testing.T) {
	md := "# T\n\n## Try it\n\nRun:\n\n```sh background\nserve\n```\n\nIt prints:\n\n```output\nready\n```\n\n" +
		"### Then\n\n```sh\nask\n```\n\n## Other\n\n```sh\nnot walked\n```\n"
	fences, err := sectionFences(md, "Try it")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := walkSteps("T.md", fences)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || !steps[0].background || steps[0].command != "serve" || strings.Join(steps[0].output, "|") != "ready" ||
		steps[1].background || steps[1].command != "ask" || steps[1].output != nil || steps[0].where != "T.md:7" {
		t.Fatalf("steps %+v", steps)
	}
	for name, md := range map[string]string{
		"no section":       "# T\n\n```sh\nx\n```\n",
		"unclosed":         "## Try it\n\n```sh\nx\n",
		"other language":   "## Try it\n\n```bash\nx\n```\n",
		"output first":     "## Try it\n\n```output\nx\n```\n",
		"two outputs":      "## Try it\n\n```sh\nx\n```\n```output\na\n```\n```output\nb\n```\n",
		"no command":       "## Try it\n\ntext\n",
		"untagged in walk": "## Try it\n\n```sh\nx\n```\n\n```\ny\n```\n",
	} {
		fences, err := sectionFences(md, "Try it")
		if err == nil {
			_, err = walkSteps("T.md", fences)
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestWalkedSectionsFollowTheConvention: the sections the docs walk follows parse into
// commands by its convention, and each background command has an output block to wait
// for, so that .ci/docs-walk cannot find them broken only when it runs.
func TestWalkedSectionsFollowTheConvention(t *testing.T) {
	for _, sec := range walkedSections {
		steps, err := sec.steps(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			if s.background && len(normalize(s.output)) == 0 {
				t.Errorf("%s: a background command without an output block to wait for", s.where)
			}
		}
	}
}

// fastWalk are timeouts for the walks of these tests, whose commands are instant.
var fastWalk = walkTimeouts{ready: 10 * time.Second, run: 10 * time.Second, stop: 2 * time.Second}

// TestWalkFailsWhenTheDocsAreWrong (issue 24, acceptance): the walk fails when a
// documented command fails, prints what its output block does not show, a background
// command ends before printing what its block shows, or its processes do not stop on
// Ctrl-C; it passes when each does what the docs show, and stops the background
// commands' whole process groups.
func TestWalkFailsWhenTheDocsAreWrong(t *testing.T) {
	dir := t.TempDir()
	env := os.Environ()
	run := func(steps ...walkStep) error {
		return walk(context.Background(), dir, env, steps, fastWalk, io.Discard)
	}
	pidFile := filepath.Join(dir, "pid")
	good := []walkStep{
		{where: "server", command: "sh -c 'echo $$ > pid; echo listening on 1; exec sleep 60'", background: true, output: []string{"listening on ..."}},
		{where: "client", command: "echo asked; echo answered 42", output: []string{"asked", "answered ..."}},
	}
	if err := run(good...); err != nil {
		t.Fatalf("a walk of commands that do what the docs show: %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for _, ch := range strings.TrimSpace(string(b)) {
		pid = pid*10 + int(ch-'0')
	}
	if syscall.Kill(pid, 0) != syscall.ESRCH {
		t.Errorf("the background command's process %d is still running", pid)
	}
	for name, c := range map[string]struct {
		steps []walkStep
		want  string
	}{
		"command fails":    {[]walkStep{{where: "x.md:1", command: "echo partial; exit 3"}}, "failed"},
		"first line fails": {[]walkStep{{where: "x.md:1", command: "false\necho fine"}}, "failed"},
		"other output":     {[]walkStep{{where: "x.md:1", command: "echo answered 42", output: []string{"answered 43"}}}, "the docs do not show"},
		"more output":      {[]walkStep{{where: "x.md:1", command: "echo a; echo b", output: []string{"a"}}}, "the docs do not show"},
		"server ends":      {[]walkStep{{where: "x.md:1", command: "echo starting", background: true, output: []string{"listening"}}}, "ended"},
		"ignores Ctrl-C": {[]walkStep{{where: "x.md:1", command: "trap '' INT; echo listening; while :; do sleep 0.1; done", background: true,
			output: []string{"listening"}}}, "still running"},
		"server then a failing client": {[]walkStep{good[0], {where: "x.md:9", command: "exit 1"}}, "x.md:9"},
	} {
		err := run(c.steps...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}
