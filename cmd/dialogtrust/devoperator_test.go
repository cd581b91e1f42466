package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/tts"
)

// TestIssue26DevOperator: dev runs what the operator needs (issue 26). Its TTS serves
// the revocations admin API on the printed loopback URL, which refuses a caller
// without credentials; the operator's WIT and key are in the run's directory, mode
// 0600, and the WIT issuer gives the operator's identity to no other local process. The printed one-time link signs in to the operator's page (303 and a session
// cookie) once only, and the page then lists dialog D1 that the printed commands made;
// the tenth command, run as printed, prints another link that signs in. The eleventh,
// run as printed with the operator's files, revokes D1 (a workload that is not the
// administrator is refused), and the TTS then refuses a Txn-Token in D1
// (dialog_revoked) within the revocation bound, while another dialog still gets one. The TTS's audit trail in the run's directory holds the issuance in
// D1 and the refusal, no whole token, and verifies with `dialogtrust audit verify`
// against the TTS's JWKS, its checkpoints' signatures checked.
func TestIssue26DevOperator(t *testing.T) {
	trail := t.TempDir()
	out, dir, stop := startDevRun(t, devOptions{cacheDir: t.TempDir(), stopped: func(dir string) {
		// The trail as the services left it, closed with a last checkpoint.
		copyDir(t, filepath.Join(dir, devAuditDir), trail)
	}})
	text := out.String()
	m := regexp.MustCompile(`(?m)^  admin API   (http://127\.0\.0\.1:\d+/admin/revocations)  `).FindStringSubmatch(text)
	tm := regexp.MustCompile(`(?m)^  TTS         (http://\S+)`).FindStringSubmatch(text)
	pm := regexp.MustCompile(`(?m)^  operator    (http://127\.0\.0\.1:\d+/admin/)  \(the operator's page; sign in once, within a minute: (http://\S+)\)$`).FindStringSubmatch(text)
	if m == nil || tm == nil || pm == nil {
		t.Fatalf("no admin API, TTS or page URL in:\n%s", text)
	}
	adminURL, ttsURL, pageURL, login := m[1], tm[1], pm[1], pm[2]
	if !strings.HasPrefix(login, pageURL) || strings.TrimSuffix(adminURL, "/admin/revocations") != strings.TrimSuffix(pageURL, "/admin/") {
		t.Fatalf("the page %s, its link %s and the API %s are not on one listener", pageURL, login, adminURL)
	}
	if !strings.Contains(text, "  audit       "+filepath.Join(dir, devAuditDir, "tts.log")+"  ") {
		t.Errorf("the audit trail's file is not printed:\n%s", text)
	}

	// The admin listener answers, and an unauthenticated caller gets nothing.
	resp, err := http.Get(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "missing_credential") {
		t.Fatalf("GET %s without credentials: %s %s", adminURL, resp.Status, body)
	}
	for _, f := range []string{devOperatorWITFile, devOperatorKeyFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 || st.Size() == 0 {
			t.Fatalf("%s: %v %v", f, st, err)
		}
	}

	cmds := devCommands(text)
	if len(cmds) != devCommandCount {
		t.Fatalf("want %d commands, got %q", devCommandCount, cmds)
	}
	t.Chdir(t.TempDir())
	// Another local process asks the WIT issuer for the operator's identity as the first
	// command asks for a1's: refused, for the operator is registered with its key
	// (witissuer.DevOptions.Registered); a1's identity is still had for the asking.
	asOperator := strings.Fields(strings.Replace(strings.Split(cmds[0], " > ")[0], devWorkload, devOperator, 1))[1:]
	asOperator[len(asOperator)-1] = filepath.Join(t.TempDir(), "op.jwk") // --key-out
	if asOperator[len(asOperator)-2] != "--key-out" {
		t.Fatalf("the first command does not end in --key-out: %q", cmds[0])
	}
	if o, e, code := dt(t, "", asOperator...); code == 0 || !strings.Contains(e, "unauthenticated") || o != "" {
		t.Fatalf("a WIT for %s by the dev method: exit %d: %s%s", devOperator, code, o, e)
	}
	runDevCommands(t, cmds[:3], dir) // a1's WIT, verified, and a Txn-Token in D1
	issued, err := os.ReadFile(filepath.Join(dir, "a1.txn"))
	if err != nil {
		t.Fatal(err)
	}
	// The printed link signs in, once; the page lists D1.
	cookie := devPageLogin(t, login)
	if again := devPageGet(t, login, nil); again.StatusCode != http.StatusUnauthorized || !strings.Contains(again.body, "login_code_invalid") {
		t.Fatalf("the one-time link after signing in: %s", again.Status)
	}
	if page := devPageGet(t, pageURL, cookie); page.StatusCode != http.StatusOK || !strings.Contains(page.body, ">"+devDialog+"<") {
		t.Fatalf("the operator's page: %d, D1 not listed:\n%s", page.StatusCode, page.body)
	}
	if cmds[9] != "dialogtrust revoke page --admin "+adminURL+" --wit @"+filepath.Join(dir, devOperatorWITFile)+" --key "+filepath.Join(dir, devOperatorKeyFile) {
		t.Fatalf("the tenth command: %q", cmds[9])
	}
	devPageLogin(t, strings.TrimSpace(runDevCommands(t, cmds[9:10], dir)[0]))
	revokeCmd := cmds[10]
	if !strings.HasPrefix(revokeCmd, "dialogtrust revoke --admin "+adminURL+" ") || !strings.HasSuffix(revokeCmd, " --dialog "+devDialog) {
		t.Fatalf("the eleventh command: %q", revokeCmd)
	}
	// a1 is no administrator: its own WIT and key do not revoke.
	a1 := strings.NewReplacer(filepath.Join(dir, devOperatorWITFile), filepath.Join(dir, "a1.wit"), filepath.Join(dir, devOperatorKeyFile), filepath.Join(dir, "a1.jwk"))
	if _, e, code := dt(t, "", strings.Fields(a1.Replace(revokeCmd))[1:]...); code == 0 || !strings.Contains(e, "not_authorized") {
		t.Fatalf("revoke as %s: exit %d: %s", devWorkload, code, e)
	}
	outputs := runDevCommands(t, []string{revokeCmd}, dir)
	var r revoke.Revocation
	if err := json.Unmarshal([]byte(outputs[0]), &r); err != nil || r.Kind != revoke.Dialog || r.ID != devDialog || r.By != devOperator {
		t.Fatalf("revoke printed %q: %v", outputs[0], err)
	}

	// Step 3 again: refused in D1 (within the bound: the TTS hears the change at once),
	// and another dialog still gets a Txn-Token.
	step3 := strings.Fields(strings.Split(cmds[2], " > ")[0])[1:]
	deadline := time.Now().Add(revoke.DefaultBound + 5*time.Second)
	for {
		_, e, code := dt(t, "", step3...)
		if code != 0 && strings.Contains(e, "dialog_revoked") {
			break
		}
		if code != 0 || time.Now().After(deadline) {
			t.Fatalf("a Txn-Token in the revoked dialog %s: exit %d: %s", devDialog, code, e)
		}
	}
	other := strings.Join(step3, " ")
	other = strings.Replace(other, " --dialog "+devDialog, " --dialog D3", 1)
	if _, e, code := dt(t, "", strings.Fields(other)...); code != 0 {
		t.Fatalf("a Txn-Token in dialog D3: exit %d: %s", code, e)
	}

	// The TTS's JWKS, for the checkpoints' signatures.
	jwks := filepath.Join(t.TempDir(), "tts-jwks.json")
	resp, err = http.Get(ttsURL + tts.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := os.WriteFile(jwks, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(strings.TrimSuffix(pageURL, "/admin/"), "http://"), time.Second); err == nil {
		c.Close()
		t.Errorf("the admin listener %s still accepts connections after dev stopped", pageURL)
	}

	log := filepath.Join(trail, "tts.log")
	o, e, code := dt(t, "", "audit", "verify", "--json", "--key", jwks, "--checkpoint", log+".checkpoint", log)
	var rep audit.Report
	if code != 0 || json.Unmarshal([]byte(o), &rep) != nil || !rep.SignaturesChecked || rep.Checkpoints == 0 || rep.CheckpointsVerified != rep.Checkpoints {
		t.Fatalf("audit verify: exit %d: %s%s", code, o, e)
	}
	var issuedD1, refusedD1 bool
	f, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(f, bytes.TrimSpace(issued)) {
		t.Fatal("the audit trail holds a whole Txn-Token")
	}
	sc := bufio.NewScanner(bytes.NewReader(f))
	sc.Buffer(nil, audit.MaxLine+1)
	for sc.Scan() {
		rec, err := audit.ParseRecord(sc.Bytes())
		if err != nil || rec.Dialog != devDialog || rec.Requester != devWorkload {
			continue // a checkpoint, or another record
		}
		issuedD1 = issuedD1 || rec.Decision == audit.Issued
		refusedD1 = refusedD1 || rec.Decision == audit.Refused && rec.Code == "dialog_revoked"
	}
	if !issuedD1 || !refusedD1 {
		t.Fatalf("the trail lacks D1's issuance (%v) or its refusal as revoked (%v):\n%s", issuedD1, refusedD1, f)
	}
	if _, err := os.Stat(filepath.Join(trail, "peer.log")); err != nil {
		t.Fatalf("the peer TTS's trail: %v", err)
	}
}

// copyDir copies the files of src into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Error(err)
		return
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600)
		}
		if err != nil {
			t.Error(err)
		}
	}
}

