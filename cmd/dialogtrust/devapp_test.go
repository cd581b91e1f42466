package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/dialog"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/proxy"
)

// freeLoopbackAddr is a loopback address that was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestDevAppPythonExample (issue 24 point 7): from nothing to "my tool sees the
// verified sender" in one command. dev --proxies --app puts the Python example tool
// (examples/proxy/python, Starlette on uvicorn) behind the ingress, in place of the
// echo application, with the egress at the --egress-addr given; the output names the
// egress URL to call and every Dialogtrust-Verified-* field the application gets, and
// no echo application. The Python example client (httpx) calls through the egress: the
// tool sees the egress's workload as the verified sender, in the dialog the client
// started (established on the first request at the stateful ingress, not on the
// second), the Txn-Token of dev.local for it, no credential, and not the sender the
// client claimed itself; and the tool prints the verified sender. The printed curl
// command reaches the tool's root. When dev stops, the tool is still running: it is
// the user's.
func TestDevAppPythonExample(t *testing.T) {
	py := testkit.ExamplePython(t)
	dir := testkit.ExamplesDir(filepath.Join("..", ".."), "python")
	appURL, toolOut := testkit.StartExampleTool(t, exec.Command(py, filepath.Join(dir, "tool.py"), "127.0.0.1:0"))
	egressAddr := freeLoopbackAddr(t)

	cache := t.TempDir()
	out, runDir, stop := startDevOptions(t, cache, true, devPairOptions{app: appURL, egressAddr: egressAddr})
	text := out.String()
	for _, want := range []string{
		"  egress      http://" + egressAddr + "  ",
		"in front of your application at " + appURL + ")",
		"Your application " + appURL + " is behind the ingress, as " + devTool,
		"  http://" + egressAddr + devPairPrefix + "/PATH  ->  " + appURL + "/PATH",
		"Ctrl-C stops the four services and the two proxies (not your application) and removes " + runDir + ".",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	for _, f := range []string{proxy.VerifiedSenderField, proxy.VerifiedProofField, proxy.VerifiedDialogField, proxy.VerifiedInitiatorField,
		proxy.VerifiedInitiatorProvedField, proxy.VerifiedEstablishedField, proxy.VerifiedTxnTokenClaimsField} {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(f) + ` `).MatchString(text) {
			t.Errorf("output does not name the field %s:\n%s", f, text)
		}
	}
	if strings.Contains(text, "echo") {
		t.Errorf("an echo application with --app:\n%s", text)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := testkit.RunExampleClient(t, exec.CommandContext(ctx, py, filepath.Join(dir, "client.py"), "http://"+egressAddr, "--json"), toolOut)
	dc, err := dialog.Parse(r.DialogContext)
	if err != nil {
		t.Fatalf("the client's Dialog-Context %q: %v", r.DialogContext, err)
	}
	testkit.CheckExampleRun(t, r, dc.DLG(), dc.Initiator().String(), devWorkload, devScope)
	if r.First.Established != "true" || r.Second.Established != "false" || r.First.Claims["sub"] != devSubject {
		t.Errorf("established %q then %q, subject %v", r.First.Established, r.Second.Established, r.First.Claims["sub"])
	}
	if want := "from the verified sender " + devWorkload + " (dialog " + dc.DLG() + ")"; !strings.Contains(toolOut.String(), want) {
		t.Errorf("the tool did not print %q:\n%s", want, toolOut.String())
	}

	if _, err := exec.LookPath("curl"); err == nil {
		cmds := devCommands(text)
		c := cmds[len(cmds)-1]
		o, err := exec.CommandContext(ctx, "sh", "-c", c).Output()
		var seen testkit.ExampleSeen
		if err != nil || json.Unmarshal(o, &seen) != nil || seen.Sender != devWorkload || seen.Path != "/" || seen.Established != "true" {
			t.Errorf("%s: %v %s", c, err, o)
		}
	}

	checkDevStopped(t, stop, cache, []string{"http://" + egressAddr})
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(appURL, "http://"), time.Second); err != nil {
		t.Errorf("dev stopped the user's application: %v", err)
	} else {
		c.Close()
	}
}

// TestDevAppUsageErrors: --app and --egress-addr configure the pair, so they need
// --proxies; --app must be an absolute http(s) base URL, --egress-addr a loopback
// host:port that is free; each refusal is a usage error naming its flag.
func TestDevAppUsageErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--app", "http://127.0.0.1:8000"}, "usage error: --app needs --proxies"},
		{[]string{"dev", "--egress-addr", "127.0.0.1:8800"}, "usage error: --egress-addr needs --proxies"},
		{[]string{"dev", "--proxies", "--app", "127.0.0.1:8000"}, "usage error: --app: "},
		{[]string{"dev", "--proxies", "--app", "/relative"}, "usage error: --app: /relative is not an absolute http(s) URL"},
		{[]string{"dev", "--proxies", "--app", "ftp://127.0.0.1/"}, "is not an absolute http(s) URL"},
		{[]string{"dev", "--proxies", "--app", "http://u:p@127.0.0.1:8000"}, "must be a base URL"},
		{[]string{"dev", "--proxies", "--app", "http://127.0.0.1:8000/?x=1"}, "must be a base URL"},
		{[]string{"dev", "--proxies", "--egress-addr", "0.0.0.0:8800"}, "usage error: --egress-addr: 0.0.0.0:8800 is not a loopback"},
		{[]string{"dev", "--proxies", "--egress-addr", "8800"}, "usage error: --egress-addr: "},
		{[]string{"dev", "--proxies", "--egress-addr", busy.Addr().String()}, "usage error: --egress-addr: "},
	} {
		_, errOut, code := dt(t, "", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestDevAppNotListening: dev does not start the user's application; until it
// listens, a call through the egress is refused with upstream_unavailable (the ingress
// could not reach it), as docs/cli.md says, and nothing else is answered in its name.
func TestDevAppNotListening(t *testing.T) {
	appURL := "http://" + freeLoopbackAddr(t) // nothing listens there
	egressAddr := freeLoopbackAddr(t)
	startDevOptions(t, t.TempDir(), true, devPairOptions{app: appURL, egressAddr: egressAddr})
	req, err := http.NewRequest(http.MethodPost, "http://"+egressAddr+devPairPrefix+"/invoke", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(proxy.StartDialogField, "?1")
	res, body := testkit.Do(t, http.DefaultClient, req)
	var doc struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Code != "upstream_unavailable" || res.StatusCode < 500 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}
