package interop

// The attacker's suite against the operator's page in a real browser (issue 26):
// Debian's chromium, headless, driven by chromedp as operatorpage_test.go does. The
// attacker writes the trail through the real token endpoint of a real tts binary: its
// own workload's requests with scopes that are markup, script and CSS, and audiences
// and resources (free text) that break out of attributes, styles and SVG. The operator
// opens the list and each dialog: no script runs, no JavaScript dialog opens, nothing
// is written to the console, no request leaves the page's origin, and nothing the
// attacker wrote becomes an element.

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// attackPage is an operator's page over a trail an attacker wrote, open in chromium.
type attackPage struct {
	*pageBrowser
	base    string
	browser context.Context
}

// attackerTrail starts a tts (page on, audit file) and its development wit-issuer,
// lets the attacker's workload a1 make requests in the dialogs named by asks (dialog ->
// audience, scope pairs), signs the operator in with chromium, and returns the page.
func attackerTrail(t *testing.T, ctx context.Context, cancel context.CancelFunc, asks map[string][][2]string) *attackPage {
	t.Helper()
	chromium := chromiumBinary(t)
	w := startPageTTS(t)
	ask := w.agent(t, "wimse://a.example/agent/a1", "mallory@a.example")
	for dlg, as := range asks {
		for _, a := range as {
			_ = ask(ctx, dlg, a[0], a[1])
		}
	}
	login, err := w.operator(t).NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := openChromium(t, ctx, cancel, chromium, w.dir)
	p := &attackPage{pageBrowser: b, base: w.base, browser: b.ctx}
	c, stop := context.WithTimeout(p.browser, 30*time.Second)
	defer stop()
	if err := chromedp.Do(c, signIn(login.LoginURL)...); err != nil {
		t.Fatalf("chromium: signing in: %v", err)
	}
	return p
}

func (p *attackPage) open(t *testing.T, u, wait string) {
	t.Helper()
	c, stop := context.WithTimeout(p.browser, 30*time.Second)
	defer stop()
	if err := chromedp.Do(c, chromedp.Navigate(u), chromedp.WaitReady(wait)); err != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Fatalf("chromium: %s: %v (script dialogs opened: %q)", u, err, p.alerts)
	}
}

// hostileDOM is what the test reads of a rendered page: what ran or loaded, and every
// element and attribute the attacker could have made.
const hostileDOM = `(() => {
  const bad = [];
  for (const e of document.querySelectorAll('*')) {
    const n = e.localName;
    if (['script','iframe','object','embed','img','image','foreignobject','use','animate','set','style','base','video','audio'].includes(n.toLowerCase())) bad.push('<' + n + '>');
    for (const a of e.attributes) {
      const k = a.name.toLowerCase();
      if (k.startsWith('on') || k === 'style' || k === 'src' || k === 'srcdoc' || k === 'formaction') bad.push(n + ' ' + k);
      if ((k === 'href' || k === 'action' || k === 'xlink:href') && !new URL(a.value, location.href).href.startsWith(location.origin + '/admin/')) bad.push(n + ' ' + k + '=' + a.value);
    }
  }
  const bg = getComputedStyle(document.body).backgroundImage;
  return {bad, scripts: document.scripts.length, pwned: !!window.__pwned, bg, sheets: document.styleSheets.length, text: document.body.innerText};
})()`

type hostileResult struct {
	Bad     []string `json:"bad"`
	Scripts int      `json:"scripts"`
	Pwned   bool     `json:"pwned"`
	BG      string   `json:"bg"`
	Sheets  int      `json:"sheets"`
	Text    string   `json:"text"`
}

func (p *attackPage) check(t *testing.T, what string) hostileResult {
	t.Helper()
	r, err := chromedp.Run(p.browser, chromedp.Evaluate[hostileResult](hostileDOM))
	if err != nil {
		t.Fatalf("chromium: reading %s: %v", what, err)
	}
	if len(r.Bad) != 0 || r.Scripts != 0 || r.Pwned || r.BG != "none" || r.Sheets != 1 {
		t.Errorf("%s: hostile elements %q, %d scripts, pwned %v, background %q, %d style sheets", what, r.Bad, r.Scripts, r.Pwned, r.BG, r.Sheets)
	}
	return r
}

func (p *attackPage) done(t *testing.T) {
	t.Helper()
	p.ranNothing(t, p.base, 3)
}

// TestAttackPage_HostileTrailInChromium: records the attacker wrote through the token
// endpoint, rendered in chromium, run nothing and load nothing.
func TestAttackPage_HostileTrailInChromium(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	scopes := []string{
		"<script>window.__pwned=1;alert(1)</script>", "</title><script>alert(2)</script>", "'><svg/onload=alert(3)>",
		"<img/src=x/onerror=window.__pwned=1>", "</style><style>body{background:url(//evil.example/x)}</style>", "javascript:alert(4)",
		"</text></svg><script>alert(5)</script>", "<!--", "]]><script>alert(6)</script>",
	}
	auds := []string{
		`"><svg onload=alert(7)>`, `</title></g></svg><img src=//evil.example/y onerror=alert(8)>`, "javascript:alert(9)",
		`x" style="background:url(//evil.example/z)`, "\u202Eevil\u2028line", `<a href="//evil.example/">a</a>`,
	}
	asks := map[string][][2]string{"mallory-1": {{"a.example", "trip.read"}}}
	for _, s := range scopes {
		asks["mallory-1"] = append(asks["mallory-1"], [2]string{"a.example", s})
	}
	for _, a := range auds {
		asks["mallory-2"] = append(asks["mallory-2"], [2]string{a, "trip.read"})
	}
	p := attackerTrail(t, ctx, cancel, asks)
	idx := p.check(t, "the list")
	for _, d := range []string{"mallory-1", "mallory-2"} {
		if !strings.Contains(idx.Text, d) {
			t.Errorf("the list does not show %s", d)
		}
		p.open(t, p.base+"/admin/dialogs/"+d, "#picture")
		r := p.check(t, d)
		if d == "mallory-1" && !strings.Contains(r.Text, "<script>window.__pwned=1;alert(1)</script>") {
			t.Errorf("%s: the attacker's scope is not shown as text", d)
		}
	}
	// The picture's labels, drawn and hovered (their <title>s) run nothing either.
	_, _ = chromedp.Run(p.browser, chromedp.Evaluate[bool](`(() => { for (const g of document.querySelectorAll('#picture g')) g.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})); return true })()`))
	p.check(t, "mallory-2 hovered")
	res, err := http.Get(p.base + "/admin/dialogs/" + url.PathEscape("mallory-2"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the dialog's page without the browser's session: %d", res.StatusCode)
	}
	p.done(t)
}
