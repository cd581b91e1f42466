package interop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAttackPage_DotSegmentDialogInChromium: a runaway agent names its dialog ".."
// (a valid dialog id: [A-Za-z0-9._~:-]{1,128}) through the real token endpoint. In
// chromium, the operator clicks it on the list: the browser must land on that dialog's
// page (its id shown, a revoke button), not on the list (dot segments resolved away).
func TestAttackPage_DotSegmentDialogInChromium(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := attackerTrail(t, ctx, cancel, map[string][][2]string{"..": {{"a.example", "trip.read"}}, ".": {{"a.example", "trip.read"}}})
	for _, dlg := range []string{"..", "."} {
		p.open(t, p.base+"/admin/", "#dialogs")
		sel := `#dialogs tr.dialog[data-dialog="` + dlg + `"] a.dlg`
		c, stop := context.WithTimeout(p.browser, 30*time.Second)
		err := chromedp.Do(c, chromedp.Click(sel), chromedp.Sleep(0))
		stop()
		if err != nil {
			t.Fatalf("chromium: clicking %q: %v", dlg, err)
		}
		c, stop = context.WithTimeout(p.browser, 30*time.Second)
		_ = chromedp.Do(c, chromedp.WaitReady("main"))
		stop()
		got, err := chromedp.Run(p.browser, chromedp.Evaluate[string](`location.pathname + ' | ' + ((document.getElementById('dialog-id') || {}).textContent || '') + ' | ' + !!document.getElementById('revoke-button')`))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(got, " | "+dlg+" | true") {
			t.Errorf("dialog %q clicked on the list: the browser shows %q (path | dialog | revoke button)", dlg, got)
		}
	}
	p.done(t)
}
