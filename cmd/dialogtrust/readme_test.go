package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// listItem starts a Markdown list item.
var listItem = regexp.MustCompile(`^\s*([-*+]|[0-9]+[.)])\s`)

// firstCodeBlock is the first code block of a Markdown document: fenced (``` or ~~~,
// with an info string such as sh or not) or indented by four spaces or a tab after a
// blank line; ok is false when there is none. An indented block's lines lose their
// indent; trailing blank lines are dropped.
func firstCodeBlock(md string) (block string, ok bool) {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	prevBlank, inList := true, false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimLeft(l, " ")
		if len(l)-len(trimmed) <= 3 && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			marker := trimmed[:3]
			var body []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimLeft(lines[i], " "), marker); i++ {
				body = append(body, lines[i])
			}
			return strings.Join(body, "\n"), true
		}
		indented := strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t")
		// Indented text right after a list item is the item's, not code.
		if prevBlank && !inList && indented && strings.TrimSpace(l) != "" {
			var body []string
			for ; i < len(lines); i++ {
				l := lines[i]
				switch {
				case strings.TrimSpace(l) == "":
					body = append(body, "")
				case strings.HasPrefix(l, "    "):
					body = append(body, l[4:])
				case strings.HasPrefix(l, "\t"):
					body = append(body, l[1:])
				default:
					i = len(lines)
					continue
				}
			}
			for len(body) > 0 && body[len(body)-1] == "" {
				body = body[:len(body)-1]
			}
			return strings.Join(body, "\n"), true
		}
		if strings.TrimSpace(l) != "" {
			inList = listItem.MatchString(l) || (inList && indented)
		}
		prevBlank = strings.TrimSpace(l) == ""
	}
	return "", false
}

func TestFirstCodeBlock(t *testing.T) {
	for name, c := range map[string]struct{ md, want string }{
		"fenced sh":         {"# T\n\n## Try it\n\n```sh\ngo run ./cmd/dialogtrust dev\n```\n\nMore.\n\n    other\n", "go run ./cmd/dialogtrust dev"},
		"fenced plain":      {"text\n```\na\nb\n```\n", "a\nb"},
		"tilde":             {"~~~bash\nx\n~~~\n", "x"},
		"indented":          {"# T\n\nSay:\n\n    go run ./cmd/dialogtrust dev\n\n    more\n\nText\n```\nlater\n```\n", "go run ./cmd/dialogtrust dev\n\nmore"},
		"tab":               {"a\n\n\tx\n", "x"},
		"list continuation": {"- item\n\n    not code\n\n```\ncode\n```\n", "code"},
		"paragraph indent":  {"text\n    not code either\n\n```\ncode\n```\n", "code"},
	} {
		got, ok := firstCodeBlock(c.md)
		if !ok || got != c.want {
			t.Errorf("%s: %q %v, want %q", name, got, ok, c.want)
		}
	}
	if _, ok := firstCodeBlock("# no code\n\ntext\n"); ok {
		t.Error("a block found in a document without one")
	}
}

