package console_test

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/console"
)

// payloads an attacker chooses as dialog ids, workload names, codes, operations and
// reasons: markup, attribute breaks, script URLs, line separators, a right-to-left
// override, template syntax, a very long string.
var payloads = []string{
	`<script>alert(1)</script>`,
	`"><svg onload=alert(1)>`,
	`' onmouseover='alert(1)`,
	`javascript:alert(1)`,
	"a\u2028b\u2029c</title><script>alert(1)</script>",
	"\u202Egnp.exe",
	`{{.Viewer.CSRF}}`,
	`</style><img src=x onerror=alert(1)>`,
	strings.Repeat("<b>long", 800),
}

// Issue 26 point 5: XSS. Records whose every string is an attacker's payload, and a
// revocation whose reason is one, render as text: the parsed pages hold no script, no
// event handler attribute, no style attribute, no link or form action off the page's
// own paths, no raw line separator or bidirectional override; the CSP header stays.
func TestIssue26Point5_XSSThroughTheTrailRendersAsText(t *testing.T) {
	w := newWorld(t, 0)
	for _, p := range payloads {
		w.write(t,
			audit.Entry{Decision: audit.Issued, Handler: "tts", Dialog: p, LinkedFrom: p, ReqWL: p, Requester: p, Audience: []string{p}, Scopes: []string{p}, Rule: p, Txn: p, IssuedSHA256: p},
			audit.Entry{Decision: audit.Refused, Handler: audit.HandlerReceiver, Dialog: p, Code: p, Requester: p, Audience: []string{"wimse://a.example/x"}, Operation: p, Hop: p, SubjectSHA256: p},
			audit.Entry{Decision: audit.Revoked, Handler: audit.HandlerRevocations, TargetKind: "dialog", Target: p, Reason: p, Requester: p},
		)
	}
	b := w.signIn(t, w.admin)
	pages := []string{"/admin/"}
	for _, p := range payloads {
		u := w.base + "/admin/dialogs/" + url.PathEscape(p)
		if len(p) <= console.MaxDialogID {
			tok := csrf(t, b, u)
			if a := post(t, b, u+"/revoke", url.Values{"csrf": {tok}, "reason": {p}}, map[string]string{"Origin": w.base}); a.status != 303 {
				t.Errorf("revoking %q: %d %s", p, a.status, a.code)
			}
		}
		pages = append(pages, "/admin/dialogs/"+url.PathEscape(p))
	}
	pages = append(pages, "/admin/")
	for _, pg := range pages {
		a := get(t, b, w.base+pg, nil)
		if a.header.Get("Content-Security-Policy") != console.CSP {
			t.Errorf("%s: CSP %q", pg, a.header.Get("Content-Security-Policy"))
		}
		if strings.ContainsAny(a.body, "\u2028\u2029\u202E") {
			t.Errorf("%s: a raw line separator or bidirectional override", pg)
		}
		checkInert(t, pg, a.body)
		if len(a.body) > 4<<20 {
			t.Errorf("%s: %d octets", pg, len(a.body))
		}
	}
	// The payload is shown, as text.
	a := get(t, b, w.base+"/admin/dialogs/"+url.PathEscape(payloads[1]), nil)
	doc, _ := html.Parse(strings.NewReader(a.body))
	if got := text(find(doc, "dialog-id")); got != payloads[1] {
		t.Errorf("the dialog id shows as %q", got)
	}
}

// checkInert walks a page's parsed tree.
func checkInert(t *testing.T, page, body string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	svgs := 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch strings.ToLower(n.Data) {
			case "script", "iframe", "object", "embed", "img", "foreignobject", "style", "base", "meta":
				if !(n.Data == "meta" && (attr(n, "charset") != "" || attr(n, "name") == "viewport" || attr(n, "name") == "referrer")) {
					t.Errorf("%s: a <%s> element", page, n.Data)
				}
			case "svg":
				svgs++
			}
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				switch {
				case strings.HasPrefix(k, "on"), k == "style", k == "srcdoc", k == "formaction":
					t.Errorf("%s: <%s %s=%q>", page, n.Data, a.Key, a.Val)
				case k == "href" || k == "action" || k == "src" || k == "xlink:href":
					if !strings.HasPrefix(a.Val, "/admin/") {
						t.Errorf("%s: <%s %s=%q> leaves the page's paths", page, n.Data, a.Key, a.Val)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if svgs > 1 {
		t.Errorf("%s: %d <svg> elements, the page draws one", page, svgs)
	}
}

func attr(n *html.Node, k string) string {
	for _, a := range n.Attr {
		if a.Key == k {
			return a.Val
		}
	}
	return ""
}

func find(n *html.Node, id string) *html.Node {
	if n == nil {
		return nil
	}
	if n.Type == html.ElementNode && attr(n, "id") == id {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, id); f != nil {
			return f
		}
	}
	return nil
}

func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(text(c))
	}
	return b.String()
}
