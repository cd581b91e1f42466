package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
)

// TestIssue24Point6DevLogFormat: the services' logs under dev are text when they go to
// a terminal and JSON when not, unless --log-format says; anything else is a usage
// error.
func TestIssue24Point6DevLogFormat(t *testing.T) {
	for _, c := range []struct {
		flag     string
		terminal bool
		want     string
	}{
		{"", true, "text"}, {"", false, "json"},
		{"json", true, "json"}, {"text", false, "text"},
	} {
		if got, err := devLogFormat(c.flag, c.terminal); err != nil || got != c.want {
			t.Errorf("--log-format %q, terminal %v: %q %v, want %q", c.flag, c.terminal, got, err, c.want)
		}
	}
	if _, err := devLogFormat("yaml", true); err == nil || !strings.Contains(err.Error(), "--log-format yaml: text or json") {
		t.Errorf("yaml: %v", err)
	}
	if _, errOut, code := dt(t, "", "dev", "--log-format", "yaml"); code != 2 || !strings.HasPrefix(errOut, "usage error: --log-format yaml: text or json\n") {
		t.Errorf("dev --log-format yaml: exit %d, %s", code, errOut)
	}
}

// runDevLogs runs dev in the process with its logs in format until it is ready, stops
// it, and returns its standard output and what it wrote on standard error before its
// standard output.
func runDevLogs(t *testing.T, format string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errb := &testkit.SyncBuffer{}
	out := &firstWriteMark{mark: errb}
	readyc, errc := make(chan string, 1), make(chan error, 1)
	go func() {
		errc <- runDev(ctx, devOptions{witAddr: "127.0.0.1:0", ttsAddr: "127.0.0.1:0", peerAddr: "127.0.0.1:0", peerWITAddr: "127.0.0.1:0",
			logFormat: format, command: "dialogtrust", started: time.Now(), cacheDir: t.TempDir(), ready: func(d string) { readyc <- d }}, out, errb)
	}()
	select {
	case <-readyc:
	case err := <-errc:
		cancel()
		t.Fatalf("dev stopped: %v\n%s", err, errb.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("dev not ready in 30s")
	}
	// What a person sees before the next commands: the services' lines written before
	// dev's own.
	before := errb.String()[:out.at]
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("dev: %v", err)
	}
	return out.String(), before
}

// firstWriteMark is dev's standard output in runDevLogs: it notes how much had been
// written to mark (standard error) when its first write came.
type firstWriteMark struct {
	testkit.SyncBuffer
	mark   *testkit.SyncBuffer
	at     int
	marked bool
}

func (f *firstWriteMark) Write(b []byte) (int, error) {
	if !f.marked {
		f.at, f.marked = len(f.mark.String()), true
	}
	return f.SyncBuffer.Write(b)
}

// TestIssue24Point6DevTerminalOutput: in text (a terminal), nothing of the four
// services comes before dev's own lines and the next commands (no banner, no start or
// warning lines, no listening lines: dev's lines say it, with the DEVELOPMENT warning);
// in JSON (a file, a pipe) every line is kept for the log collector, each a JSON object
// but the banners and the listening lines, as the services write them.
func TestIssue24Point6DevTerminalOutput(t *testing.T) {
	out, before := runDevLogs(t, "text")
	if before != "" {
		t.Errorf("text: the services wrote before the next commands:\n%s", before)
	}
	for _, want := range []string{"DEVELOPMENT", "authenticates NOBODY", "Ready in "} {
		if !strings.Contains(out, want) {
			t.Errorf("text: stdout lacks %q:\n%s", want, out)
		}
	}

	_, before = runDevLogs(t, "json")
	var objects, banners int
	for _, l := range strings.Split(strings.TrimSpace(before), "\n") {
		var m map[string]any
		switch {
		case json.Unmarshal([]byte(l), &m) == nil:
			objects++
		case strings.HasPrefix(l, "*"):
			banners++
		case strings.Contains(l, " listening on http://"):
		default:
			t.Errorf("json: a line that is neither JSON, a banner nor a listening line: %q", l)
		}
	}
	if objects < 8 || banners < 4*4 {
		t.Errorf("json: %d JSON lines and %d banner lines, want the 4 services' start and warning lines and banners:\n%s", objects, banners, before)
	}
}

// TestIssue24Point6ReadmeScriptStop runs README's block that stops `go run
// ./cmd/dialogtrust dev` from a script, as written, from the repository root: it must
// end by itself, and when it has, the four services' ports are closed (go run ignores
// SIGINT; a SIGINT to it alone would leave them running, and SIGTERM to it would return
// before they stopped).
func TestIssue24Point6ReadmeScriptStop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the block runs go run")
	}
	for _, tool := range []string{"bash", "go", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (CI=true: this test must run)", tool)
			}
			t.Skip(tool + " is not installed")
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```bash\n(d=\"\\$\\(mktemp -d\\)\"\n[^`]*?kill -INT[^`]*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README has no bash block that stops dev with kill -INT")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", string(m[1]))
	cmd.Dir = root
	// Killed with its whole group if it hangs, so that no dev outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the block: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	urls := regexp.MustCompile(`(?m)^  (?:WIT issuer|TTS|peer TTS|peer WIT) +http://(127\.0\.0\.1:\d+) `).FindAllStringSubmatch(stdout.String(), -1)
	if len(urls) != 4 {
		t.Fatalf("want the four services' URLs in the block's output, got %q:\n%s", urls, stdout.String())
	}
	for _, u := range urls {
		if c, err := net.DialTimeout("tcp", u[1], time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the block ended", u[1])
		}
	}
}