// TestReadmeFirstBlock is a newcomer's first minutes: a fresh clone of this repository
// at HEAD in an empty directory (no ../shared beside it), README's first code block run
// verbatim there (`dialogtrust dev`), then the commands it prints, run as printed. They
// must get a WIT and verify it, get a Txn-Token for the dialog and verify it, get a
// grant for the peer domain and redeem it at the peer's AS B for an access token bound
// to the workload's key, then, as the peer domain's workload, exchange that access token
// at the peer TTS for a Txn-Token recording the linked dialog D2 and verify it, and
// write nothing into the working tree; after SIGINT (Ctrl-C) to the process group no process
// and none of dev's files may be left. The Go build cache is shared; the module's own
// packages are compiled once in the clone. Under CI=true it fails rather than skips.
func TestReadmeFirstBlock(t *testing.T) {
	ci := os.Getenv("CI") == "true"
	skip := func(why string) {
		t.Helper()
		if ci {
			t.Fatal(why + " (CI=true: this test must run)")
		}
		t.Skip(why)
	}
	if testing.Short() {
		skip("-short: the README test builds the command in a fresh clone")
	}
	for _, tool := range []string{"git", "go", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			skip(tool + " is not installed")
		}
	}
	goEnv := func(name string) string {
		t.Helper()
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	gocache, gomodcache := goEnv("GOCACHE"), goEnv("GOMODCACHE")

	top := t.TempDir()
	clone := testkit.CloneHEAD(t, ".", top)
	if ents, _ := os.ReadDir(top); len(ents) != 1 {
		t.Fatalf("the clone's directory holds more than the clone: %v", ents)
	}
	readme, err := os.ReadFile(filepath.Join(clone, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, ok := firstCodeBlock(string(readme))
	if !ok || strings.TrimSpace(block) == "" {
		t.Fatal("README.md has no code block")
	}
	t.Logf("README's first block:\n%s", block)

	// dev's files go to the per-user cache directory, here one of the test's; the
	// build cache stays the one this test was built with.
	cache := filepath.Join(top, "usercache")
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "XDG_CACHE_HOME" && k != "GOCACHE" && k != "GOMODCACHE" && k != "PWD" {
			env = append(env, kv)
		}
	}
	env = append(env, "XDG_CACHE_HOME="+cache, "GOCACHE="+gocache, "GOMODCACHE="+gomodcache, "PWD="+clone)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dev := exec.Command("sh", "-c", block)
	dev.Dir, dev.Env = clone, env
	dev.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var devErr testkit.SyncBuffer
	dev.Stderr = &devErr
	stdout, err := dev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := dev.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	exited := make(chan error, 1)
	var devOut testkit.SyncBuffer
	printed := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		closed := false
		for sc.Scan() {
			devOut.Write([]byte(sc.Text() + "\n"))
			if !closed && strings.HasPrefix(sc.Text(), "Ctrl-C") {
				close(printed)
				closed = true
			}
		}
		exited <- dev.Wait()
	}()
	select {
	case <-printed:
	case err := <-exited:
		t.Fatalf("README's first block ended before printing the next commands: %v\nstdout:\n%s\nstderr:\n%s", err, devOut.String(), devErr.String())
	case <-ctx.Done():
		t.Fatalf("no next commands printed\nstdout:\n%s\nstderr:\n%s", devOut.String(), devErr.String())
	}
	out := devOut.String()
	t.Logf("dev printed:\n%s", out)

	m := regexp.MustCompile(`Ready in ([0-9.]+)s`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no ready time printed")
	}
	if secs, _ := strconv.ParseFloat(m[1], 64); secs >= 10 {
		t.Errorf("ready in %ss once built; want under 10s", m[1])
	}
	dm := regexp.MustCompile(`(?m)^\s*files\s+(\S+)`).FindStringSubmatch(out)
	if dm == nil {
		t.Fatal("no files directory printed")
	}
	dir := dm[1]
	pm := regexp.MustCompile(`(?m)^\s*peer TTS\s+(http://\S+)`).FindStringSubmatch(out)
	if pm == nil {
		t.Fatal("no peer TTS URL printed")
	}
	if !strings.HasPrefix(dir, filepath.Join(cache, "dialogtrust", "dev")+string(filepath.Separator)) {
		t.Fatalf("dev's directory %s is not in the per-user cache directory %s", dir, cache)
	}

	cmds := devCommands(out)
	if len(cmds) != devCommandCount {
		t.Fatalf("want %d next commands, got %q", devCommandCount, cmds)
	}
	outputs := make([]string, len(cmds))
	for i, c := range cmds {
		cmd := exec.CommandContext(ctx, "sh", "-c", c)
		cmd.Dir, cmd.Env = clone, env
		var errb testkit.SyncBuffer
		cmd.Stderr = &errb
		o, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, errb.String())
		}
		outputs[i] = string(o)
	}
	var witClaims, txnClaims struct {
		Sub   string         `json:"sub"`
		ReqWL string         `json:"req_wl"`
		TCtx  map[string]any `json:"tctx"`
	}
	if err := json.Unmarshal(verifiedClaims(t, outputs[1]), &witClaims); err != nil || witClaims.Sub != devWorkload {
		t.Errorf("the WIT was not verified for %s: %q %v", devWorkload, outputs[1], err)
	}
	if err := json.Unmarshal(verifiedClaims(t, outputs[3]), &txnClaims); err != nil || txnClaims.ReqWL != devWorkload || txnClaims.TCtx["dlg"] != devDialog {
		t.Errorf("the Txn-Token for dialog %s was not verified: %q %v", devDialog, outputs[3], err)
	}
	for _, f := range devFiles {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s in dev's directory: %v", f, err)
		}
	}
	at, err := os.ReadFile(filepath.Join(dir, "a1.at"))
	if err != nil {
		t.Fatal(err)
	}
	checkPeerAccessToken(t, pm[1], filepath.Join(dir, "a1.jwk"), string(at))
	checkLinkedDialog(t, pm[1], outputs[8])
	if st := testkit.Git(t, clone, "status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("the working tree changed:\n%s", st)
	}

	// Ctrl-C: SIGINT to the foreground process group.
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		// The shell that ran the block may die of the SIGINT itself, as a shell does
		// in a terminal; dev's own stop is checked below (its processes, its files,
		// its last line).
		if ee, ok := errors.AsType[*exec.ExitError](err); err != nil && !(ok && interrupted(ee)) {
			t.Errorf("after SIGINT: %v\nstderr:\n%s", err, devErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after SIGINT\nstderr:\n%s", devErr.String())
	}
	if !testkit.GroupGone(pgid, 5*time.Second) {
		t.Fatalf("processes of process group %d are left after SIGINT", pgid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dev's directory %s is left: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "dialogtrust")); !os.IsNotExist(err) {
		t.Errorf("left in the per-user cache directory: %v", err)
	}
	if !strings.Contains(devErr.String(), "removed "+dir) {
		t.Errorf("dev did not say it removed %s:\n%s", dir, devErr.String())
	}
}

// interrupted reports whether the process ended by SIGINT or with status 130 (a shell's
// 128+SIGINT).
func interrupted(ee *exec.ExitError) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && (ws.Signaled() && ws.Signal() == syscall.SIGINT || ws.Exited() && ws.ExitStatus() == 130)
}
