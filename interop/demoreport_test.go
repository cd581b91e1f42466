package interop

// The HTML report of `dialogtrust demo --report FILE`, opened in a real browser:
// Debian's chromium, headless, driven over the DevTools protocol by
// github.com/chromedp/chromedp (pinned in this module's go.mod; kept out of the core
// module). The same run's `--json` says which hops and checks there were; the test
// reads the rendered page's DOM and requires each of them to be there and visible,
// marked with its result, the topology's SVG to have been laid out, and the page to
// have asked the network for nothing. Without chromium the test skips, except under
// CI=true, where it fails (.ci/run installs Debian's chromium).

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/interop/internal/proc"
)

// demoJSON is what the test reads of `demo --json`: the hops and the checks.
type demoJSON struct {
	Hops []struct {
		From, To        string
		CrossesBoundary bool `json:"crosses_boundary"`
	} `json:"hops"`
	Checks []struct {
		Step         int
		Name, Result string
	} `json:"checks"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

// domItem is one hop or check as the rendered page shows it.
type domItem struct {
	From    string  `json:"from"`
	To      string  `json:"to"`
	Name    string  `json:"name"`
	Result  string  `json:"result"`
	Mark    string  `json:"mark"`
	Visible bool    `json:"visible"`
	Width   float64 `json:"width"`
}

type domReport struct {
	Title     string    `json:"title"`
	SVGWidth  float64   `json:"svgWidth"`
	SVGHeight float64   `json:"svgHeight"`
	Arrows    []domItem `json:"arrows"`
	Rows      []domItem `json:"rows"`
	Checks    []domItem `json:"checks"`
	Counts    string    `json:"counts"`
	Scripts   int       `json:"scripts"`
}

// readDOM runs in the page: what is on it, and whether each element is rendered (it
// has a box, and neither it nor an ancestor hides it).
const readDOM = `(() => {
  const visible = el => {
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) return false;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || s.opacity === '0') return false;
    }
    return true;
  };
  const svg = document.getElementById('topology');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  return {
    title: document.title,
    svgWidth: box.width, svgHeight: box.height,
    arrows: [...document.querySelectorAll('#topology g.hop-arrow')].map(g => ({
      from: g.dataset.from, to: g.dataset.to, visible: visible(g.querySelector('line.arrow')) || g.getBBox().width > 0,
      width: g.querySelector('line.arrow').getBBox().width})),
    rows: [...document.querySelectorAll('#hops tr.hop')].map(tr => ({from: tr.dataset.from, to: tr.dataset.to, visible: visible(tr)})),
    checks: [...document.querySelectorAll('li.check')].map(li => ({
      name: li.querySelector('.name').textContent, result: li.dataset.result,
      mark: li.querySelector('.mark').textContent, visible: visible(li.querySelector('.name')) && visible(li.querySelector('.mark'))})),
    counts: (document.getElementById('counts') || {}).textContent,
    scripts: document.scripts.length,
  };
})()`

func chromiumBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testkit.PeerMissing(t, "chromium is not installed (apt-get install chromium)")
	return ""
}

// TestIssue24Point9_DemoReportInChromium: the acceptance of issue 24 point 9.
func TestIssue24Point9_DemoReportInChromium(t *testing.T) {
	chromium := chromiumBinary(t)
	bin := filepath.Join(proc.BuildBinaries(t, "github.com/dialogtrust/dialogtrust/cmd/dialogtrust"), "dialogtrust")
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "demo", "--json", "--report", page)
	cmd.Dir, cmd.Env = dir, proc.BaseEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("dialogtrust demo --json --report: %v\n%s", err, out)
	}
	var run demoJSON
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("--json: %v", err)
	}
	if len(run.Hops) == 0 || len(run.Checks) == 0 || run.Failed != 0 {
		t.Fatalf("the run: %d hops, %d checks, %d failed", len(run.Hops), len(run.Checks), run.Failed)
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(dir, "profile")), chromedp.WindowSize(1280, 1000))...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()

	// Every request the page makes: the report itself (file://) and nothing else.
	var mu sync.Mutex
	var requests []string
	if err := chromedp.Listen(browser, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			requests = append(requests, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if err := chromedp.Do(browser, chromedp.Navigate("file://"+page), chromedp.WaitVisible("#counts")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom, err := chromedp.Run(browser, chromedp.Evaluate[domReport](readDOM))
	if err != nil {
		t.Fatalf("chromium: reading the page: %v", err)
	}
	shot, err := chromedp.Run(browser, chromedp.FullScreenshot(80))
	if err != nil {
		t.Fatalf("chromium: screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.jpg"), shot, 0o600); err != nil {
		t.Fatal(err)
	}

	if !strings.HasPrefix(dom.Title, "dialogtrust demo: ") || dom.SVGWidth < 400 || dom.SVGHeight < 100 || len(shot) < 10_000 || dom.Scripts != 0 {
		t.Errorf("the page did not render: title %q, SVG %.0fx%.0f, screenshot %d bytes, %d scripts", dom.Title, dom.SVGWidth, dom.SVGHeight, len(shot), dom.Scripts)
	}
	if want := "passed, 0 failed"; !strings.Contains(dom.Counts, want) {
		t.Errorf("counts %q", dom.Counts)
	}
	if len(dom.Arrows) != len(run.Hops) || len(dom.Rows) != len(run.Hops) {
		t.Fatalf("%d hops in the run, %d arrows and %d rows on the page", len(run.Hops), len(dom.Arrows), len(dom.Rows))
	}
	for i, h := range run.Hops {
		a, r := dom.Arrows[i], dom.Rows[i]
		if a.From != h.From || a.To != h.To || r.From != h.From || r.To != h.To {
			t.Errorf("hop %d %s → %s: the page shows arrow %s → %s, row %s → %s", i, h.From, h.To, a.From, a.To, r.From, r.To)
		}
		if !a.Visible || a.Width <= 0 || !r.Visible {
			t.Errorf("hop %d %s → %s is not visible (arrow %v, %.0f wide; row %v)", i, h.From, h.To, a.Visible, a.Width, r.Visible)
		}
	}
	if len(dom.Checks) != len(run.Checks) {
		t.Fatalf("%d checks in the run, %d on the page", len(run.Checks), len(dom.Checks))
	}
	marks := map[string]string{"passed": "✓ passed", "failed": "✗ FAILED", "skipped": "– skipped"}
	for i, c := range run.Checks {
		d := dom.Checks[i]
		if d.Name != c.Name || d.Result != c.Result || d.Mark != marks[c.Result] || !d.Visible {
			t.Errorf("check %d %q (%s): the page shows %q (%s, mark %q, visible %v)", i, c.Name, c.Result, d.Name, d.Result, d.Mark, d.Visible)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range requests {
		if !strings.HasPrefix(u, "file://") {
			t.Errorf("the report made a request to %s", u)
		}
	}
	if len(requests) == 0 {
		t.Error("no request seen at all: the network listener saw nothing, so the check above proves nothing")
	}
}
