package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/dialogtrust/dialogtrust/oauth"
)

// resolve is what a browser does with a link or a form action of the page at base:
// RFC 3986 section 5.2 (dot segments removed).
func resolve(t *testing.T, page, ref string) string {
	t.Helper()
	b, err := url.Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatalf("%q: %v", ref, err)
	}
	return b.ResolveReference(r).EscapedPath()
}

// A runaway agent names its dialog "." or ".." (both valid dialog ids: the grammar is
// [A-Za-z0-9._~:-]{1,128}, oauth.ValidDialog) so that the operator cannot open or
// revoke it from the page: its link on the index must lead to its own page, and that
// page's revoke form must post to its own revoke route, once a browser has resolved
// them (dot segments removed).
func TestAttackPage_DotSegmentDialogIDsCanBeOpenedAndRevoked(t *testing.T) {
	w := newAtkWorld(t)
	for _, dlg := range []string{".", "..", "...", ".~"} {
		if !oauth.ValidDialog(dlg) {
			t.Fatalf("%q is not a valid dialog id: the attack needs one", dlg)
		}
		w.writeEntries(t, atkDialog(dlg)...)
	}
	b, _ := w.signedIn(t, w.admin)
	idx := do(t, b, atkReq(t, http.MethodGet, w.base+"/admin/", nil, nil))
	doc, err := html.Parse(strings.NewReader(idx.body))
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{} // dialog -> href on the index
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "tr" && attr(n, "data-dialog") != "" {
			var a func(*html.Node) string
			a = func(m *html.Node) string {
				if m.Type == html.ElementNode && m.Data == "a" && attr(m, "class") == "dlg" {
					return attr(m, "href")
				}
				for c := m.FirstChild; c != nil; c = c.NextSibling {
					if h := a(c); h != "" {
						return h
					}
				}
				return ""
			}
			links[attr(n, "data-dialog")] = a(n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for _, dlg := range []string{".", "..", "..."} {
		href, ok := links[dlg]
		if !ok {
			t.Errorf("dialog %q is not on the index", dlg)
			continue
		}
		target := resolve(t, w.base+"/admin/", href)
		a := do(t, b, atkReq(t, http.MethodGet, w.base+target, nil, nil))
		if a.status/100 == 3 {
			a = do(t, b, atkReq(t, http.MethodGet, w.base+resolve(t, w.base+target, a.header.Get("Location")), nil, nil))
		}
		d, _ := html.Parse(strings.NewReader(a.body))
		if got := text(find(d, "dialog-id")); a.status != 200 || got != dlg {
			t.Errorf("dialog %q: its link %q leads a browser to %s, which shows %q (%d)", dlg, href, target, got, a.status)
			continue
		}
		form := find(d, "revoke")
		if form == nil {
			t.Errorf("dialog %q: no revoke form", dlg)
			continue
		}
		action := resolve(t, w.base+target, attr(form, "action"))
		tok := w.csrfOf(t, b, target)
		r := do(t, b, atkReq(t, http.MethodPost, w.base+action, strings.NewReader(url.Values{"csrf": {tok}, "reason": {"runaway"}}.Encode()),
			map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"}))
		revoked := false
		for _, l := range w.live(t) {
			revoked = revoked || l.ID == dlg
		}
		if !revoked {
			t.Errorf("dialog %q: its revoke form posts to %s (%d %s) and the dialog is not revoked", dlg, action, r.status, r.code)
		}
	}
}

// The answers of the assets' file server to a path it refuses keep every header of the
// page: an error is an answer of the page too (http.FileServer's error path drops
// Cache-Control).
func TestAttackPage_AssetErrorsKeepThePageHeaders(t *testing.T) {
	w := newAtkWorld(t)
	for _, p := range []string{"/admin/assets/..%2f..%2fconsole.go", "/admin/assets/%2e%2e/console.go", "/admin/assets/nope.css", "/admin/assets/%00"} {
		a := do(t, http.DefaultClient, atkReq(t, http.MethodGet, w.base+p, nil, nil))
		if a.status < 400 {
			t.Errorf("%s: %d", p, a.status)
		}
		pageHeaders(t, p, a.header)
	}
}