// TestIssue26DevOperatorWITRefresh: the operator's WIT is renewed halfway through what
// is left of its life, again and again, a failed renewal tried again after
// devOperatorRetry; renewal stops with dev.
func TestIssue26DevOperatorWITRefresh(t *testing.T) {
	start := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	now := start
	waits := make(chan time.Duration)
	fire := make(chan time.Time)
	after := func(d time.Duration) <-chan time.Time { waits <- d; return fire }
	renewals := make(chan error, 1)
	renew := func() (time.Time, error) {
		err := <-renewals
		return now.Add(time.Hour), err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan struct{})
	go func() {
		refreshDevOperator(ctx, start.Add(time.Hour), func() time.Time { return now }, after, renew, &stderr)
		close(done)
	}()
	if d := <-waits; d != 30*time.Minute {
		t.Fatalf("first renewal after %s, want 30m", d)
	}
	now = now.Add(30 * time.Minute)
	renewals <- errors.New("issuer down")
	fire <- now
	if d := <-waits; d != devOperatorRetry {
		t.Fatalf("after a failure, again after %s, want %s", d, devOperatorRetry)
	}
	now = now.Add(devOperatorRetry)
	renewals <- nil
	fire <- now
	if d := <-waits; d != 30*time.Minute {
		t.Fatalf("after a renewal, the next after %s, want 30m", d)
	}
	if !strings.Contains(stderr.String(), "not renewed") {
		t.Fatalf("a failed renewal is not said: %q", stderr.String())
	}
	cancel()
	<-done
}

