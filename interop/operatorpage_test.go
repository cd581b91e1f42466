package interop

// The operator's page (issue 26), opened in a real browser: Debian's chromium, headless,
// driven by chromedp (as demoreport_test.go does). A real tts binary (with the
// development wit-issuer for its workloads' WITs) keeps an audit trail in a file and
// serves the page beside its revocations admin API. The test makes a dialog through the
// token endpoint (tokens issued, one refused), asks the admin API for a login link with
// the operator's own WIT and HTTP signature (revokeapi.Client.NewSession), opens it in
// chromium, reads the list and the dialog's picture from the rendered DOM, revokes the
// dialog by filling the reason and clicking the button, and checks that the next token
// request in the dialog is refused with dialog_revoked and the page shows it revoked.
// A dialog id and a reason an attacker chose are shown as text: no script runs, no
// dialog opens, the page makes no request off its origin. Without chromium the test
// skips, except under CI=true, where it fails.

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/witissuer"
)

// pageDOM is what the test reads of a rendered page.
type pageDOM struct {
	Title    string   `json:"title"`
	Dialogs  []string `json:"dialogs"`
	Revoked  []string `json:"revoked"`
	Nodes    []string `json:"nodes"`
	Edges    []string `json:"edges"`
	SVGW     float64  `json:"svgW"`
	State    string   `json:"state"`
	DialogID string   `json:"dialogID"`
	Reasons  []string `json:"reasons"`
	Scripts  int      `json:"scripts"`
	Pwned    bool     `json:"pwned"`
	Admin    string   `json:"admin"`
	Code     string   `json:"code"`
}

const readPage = `(() => {
  const all = (sel, f) => [...document.querySelectorAll(sel)].map(f);
  const svg = document.getElementById('picture');
  return {
    title: document.title,
    dialogs: all('#dialogs tr.dialog', tr => tr.dataset.dialog),
    revoked: all('#dialogs tr.dialog.revoked', tr => tr.dataset.dialog),
    nodes: all('#picture g.node', g => g.dataset.workload),
    edges: all('#picture g.edge', g => g.classList[1] + ' ' + g.dataset.from + ' ' + g.dataset.to),
    svgW: svg ? svg.getBoundingClientRect().width : 0,
    state: (document.getElementById('state') || {}).textContent || '',
    dialogID: (document.getElementById('dialog-id') || {}).textContent || '',
    reasons: all('q.reason, #revocations td:nth-child(4)', e => e.textContent),
    scripts: document.scripts.length,
    pwned: !!window.__pwned,
    admin: (document.getElementById('admin') || {}).textContent || '',
    code: (document.getElementById('error') || {dataset: {}}).dataset.code || '',
  };
})()`

