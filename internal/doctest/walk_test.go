package doctest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// The documentation walk: what a newcomer does with README's "Try it" and
// docs/proxy.md's "Quickstart", done as written. Each section's fenced code blocks are
// read from the Markdown itself, never from a copy, by this convention:
//
//   - ```sh: commands run with `sh -e` from the repository's root; each must exit 0.
//   - ```sh background: a command that keeps running (a server, `dialogtrust dev`),
//     started in a process group of its own, as a terminal would; it is ready once its
//     standard output shows what the output block after it shows. At the end of the
//     section each is stopped as Ctrl-C stops it, SIGINT to its process group (`go
//     run` ignores SIGINT; the program it runs does not), and every process of the group
//     must be gone within 30 seconds.
//   - ```output, right after a command's block: its standard output. A line `...`
//     stands for any number of lines, `...` within a line for any text; trailing
//     spaces and trailing blank lines do not count. A command without one may print
//     anything.
//
// Any other block in a walked section is an error, so that a command cannot silently
// drop out of the walk.

// walkSection is a walked section: the heading (its text, without the #s) in a
// Markdown file relative to the repository's root.
type walkSection struct{ file, heading string }

// walkedSections are what the docs walk follows, in order.
var walkedSections = []walkSection{
	{"README.md", "Try it"},
	{"docs/proxy.md", "Quickstart"},
}

// steps reads the section's commands from the checkout at dir.
func (sec walkSection) steps(dir string) ([]walkStep, error) {
	md, err := os.ReadFile(filepath.Join(dir, sec.file))
	if err != nil {
		return nil, err
	}
	fences, err := sectionFences(string(md), sec.heading)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sec.file, err)
	}
	return walkSteps(sec.file, fences)
}

// walkStep is one command block and what it must print.
type walkStep struct {
	where      string // file:line of the command block
	command    string
	background bool
	output     []string // the output block's lines; nil: none
}

// fence is one fenced block: its info string, first line number and lines.
type fence struct {
	info  string
	n     int
	lines []string
}

// sectionFences returns the fenced blocks of the section of md under the heading
// text, up to the next heading of the same or a higher level; an error when there is
// no such section or a fence is not closed.
func sectionFences(md, text string) ([]fence, error) {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	level := 0
	var out []fence
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimLeft(l, " ")
		if len(l)-len(trimmed) <= 3 && strings.HasPrefix(trimmed, "```") {
			f := fence{info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), n: i + 1, lines: []string{}}
			closed := false
			for i++; i < len(lines); i++ {
				if strings.HasPrefix(strings.TrimLeft(lines[i], " "), "```") {
					closed = true
					break
				}
				f.lines = append(f.lines, lines[i])
			}
			if !closed {
				return nil, fmt.Errorf("line %d: the fence is not closed", f.n)
			}
			if level > 0 {
				out = append(out, f)
			}
			continue
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		switch {
		case level == 0 && m[2] == text:
			level = len(m[1])
		case level > 0 && len(m[1]) <= level:
			return out, nil
		}
	}
	if level == 0 {
		return nil, fmt.Errorf("no section %q", text)
	}
	return out, nil
}

// walkSteps turns a section's fences into steps, by the convention above.
func walkSteps(file string, fences []fence) ([]walkStep, error) {
	var steps []walkStep
	for _, f := range fences {
		where := fmt.Sprintf("%s:%d", file, f.n)
		switch f.info {
		case "sh", "sh background":
			steps = append(steps, walkStep{where: where, command: strings.Join(f.lines, "\n"), background: f.info == "sh background"})
		case "output":
			if len(steps) == 0 || steps[len(steps)-1].output != nil {
				return nil, fmt.Errorf("%s: an output block that does not follow a command block", where)
			}
			steps[len(steps)-1].output = f.lines
		default:
			return nil, fmt.Errorf("%s: a block of %q in a walked section: use sh, sh background or output", where, f.info)
		}
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s: no command in the section", file)
	}
	return steps, nil
}

// lineMatches reports whether got matches the pattern line, where `...` stands for
// any text.
func lineMatches(pattern, got string) bool {
	parts := strings.Split(pattern, "...")
	if len(parts) == 1 {
		return pattern == got
	}
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	got = got[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(got, p)
		if i < 0 {
			return false
		}
		got = got[i+len(p):]
	}
	return len(got) >= len(last) && strings.HasSuffix(got, last)
}

