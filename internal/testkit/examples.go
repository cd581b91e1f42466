package testkit

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The proxy examples (examples/proxy): a Python tool and client, run by the tests of
// dev --proxies --app and of the proxy command against their real interpreters.

// ExamplePython returns an interpreter with httpx, Starlette and uvicorn (Debian's
// python3-httpx, python3-starlette, python3-uvicorn, which .ci/run installs): the
// system's first, as another python3 on PATH may lack them. Without one the test
// skips, and under CI=true fails.
func ExamplePython(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import httpx, starlette, uvicorn").Run() == nil {
			return p
		}
	}
	PeerMissing(t, "no python3 with httpx, starlette and uvicorn (apt-get install python3-httpx python3-starlette python3-uvicorn)")
	return ""
}

// StartExampleTool starts an example tool (cmd) on a free loopback port and returns
// the URL it printed in its first line ("tool listening on URL"), printed once it
// listens. Its output is in the returned buffer; the process is killed by its pid when
// the test ends.
func StartExampleTool(t testing.TB, cmd *exec.Cmd) (string, *SyncBuffer) {
	t.Helper()
	out := &SyncBuffer{}
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the process this test started, by pid
		_ = cmd.Wait()
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for n := 0; sc.Scan(); n++ {
			if n == 0 {
				first <- sc.Text()
			}
			out.Write([]byte(sc.Text() + "\n"))
		}
		close(first)
	}()
	select {
	case line, ok := <-first:
		if u, found := strings.CutPrefix(line, "tool listening on "); ok && found {
			return u, out
		}
		t.Fatalf("%s: first line %q, want \"tool listening on URL\"\n%s", cmd, line, out.String())
	case <-time.After(time.Minute):
		t.Fatalf("%s: not listening within a minute\n%s", cmd, out.String())
	}
	return "", nil
}

// ExampleSeen is what an example tool answered: what it was given by the ingress.
type ExampleSeen struct {
	Sender          string         `json:"sender"`
	Senders         []string       `json:"senders"`
	Proof           string         `json:"proof"`
	Dialog          string         `json:"dialog"`
	Initiator       string         `json:"initiator"`
	InitiatorProved string         `json:"initiator_proved"`
	Established     string         `json:"established"`
	Claims          map[string]any `json:"claims"`
	Path            string         `json:"path"`
	Body            string         `json:"body"`
	CredentialsSeen []string       `json:"credentials_seen"`
}

// ExampleRun is what an example client printed with --json: the Dialog-Context it
// got, what the tool saw of the dialog's first request, of the second, and of the one
// with a spoofed Dialogtrust-Verified-Sender, and the egress's refusal of a path with
// no route.
type ExampleRun struct {
	DialogContext string         `json:"dialog_context"`
	First         ExampleSeen    `json:"first"`
	Second        ExampleSeen    `json:"second"`
	Spoofed       ExampleSeen    `json:"spoofed"`
	RefusedStatus int            `json:"refused_status"`
	Refused       map[string]any `json:"refused"`
}

// RunExampleClient runs an example client (cmd, which must print with --json) and
// returns what it printed; its failure fails the test with its stderr and the tool's
// output.
func RunExampleClient(t testing.TB, cmd *exec.Cmd, toolOut *SyncBuffer) ExampleRun {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s\ntool: %s", cmd, err, stderr.String(), toolOut.String())
	}
	var r ExampleRun
	if err := json.Unmarshal(got, &r); err != nil {
		t.Fatalf("%s printed %q: %v", cmd, got, err)
	}
	return r
}

// CheckExampleRun checks what an example tool saw through the pair: every request from
// the egress's workload (one sender, even with a spoofed field), in the dialog dlg the
// client was given (its Dialog-Context, parsed by the caller: dialog imports packages
// whose tests import this one), the initiator proved, the HTTP signature, the Txn-Token
// of that dialog and scope; no credential; and the egress's refusal of a path with no
// route.
func CheckExampleRun(t testing.TB, r ExampleRun, dlg, initiator, workload, scope string) {
	t.Helper()
	if initiator != workload {
		t.Fatalf("the client got no dialog of %s: %q", workload, r.DialogContext)
	}
	for name, s := range map[string]ExampleSeen{"first": r.First, "second": r.Second, "spoofed": r.Spoofed} {
		tctx, _ := s.Claims["tctx"].(map[string]any)
		switch {
		case s.Sender != workload || len(s.Senders) != 1:
			t.Errorf("%s: the tool saw sender %q %v", name, s.Sender, s.Senders)
		case s.Dialog != dlg || s.Initiator != initiator || s.InitiatorProved != "true" || s.Proof != "httpsig":
			t.Errorf("%s: the tool saw dialog %q initiator %q proved %q proof %q", name, s.Dialog, s.Initiator, s.InitiatorProved, s.Proof)
		case tctx["dlg"] != dlg || s.Claims["scope"] != scope:
			t.Errorf("%s: Txn-Token claims %v", name, s.Claims)
		case len(s.CredentialsSeen) != 0:
			t.Errorf("%s: the tool saw credentials %v", name, s.CredentialsSeen)
		case s.Path != "/invoke":
			t.Errorf("%s: path %q", name, s.Path)
		}
	}
	if !strings.Contains(r.First.Body, "book a trip") {
		t.Errorf("body %q", r.First.Body)
	}
	if r.RefusedStatus != 404 || r.Refused["code"] != "no_route" {
		t.Errorf("no route: %d %v", r.RefusedStatus, r.Refused)
	}
}

// ExamplesDir is the directory examples/proxy/<lang> of the repository, from a test's
// package directory up (root: the relative path to the repository's root).
func ExamplesDir(root, lang string) string {
	return filepath.Join(root, "examples", "proxy", lang)
}
