package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/chaining"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/tts"
)

// devCommands are the printed next commands of dev's output: the lines between "from
// this directory:" and "Ctrl-C", without comments.
func devCommands(out string) []string {
	var cmds []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch t := strings.TrimSpace(l); {
		case strings.HasSuffix(t, "from this directory:"):
			in = true
		case strings.HasPrefix(t, "Ctrl-C"):
			return cmds
		case in && t != "" && !strings.HasPrefix(t, "#"):
			cmds = append(cmds, t)
		}
	}
	return nil
}

// startDev runs dev in the process until the test ends; it returns its output once the
// commands are printed, the run's directory and the function that stops it and
// returns its error.
func startDev(t *testing.T, cacheDir string) (out *testkit.SyncBuffer, dir string, stop func() error) {
	t.Helper()
	return startDevWith(t, cacheDir, false)
}

// startDevWith is startDev, with the proxy pair when proxies is set (dev --proxies).
func startDevWith(t *testing.T, cacheDir string, proxies bool) (out *testkit.SyncBuffer, dir string, stop func() error) {
	t.Helper()
	return startDevOptions(t, cacheDir, proxies, devPairOptions{})
}

// startDevOptions is startDevWith, the pair configured by pair (--app, --egress-addr).
func startDevOptions(t *testing.T, cacheDir string, proxies bool, pair devPairOptions) (out *testkit.SyncBuffer, dir string, stop func() error) {
	t.Helper()
	return startDevRun(t, devOptions{proxies: proxies, pair: pair, cacheDir: cacheDir})
}