// outputMatches reports whether the lines got match the pattern lines, a line `...`
// standing for any number of lines. Trailing spaces and trailing blank lines of
// either do not count.
func outputMatches(pattern, got []string) bool {
	pattern, got = normalize(pattern), normalize(got)
	// memo[i][j]: pattern[i:] against got[j:], 0 unknown, 1 yes, 2 no.
	memo := make([][]byte, len(pattern)+1)
	for i := range memo {
		memo[i] = make([]byte, len(got)+1)
	}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if memo[i][j] != 0 {
			return memo[i][j] == 1
		}
		var ok bool
		switch {
		case i == len(pattern):
			ok = j == len(got)
		case pattern[i] == "...":
			ok = match(i+1, j) || j < len(got) && match(i, j+1)
		default:
			ok = j < len(got) && lineMatches(pattern[i], got[j]) && match(i+1, j+1)
		}
		memo[i][j] = 2
		if ok {
			memo[i][j] = 1
		}
		return ok
	}
	return match(0, 0)
}

func normalize(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " \t\r")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// completeLines are the complete lines of b (a last one without its newline is not
// yet complete).
func completeLines(b string) []string {
	i := strings.LastIndexByte(b, '\n')
	if i < 0 {
		return nil
	}
	return strings.Split(b[:i], "\n")
}

// walkTimeouts bound the walk: a background command becoming ready (the first `go
// run` compiles for minutes), a command running, a background group stopping.
type walkTimeouts struct{ ready, run, stop time.Duration }

var defaultWalkTimeouts = walkTimeouts{ready: 15 * time.Minute, run: 5 * time.Minute, stop: 30 * time.Second}

// background is a running background step.
type background struct {
	step           walkStep
	cmd            *exec.Cmd
	stdout, stderr *testkit.SyncBuffer
	exited         chan struct{}
}

// tail is the last n lines of s, for a failure's report.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"[...]"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// walk runs steps in dir with env and stops the background ones at the end (in reverse
// order), even after a failure; log hears what is run. The error is the first failure:
// a command that fails, prints what its output block does not show, a background
// command that ends or is not ready in time, or a process group that does not stop on
// SIGINT.
func walk(ctx context.Context, dir string, env []string, steps []walkStep, to walkTimeouts, log io.Writer) (err error) {
	var bgs []*background
	defer func() {
		for i := len(bgs) - 1; i >= 0; i-- {
			if serr := stopBackground(bgs[i], to.stop); serr != nil && err == nil {
				err = serr
			}
		}
	}()
	for _, s := range steps {
		how := ""
		if s.background {
			how = "   (in the background)"
		}
		fmt.Fprintf(log, "%s: $ %s%s\n", s.where, s.command, how)
		cmd := exec.Command("sh", "-ec", s.command)
		cmd.Dir, cmd.Env = dir, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stdout, stderr := &testkit.SyncBuffer{}, &testkit.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("%s: %w", s.where, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if s.background {
			bg := &background{step: s, cmd: cmd, stdout: stdout, stderr: stderr, exited: exited}
			bgs = append(bgs, bg)
			if err := awaitOutput(ctx, bg, to.ready); err != nil {
				return err
			}
			continue
		}
		timer := time.NewTimer(to.run)
		select {
		case <-exited:
			timer.Stop()
		case <-timer.C:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group this walk started
			<-exited
			return fmt.Errorf("%s: %q did not finish within %s\nstdout:\n%s\nstderr:\n%s", s.where, s.command, to.run, tail(stdout.String(), 40), tail(stderr.String(), 40))
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			return ctx.Err()
		}
		// Whatever it left running in its group is stopped too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if !cmd.ProcessState.Success() {
			return fmt.Errorf("%s: %q failed: %v\nstdout:\n%s\nstderr:\n%s", s.where, s.command, cmd.ProcessState, tail(stdout.String(), 40), tail(stderr.String(), 40))
		}
		if s.output != nil && !outputMatches(s.output, strings.Split(stdout.String(), "\n")) {
			return fmt.Errorf("%s: %q printed what the docs do not show.\nThe docs show:\n%s\nIt printed:\n%s\nstderr:\n%s", s.where, s.command,
				strings.Join(s.output, "\n"), stdout.String(), tail(stderr.String(), 20))
		}
		fmt.Fprint(log, stdout.String())
	}
	return nil
}