// devWorkload is a WIT of the development wit-issuer at witURL for id, and its key.
func devWorkload(t *testing.T, witURL, id string) (string, *keys.PrivateKey) {
	t.Helper()
	ctx := context.Background()
	key, err := keys.Generate(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	wc, _, err := witissuer.NewClient(ctx, nil, witURL)
	if err != nil {
		t.Fatal(err)
	}
	wc.Subject = id
	w, err := wc.Request(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return w.WIT, key
}

// TestIssue26_OperatorPageInChromium: the acceptance of issue 26's page.
func TestIssue26_OperatorPageInChromium(t *testing.T) {
	chromium := chromiumBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := startPageTTS(t)
	dir, base := w.dir, w.base

	// The dialog: a1 gets two Txn-Tokens in it for a.example; a request for another
	// trust domain's audience is refused.
	const dlg = "trip-7f3c9a2e"
	a1 := "wimse://a.example/agent/a1"
	ask := w.agent(t, a1, "alice@a.example")
	request := func(audience string) error { return ask(ctx, dlg, audience, "trip.read") }
	for range 2 {
		if err := request("a.example"); err != nil {
			t.Fatal(err)
		}
	}
	if err := request("b.example"); err == nil {
		t.Fatal("a Txn-Token for another trust domain")
	}

	// The operator: a login link through the admin API, with the operator's own WIT
	// and signature; and an attacker's dialog id and reason, revoked through the API.
	api := w.operator(t)
	const evilID = `"><svg onload=window.__pwned=1;alert(1)>`
	const evilReason = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=1;alert(1)</script>` + "\u202E"
	if _, err := api.Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: evilID, Reason: evilReason}); err != nil {
		t.Fatal(err)
	}
	login, err := api.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}

	pb := openChromium(t, ctx, cancel, chromium, dir)
	browser := pb.ctx
	// step bounds one browser step: a page that does not show what is awaited fails
	// the test in 30 seconds, not at the test's deadline.
	step := func() context.Context {
		c, stop := context.WithTimeout(browser, 30*time.Second)
		t.Cleanup(stop)
		return c
	}
	read := func(u, wait string) pageDOM {
		t.Helper()
		if err := chromedp.Do(step(), chromedp.Navigate(u), chromedp.WaitVisible(wait)); err != nil {
			pb.mu.Lock()
			defer pb.mu.Unlock()
			t.Fatalf("chromium: %s: %v (script dialogs opened: %q)", u, err, pb.alerts)
		}
		dom, err := chromedp.Run(browser, chromedp.Evaluate[pageDOM](readPage))
		if err != nil {
			t.Fatalf("chromium: reading %s: %v", u, err)
		}
		return dom
	}

	// The login link shows its Sign in button and spends nothing: the browser has no
	// session yet (the list is 401), and the link opened again still shows the button.
	if got := read(login.LoginURL, "#sign-in"); got.Code != "" || got.Admin != "" || got.Scripts != 0 {
		t.Fatalf("the login link's page: %+v", got)
	}
	if got := read(base+"/admin/", "#error"); got.Code != "missing_credential" {
		t.Errorf("after opening the login link, before its Sign in button, the list answers %q", got.Code)
	}
	// Its Sign in button lands on the list, which shows the dialog.
	if err := chromedp.Do(step(), signIn(login.LoginURL)...); err != nil {
		t.Fatalf("chromium: signing in: %v", err)
	}
	idx, err := chromedp.Run(browser, chromedp.Evaluate[pageDOM](readPage))
	if err != nil {
		t.Fatalf("chromium: reading the list: %v", err)
	}
	if loc, _ := chromedp.Run(browser, chromedp.Location()); loc != base+"/admin/" {
		t.Errorf("after the login link, the browser is at %s", loc)
	}
	if !slices.Contains(idx.Dialogs, dlg) || idx.Admin != "wimse://a.example/ops/alice" {
		t.Fatalf("the list: %+v", idx)
	}
	if !slices.Contains(idx.Reasons, evilReason[:len(evilReason)-3]+`\u202e`) {
		t.Errorf("the attacker's reason is not shown as text: %q", idx.Reasons)
	}

	// The dialog's picture: a column per workload, an arrow per record.
	d := read(base+"/admin/dialogs/"+dlg, "#picture")
	if !slices.Contains(d.Nodes, a1) || !slices.Contains(d.Nodes, "a.example") || !slices.Contains(d.Nodes, "b.example") || d.SVGW < 400 {
		t.Errorf("the picture's workloads: %q (%.0f wide)", d.Nodes, d.SVGW)
	}
	want := []string{"issued " + a1 + " a.example", "issued " + a1 + " a.example", "refused " + a1 + " b.example"}
	if strings.Join(d.Edges, "|") != strings.Join(want, "|") || d.State != "live" {
		t.Errorf("the picture's hops: %q (state %q), want %q", d.Edges, d.State, want)
	}
	shot, err := chromedp.Run(browser, chromedp.FullScreenshot(80))
	if err == nil {
		_ = os.WriteFile(filepath.Join(dir, "dialog.jpg"), shot, 0o600)
		if p := os.Getenv("DIALOGTRUST_PAGE_SHOT"); p != "" {
			_ = os.WriteFile(p, shot, 0o600)
		}
	}

	// Revoke from the page: fill the reason, click.
	if err := chromedp.Do(step(), chromedp.SendKeys("#reason", "runaway agent"), chromedp.Click("#revoke-button"), chromedp.WaitVisible("#lift")); err != nil {
		code, _ := chromedp.Run(browser, chromedp.Evaluate[string](`(document.getElementById('error') || {dataset: {}}).dataset.code || ''`))
		t.Fatalf("chromium: revoking: %v (the page says %q)", err, code)
	}
	after, err := chromedp.Run(browser, chromedp.Evaluate[pageDOM](readPage))
	if err != nil {
		t.Fatal(err)
	}
	if after.State != "revoked" || !slices.Contains(after.Reasons, "runaway agent") {
		t.Errorf("after revoking, the page shows %q, reasons %q", after.State, after.Reasons)
	}
	deadline := time.Now().Add(10 * time.Second) // a failure deadline: the loop waits for the store's notice
	for err = request("a.example"); !errcode.Is(err, errcode.DialogRevoked); err = request("a.example") {
		if time.Now().After(deadline) {
			t.Fatalf("a token in the dialog revoked from the page: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if l, err := api.List(ctx); err != nil || !revokedBy(l, dlg, "wimse://a.example/ops/alice", "runaway agent") {
		t.Errorf("the admin API lists %+v, %v", l, err)
	}
	if idx := read(base+"/admin/", "#dialogs"); !slices.Contains(idx.Revoked, dlg) {
		t.Errorf("the list does not mark the dialog revoked: %q", idx.Revoked)
	}

	// The attacker's dialog id: its page shows it as text, and nothing ran.
	evil := read(base+"/admin/dialogs/"+url.PathEscape(evilID), "#dialog-id")
	if evil.DialogID != evilID || evil.State != "revoked" {
		t.Errorf("the attacker's dialog: id %q, state %q", evil.DialogID, evil.State)
	}
	for _, p := range []pageDOM{idx, d, after, evil} {
		if p.Scripts != 0 || p.Pwned {
			t.Errorf("%s: %d scripts, pwned %v", p.Title, p.Scripts, p.Pwned)
		}
	}
	pb.ranNothing(t, base, 5)
}

func revokedBy(l []revoke.Revocation, id, by, reason string) bool {
	for _, r := range l {
		if r.Kind == revoke.Dialog && r.ID == id && r.By == by && r.Reason == reason {
			return true
		}
	}
	return false
}