// startDevRun is startDevOptions with o's other options (such as stopped); the
// addresses are free loopback ports, the command "dialogtrust".
func startDevRun(t *testing.T, o devOptions) (out *testkit.SyncBuffer, dir string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &testkit.SyncBuffer{}
	readyc := make(chan string, 1)
	errc := make(chan error, 1)
	o.witAddr, o.ttsAddr, o.peerAddr, o.peerWITAddr, o.adminAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	o.command, o.started, o.ready = "dialogtrust", time.Now(), func(d string) { readyc <- d }
	go func() {
		errc <- runDev(ctx, o, out, &testkit.SyncBuffer{})
	}()
	var stopped bool
	var stopErr error
	stop = func() error {
		if !stopped {
			cancel()
			stopErr, stopped = <-errc, true
		}
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case dir = <-readyc:
	case err := <-errc:
		stopped, stopErr = true, err
		t.Fatalf("dev stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("dev not ready in 30s")
	}
	return out, dir, stop
}

// TestDev: dev serves a WIT issuer, a TTS, the peer domain's TTS and its WIT issuer
// that answer /readyz; its printed commands run as printed (here in the process) and get
// and verify a WIT and a Txn-Token for the dialog, get a grant for the peer from the TTS
// (AS A), redeem it at the peer's AS B for an access token of peer.local bound to the
// workload's key, and, as a peer.local workload with a WIT of its domain, exchange that
// access token at the peer TTS for a Txn-Token of peer.local recording the linked
// dialog D2 (Figure 5 step 4) and verify it, writing only into the run's directory;
// when dev stops, that directory is gone and so are the listeners.
func TestDev(t *testing.T) {
	cache := t.TempDir()
	out, dir, stop := startDev(t, cache)
	if !strings.HasPrefix(dir, filepath.Join(cache, "dialogtrust", "dev")+string(filepath.Separator)) {
		t.Fatalf("run directory %s is not under the per-user cache directory", dir)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("run directory: %v %v", st, err)
	}
	text := out.String()
	for _, want := range []string{"DEVELOPMENT", "authenticates NOBODY", "Ready in ", "removed on exit", "Ctrl-C stops the four services and removes " + dir} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	var urls []string
	for _, f := range strings.Fields(text) {
		if strings.HasPrefix(f, "http://127.0.0.1:") && !strings.Contains(strings.TrimPrefix(f, "http://"), "/") {
			urls = append(urls, f)
		}
	}
	if len(urls) < 4 {
		t.Fatalf("no service URLs in:\n%s", text)
	}
	urls = urls[:4] // the WIT issuer, the TTS, the peer's TTS, the peer's WIT issuer
	for _, u := range urls {
		resp, err := http.Get(u + "/readyz")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s/readyz: %v %v", u, resp, err)
		}
		resp.Body.Close()
	}

	cmds := devCommands(text)
	if len(cmds) != devCommandCount {
		t.Fatalf("want %d commands, got %q", devCommandCount, cmds)
	}
	t.Chdir(t.TempDir()) // nothing may be written into the working directory
	outputs := runDevCommands(t, cmds, dir)
	if ents, _ := os.ReadDir("."); len(ents) != 0 {
		t.Fatalf("the commands wrote into the working directory: %v", ents)
	}
	var witClaims, txnClaims map[string]any
	if err := json.Unmarshal(verifiedClaims(t, outputs[1]), &witClaims); err != nil || witClaims["sub"] != devWorkload {
		t.Fatalf("wit verify printed %q: %v", outputs[1], err)
	}
	if err := json.Unmarshal(verifiedClaims(t, outputs[3]), &txnClaims); err != nil || txnClaims["req_wl"] != devWorkload ||
		txnClaims["tctx"].(map[string]any)["dlg"] != devDialog {
		t.Fatalf("txn verify printed %q: %v", outputs[3], err)
	}
	for _, f := range devFiles {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	checkPeerAccessToken(t, urls[2], filepath.Join(dir, "a1.jwk"), outputs[5])
	checkLinkedDialog(t, urls[2], outputs[8])
	// The peer TTS admits only peer.local's workloads: a1, which AS B authenticated for
	// the access token, gets no Txn-Token of peer.local with it.
	step4 := strings.Fields(strings.Split(cmds[7], " > ")[0])[1:]
	a1 := strings.NewReplacer(filepath.Join(dir, "b1.wit"), filepath.Join(dir, "a1.wit"), filepath.Join(dir, "b1.jwk"), filepath.Join(dir, "a1.jwk"))
	for i, w := range step4 {
		step4[i] = a1.Replace(w)
	}
	if _, e, code := dt(t, "", step4...); code == 0 || !strings.Contains(e, "workload_not_allowed") {
		t.Fatalf("%s as %s: exit %d: %s", cmds[7], devWorkload, code, e)
	}

	checkDevStopped(t, stop, cache, urls)
}

// runDevCommands runs dev's printed commands cmds ("dialogtrust ARGS [> FILE]") in the
// process, as printed, writing each redirect's file, and returns what each printed.
// Every command must succeed, and write and name files only in dir.
func runDevCommands(t *testing.T, cmds []string, dir string) []string {
	t.Helper()
	var outputs []string
	for _, c := range cmds {
		// "dialogtrust ARGS [> FILE]", run in the process.
		line, redirect, _ := strings.Cut(c, " > ")
		words := strings.Fields(line)
		if words[0] != "dialogtrust" {
			t.Fatalf("command %q", c)
		}
		o, e, code := dt(t, "", words[1:]...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c, code, e)
		}
		if redirect != "" {
			if !strings.HasPrefix(redirect, dir+string(filepath.Separator)) {
				t.Fatalf("%s writes outside %s", c, dir)
			}
			if err := os.WriteFile(redirect, []byte(o), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range words {
			if strings.HasPrefix(w, "/") && !strings.HasPrefix(strings.TrimPrefix(w, "@"), dir) && w != "/" {
				t.Errorf("%s names a file outside %s: %s", c, dir, w)
			}
		}
		outputs = append(outputs, o)
	}
	return outputs
}

// TestDevProxies: dev --proxies also runs a1's egress and t1's ingress in front of the
// echo application; the printed curl command, run as printed, goes through both, and the
// application reports the sender, the dialog the egress started (established at the
// stateful ingress) and the Txn-Token's claims for it, as the ingress verified them; a
// Dialogtrust-Verified-* field the client sends does not get through. When dev stops,
// the proxies and the application are gone with the services.
func TestDevProxies(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is not installed (CI=true: this test must run)")
		}
		t.Skip("curl is not installed")
	}
	cache := t.TempDir()
	out, dir, stop := startDevWith(t, cache, true)
	text := out.String()
	if want := "Ctrl-C stops the four services, the two proxies and the echo application and removes " + dir; !strings.Contains(text, want) {
		t.Errorf("output lacks %q:\n%s", want, text)
	}
	var urls []string
	for _, re := range []string{`(?m)^\s*egress\s+(http://\S+)`, `(?m)^\s*ingress\s+(http://\S+)`, `echo application at (http://[^\s)]+)`} {
		m := regexp.MustCompile(re).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no %s in:\n%s", re, text)
		}
		urls = append(urls, m[1])
	}
	cmds := devCommands(text)
	curlCmd := cmds[len(cmds)-1]
	if len(cmds) != devCommandCount+1 || !strings.HasPrefix(curlCmd, "curl ") || !strings.Contains(curlCmd, urls[0]+"/t1/") {
		t.Fatalf("want the %d commands and a curl command to the egress, got %q", devCommandCount, cmds)
	}
	for _, c := range cmds[:devCommandCount] {
		if !strings.HasPrefix(c, "dialogtrust ") {
			t.Fatalf("command %q", c)
		}
	}
	t.Chdir(t.TempDir())
	curl := func(c string) map[string]any {
		t.Helper()
		var stderr strings.Builder
		cmd := exec.Command("sh", "-c", c)
		cmd.Stderr = &stderr
		o, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, stderr.String())
		}
		var echo struct {
			Method, Path, Body string
			Verified           map[string]any
		}
		if err := json.Unmarshal(o, &echo); err != nil {
			t.Fatalf("%s printed %q: %v", c, o, err)
		}
		if echo.Method != "POST" || echo.Path != "/echo" || echo.Body != `{"hello":"t1"}` {
			t.Fatalf("the application got %+v", echo)
		}
		return echo.Verified
	}
	first := curl(curlCmd)
	for k, want := range map[string]string{"Sender": devWorkload, "Proof": "httpsig", "Initiator": devWorkload,
		"Initiator-Proved": "true", "Established": "true"} {
		if got := first["Dialogtrust-Verified-"+k]; got != want {
			t.Errorf("Dialogtrust-Verified-%s: %v, want %q", k, got, want)
		}
	}
	dlg, _ := first["Dialogtrust-Verified-Dialog"].(string)
	claims, _ := first["Dialogtrust-Verified-Txn-Token-Claims"].(map[string]any)
	if dlg == "" || claims == nil || claims["req_wl"] != devWorkload || claims["sub"] != devSubject || claims["scope"] != devScope ||
		claims["tctx"].(map[string]any)["dlg"] != dlg {
		t.Fatalf("dialog %q, claims %v", dlg, claims)
	}
	// A second run starts another dialog; a verified field from the client is dropped
	// at the egress, and would be at the ingress.
	spoofed := strings.Replace(curlCmd, "curl ", "curl -H 'Dialogtrust-Verified-Sender: wimse://"+devTrustDomain+"/evil' ", 1)
	second := curl(spoofed)
	if second["Dialogtrust-Verified-Sender"] != devWorkload || second["Dialogtrust-Verified-Dialog"] == dlg {
		t.Fatalf("second request: %v", second)
	}
	if ents, _ := os.ReadDir("."); len(ents) != 0 {
		t.Fatalf("written into the working directory: %v", ents)
	}

	checkDevStopped(t, stop, cache, urls)
}