// heldWriter keeps the services' lines, in order, until dev's own are printed, and
// never more than devHoldMax: past it they go out at once, the held ones first.
func TestIssue26DevHeldLines(t *testing.T) {
	var w bytes.Buffer
	h := holdWrites(&w)
	_, _ = h.Write([]byte("a\n"))
	_, _ = h.Write([]byte("b\n"))
	if w.Len() != 0 {
		t.Fatalf("written before release: %q", w.String())
	}
	h.release()
	_, _ = h.Write([]byte("c\n"))
	if w.String() != "a\nb\nc\n" {
		t.Fatalf("after release: %q", w.String())
	}
	w.Reset()
	h = holdWrites(&w)
	_, _ = h.Write([]byte("x\n"))
	_, _ = h.Write(bytes.Repeat([]byte("y"), devHoldMax))
	if w.Len() != 2+devHoldMax || !strings.HasPrefix(w.String(), "x\ny") {
		t.Fatalf("past the bound: %d octets written", w.Len())
	}
	var none *heldWriter
	none.release() // json: nothing held
}

// devPageAnswer is an answer of the operator's page, its body read.
type devPageAnswer struct {
	*http.Response
	body string
}

// devPageGet gets u with cookie (when set), following no redirect.
func devPageGet(t *testing.T, u string, cookie *http.Cookie) devPageAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return devPageAnswer{resp, string(b)}
}

// devPageLogin opens a one-time login link and presses its Sign in button: the link's
// GET answers the button's page (no cookie), the button's post of the code 303 to the
// page and a session cookie, which it returns.
func devPageLogin(t *testing.T, link string) *http.Cookie {
	t.Helper()
	a := devPageGet(t, link, nil)
	m := regexp.MustCompile(`name="code" value="([^"]+)"`).FindStringSubmatch(a.body)
	if a.StatusCode != http.StatusOK || m == nil || len(a.Cookies()) != 0 {
		t.Fatalf("GET %s: %s %v\n%s", link, a.Status, a.Cookies(), a.body)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	origin := u.Scheme + "://" + u.Host
	req, err := http.NewRequest(http.MethodPost, origin+"/admin/login", strings.NewReader(url.Values{"code": {html.UnescapeString(m[1])}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/" || len(resp.Cookies()) == 0 || !resp.Cookies()[0].HttpOnly {
		t.Fatalf("POST the code of %s: %s %v", link, resp.Status, resp.Cookies())
	}
	return resp.Cookies()[0]
}

// dev --open hands the operator's page's one-time link, the one it printed, to the
// browser command (here a stand-in on PATH that writes down its argument), which can
// still sign in with it.
func TestIssue26DevOpen(t *testing.T) {
	bin, got := t.TempDir(), filepath.Join(t.TempDir(), "opened")
	script := "#!/bin/sh\nprintf '%s' \"$1\" > " + shellQuote(got) + ".tmp && mv " + shellQuote(got) + ".tmp " + shellQuote(got) + "\n"
	if err := os.WriteFile(filepath.Join(bin, devBrowserCommand()), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, _, _ := startDevRun(t, devOptions{cacheDir: t.TempDir(), open: devOpener(true)})
	pm := regexp.MustCompile(`sign in once, within a minute: (http://\S+)\)`).FindStringSubmatch(out.String())
	if pm == nil {
		t.Fatalf("no login link in:\n%s", out.String())
	}
	var link []byte
	for deadline := time.Now().Add(10 * time.Second); ; {
		var err error
		if link, err = os.ReadFile(got); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // an external process's effect, not a clock
	}
	if string(link) != pm[1] {
		t.Fatalf("the browser was given %q, want the printed link %q", link, pm[1])
	}
	devPageLogin(t, string(link))
	if devOpener(false) != nil {
		t.Fatal("an opener without --open")
	}
}