// awaitOutput waits until bg's standard output so far shows what its output block
// shows (followed by anything), failing when bg ends first or not in time.
func awaitOutput(ctx context.Context, bg *background, timeout time.Duration) error {
	pattern := append(append([]string(nil), bg.step.output...), "...")
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if outputMatches(pattern, completeLines(bg.stdout.String())) {
			return nil
		}
		select {
		case <-bg.exited:
			// Its last words may have come with its end.
			if outputMatches(pattern, completeLines(bg.stdout.String())) {
				return nil
			}
			return fmt.Errorf("%s: %q ended (%v) before printing what the docs show:\n%s\nIt printed:\n%s\nstderr:\n%s", bg.step.where, bg.step.command,
				bg.cmd.ProcessState, strings.Join(bg.step.output, "\n"), bg.stdout.String(), tail(bg.stderr.String(), 40))
		case <-deadline.C:
			return fmt.Errorf("%s: %q did not print what the docs show within %s:\n%s\nIt printed:\n%s\nstderr:\n%s", bg.step.where, bg.step.command,
				timeout, strings.Join(bg.step.output, "\n"), bg.stdout.String(), tail(bg.stderr.String(), 40))
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stopBackground stops bg as Ctrl-C in its terminal would, SIGINT to its process
// group, and waits until no process of the group is left; after timeout it kills the
// group and fails.
func stopBackground(bg *background, timeout time.Duration) error {
	pgid := bg.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGINT) // the group this walk started
	deadline := time.Now().Add(timeout)
	<-waitOrTimeout(bg.exited, timeout)
	if !testkit.GroupGone(pgid, time.Until(deadline)) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-bg.exited
		return fmt.Errorf("%s: %q: processes of its group were still running %s after SIGINT (Ctrl-C)\nstderr:\n%s", bg.step.where, bg.step.command,
			timeout, tail(bg.stderr.String(), 20))
	}
	return nil
}

// waitOrTimeout is c, or a channel closed after d when c is not closed by then.
func waitOrTimeout(c <-chan struct{}, d time.Duration) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		defer close(out)
		select {
		case <-c:
		case <-time.After(d):
		}
	}()
	return out
}

// walkEnvVar turns the docs walk on: it clones the repository and builds the command,
// minutes on a cold cache, so `go test ./...` skips it and .ci/docs-walk sets it.
const walkEnvVar = "DIALOGTRUST_DOCS_WALK"

// TestDocsWalk (issue 24, acceptance): README's "Try it" and docs/proxy.md's
// "Quickstart", run exactly as written, from a clean clone of HEAD with nothing
// beside it; each documented command must succeed and print what the docs show; the
// commands write nothing into the working tree; whatever they start stops on Ctrl-C.
// Run by .ci/docs-walk (DIALOGTRUST_DOCS_WALK=1).
func TestDocsWalk(t *testing.T) {
	if os.Getenv(walkEnvVar) != "1" {
		t.Skip(walkEnvVar + "=1 runs the docs walk (.ci/docs-walk)")
	}
	clone := testkit.CloneHEAD(t, root, walkCloneParent(t))

	// The commands' per-user files (dev's) go to a directory of this test; the Go
	// build and module caches stay the shared ones.
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "XDG_CACHE_HOME" && k != "PWD" && k != walkEnvVar {
			env = append(env, kv)
		}
	}
	env = append(env, "XDG_CACHE_HOME="+t.TempDir(), "PWD="+clone)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	for _, sec := range walkedSections {
		steps, err := sec.steps(clone)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s, %q: %d commands", sec.file, sec.heading, len(steps))
		var log strings.Builder
		start := time.Now()
		err = walk(ctx, clone, env, steps, defaultWalkTimeouts, &log)
		t.Logf("%s\n%s, %q: %s", log.String(), sec.file, sec.heading, time.Since(start).Round(time.Second))
		if err != nil {
			t.Fatal(err)
		}
	}
	if st := testkit.Git(t, clone, "status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("the documented commands changed the working tree:\n%s", st)
	}
}

// walkCloneParent is the empty directory the walk clones into, the same one every
// time (<temp dir>/dialogtrust-docs-walk, emptied first and removed at the end): the
// go command's build cache keys the module's packages by their directory, so a walk
// after an earlier one compiles only what changed, instead of the whole module (about
// 5 minutes on a busy 2-core machine). A lock beside it keeps two walks apart.
func walkCloneParent(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "dialogtrust-docs-walk")
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		t.Fatalf("another docs walk holds %s: %v", lock.Name(), err)
	}
	clean := func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	clean()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		clean()
		lock.Close() // releases the lock
	})
	return dir
}