// checkDevStopped stops a dev run and checks that it left nothing behind under the
// cache directory and that none of its servers at urls still accepts connections.
func checkDevStopped(t *testing.T, stop func() error, cache string, urls []string) {
	t.Helper()
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "dialogtrust")); !os.IsNotExist(err) {
		t.Fatalf("left behind under the cache directory: %v", err)
	}
	for _, u := range urls {
		if c, err := net.DialTimeout("tcp", strings.TrimPrefix(u, "http://"), time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections", u)
		}
	}
}

// devCommandCount is how many commands dev prints without --proxies; devFiles, the
// files they write into the run's directory.
const devCommandCount = 11

var devFiles = []string{"a1.jwk", "a1.wit", "a1.txn", "a1.grant", "a1.at", "b1.jwk", "b1.wit", "b1.txn"}

// checkLinkedDialog: out is what `txn verify` printed for the peer's Txn-Token: the
// claims of a Txn-Token of peer.local, from the peer TTS at peerURL, recording the
// linked dialog D2 for the peer's workload, the subject and scope those of the access
// token (and so of dev.local's Txn-Token for D1, which it does not name).
func checkLinkedDialog(t *testing.T, peerURL, out string) {
	t.Helper()
	var c struct {
		Iss, Sub, Scope string
		Aud             any
		ReqWL           string         `json:"req_wl"`
		TCtx            map[string]any `json:"tctx"`
	}
	if err := json.Unmarshal(verifiedClaims(t, out), &c); err != nil {
		t.Fatalf("txn verify printed %q: %v", out, err)
	}
	if c.Iss != peerURL || c.Aud != devPeerDomain || c.Sub != devSubject || c.Scope != devScope || c.ReqWL != devPeerWorkload ||
		c.TCtx["dlg"] != devLinkedDialog {
		t.Fatalf("the peer's Txn-Token for the linked dialog: %+v", c)
	}
	// No claim names dev.local's dialog (the verdict line's kid, random base64, may
	// contain its letters: only the claims' values count).
	var claims any
	if err := json.Unmarshal(verifiedClaims(t, out), &claims); err != nil {
		t.Fatal(err)
	}
	if namesValue(claims, devDialog) {
		t.Fatalf("the peer's Txn-Token names dev.local's dialog %s: %s", devDialog, out)
	}
}

// namesValue reports whether v, decoded JSON, holds the string s as a value anywhere.
func namesValue(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return v == s
	case []any:
		for _, e := range v {
			if namesValue(e, s) {
				return true
			}
		}
	case map[string]any:
		for _, e := range v {
			if namesValue(e, s) {
				return true
			}
		}
	}
	return false
}

// checkPeerAccessToken: out is one access token of the peer's AS B at peerURL, as a
// resource server of peer.local validates it, for the subject of the Txn-Token, the
// scope of the grant, the workload as client, bound to the workload's key (keyFile).
func checkPeerAccessToken(t *testing.T, peerURL, keyFile, out string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ks, err := keys.NewRemoteSet(ctx, peerURL+tts.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	raw := strings.TrimSuffix(out, "\n")
	v := &chaining.AccessTokenVerifier{Keys: ks, Issuer: peerURL, Audience: devPeerDomain}
	c, err := v.Verify(ctx, raw)
	if err != nil {
		t.Fatalf("chain redeem printed %d bytes that are not a peer access token: %v", len(out), err)
	}
	if c.Sub != devSubject || c.ClientID != devWorkload || c.Scope != devScope {
		t.Fatalf("access token claims %+v", c)
	}
	key, err := loadPrivateKey(keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := chaining.CheckHolder(c, key.Public()); err != nil {
		t.Fatalf("the access token is not bound to the workload's key: %v", err)
	}
}

// TestDevUsageErrors: an address that is not loopback, malformed, or taken is a usage
// error naming its flag, and nothing is left behind.
func TestDevUsageErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--wit-addr", "0.0.0.0:8080"}, "usage error: --wit-addr: 0.0.0.0:8080 is not a loopback"},
		{[]string{"dev", "--tts-addr", "localhost"}, "usage error: --tts-addr: "},
		{[]string{"dev", "--tts-addr", busy.Addr().String()}, "usage error: --tts-addr: listen tcp " + busy.Addr().String()},
		{[]string{"dev", "--peer-addr", "192.0.2.1:8082"}, "usage error: --peer-addr: 192.0.2.1:8082 is not a loopback"},
		{[]string{"dev", "--peer-addr", busy.Addr().String()}, "usage error: --peer-addr: listen tcp " + busy.Addr().String()},
		{[]string{"dev", "--peer-wit-addr", "0.0.0.0:8083"}, "usage error: --peer-wit-addr: 0.0.0.0:8083 is not a loopback"},
		{[]string{"dev", "--peer-wit-addr", busy.Addr().String()}, "usage error: --peer-wit-addr: listen tcp " + busy.Addr().String()},
		{[]string{"dev", "--admin-addr", "0.0.0.0:8444"}, "usage error: --admin-addr: 0.0.0.0:8444 is not a loopback"},
		{[]string{"dev", "--admin-addr", busy.Addr().String()}, "usage error: --admin-addr: revocations.admin.listen: listen tcp " + busy.Addr().String()},
		{[]string{"dev", "extra"}, "usage error: unexpected argument extra"},
	} {
		_, errOut, code := dt(t, "", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Fatalf("left behind: %v", ents)
	}
}

func TestDevCommandAndQuote(t *testing.T) {
	for exe, goRun := range map[string]bool{
		"/tmp/go-build123/b001/exe/dialogtrust": true,
		"/root/.cache/go-build/78/78aab750b71f83dc78f89f01098fd183d243933622bc68f93c2cf4154528baec-d/dialogtrust": true,
		"/usr/local/bin/dialogtrust":      false,
		"/home/u/go/bin/dialogtrust":      false,
		"/home/u/go-builds/x/dialogtrust": false,
	} {
		if goRunExecutable.MatchString(exe) != goRun {
			t.Errorf("%s: go run %v", exe, !goRun)
		}
	}
	for in, want := range map[string]string{
		"/a/b-c_d.jwk": "/a/b-c_d.jwk",
		"/a b/c":       "'/a b/c'",
		"/it's":        `'/it'\''s'`,
		"":             "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// stopWhenOrphaned stops dev once its parent is no longer the one it started with (the
// go command of `go run`, killed), and not while it is.
func TestStopWhenOrphaned(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tick := make(chan time.Time)
	var parent atomic.Int64
	parent.Store(100)
	stopped := make(chan struct{})
	go stopWhenOrphaned(ctx, func() { close(stopped) }, 100, func() int { return int(parent.Load()) }, tick)
	for range 3 {
		tick <- time.Time{} // received: the loop is waiting again, not stopped
	}
	select {
	case <-stopped:
		t.Fatal("stopped with its parent alive")
	default:
	}
	parent.Store(1)
	tick <- time.Time{}
	<-stopped
}
