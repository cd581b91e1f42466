package console

import (
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/revoke"
)

// FuzzRenderDialog: whatever strings a trail's record holds (the dialog id, the
// workloads, the code, the operation, the hop, the reason), the dialog's page and the
// index parse to a tree with no script, no event handler or style attribute and no link
// off the page's paths, and no raw line separator or bidirectional control.
func FuzzRenderDialog(f *testing.F) {
	f.Add("D1", "wimse://a.example/agent/a1", "not_authorized", "tools/call x", "1", "runaway")
	f.Add(`"><svg onload=alert(1)>`, `<script>alert(1)</script>`, "javascript:alert(1)", "\u2028", "\u202E", `{{.}}`)
	f.Add("</title><script>", "' onmouseover='x", "</style>", "<!--", "]]>", "\x00\xff")
	pages, err := parsePages()
	if err != nil {
		f.Fatal(err)
	}
	c := &Console{pages: pages}
	f.Fuzz(func(t *testing.T, dlg, wl, code, op, hop, reason string) {
		if dlg == "" {
			return
		}
		line := func(e audit.Entry) []byte {
			e.V, e.Writer, e.Seq = audit.Version, "w", 1
			b, _ := json.Marshal(e)
			return b
		}
		entries := records([][]byte{
			line(audit.Entry{Decision: audit.Issued, Handler: "tts", Dialog: dlg, Requester: wl, ReqWL: wl, Audience: []string{op}, Scopes: []string{hop}, IssuedSHA256: code, LinkedFrom: reason}),
			line(audit.Entry{Decision: audit.Refused, Handler: audit.HandlerReceiver, Dialog: dlg, Code: code, Requester: op, Audience: []string{wl}, Operation: op, Hop: hop, SubjectSHA256: code}),
			line(audit.Entry{Decision: audit.Revoked, Handler: audit.HandlerRevocations, TargetKind: "dialog", Target: dlg, Reason: reason, Requester: wl}),
		})
		revs := []revoke.Revocation{{Kind: revoke.Dialog, ID: dlg, Reason: reason, By: wl}}
		d, _ := dialog(dlg, entries, revs)
		v := &viewer{Admin: wl, CSRF: "t", Cookie: true}
		for name, data := range map[string]any{
			"dialog.html": dialogPage{Viewer: v, Title: "Dialog " + cut(dlg, 60), Dialog: d, Found: true, ID: dlg},
			"index.html":  indexPage{Viewer: v, Title: "x", Dialogs: summaries(entries, revs), Revoked: revs},
		} {
			var b strings.Builder
			if err := c.pages.ExecuteTemplate(&b, name, data); err != nil {
				t.Fatal(err)
			}
			if strings.ContainsAny(b.String(), "\u2028\u2029\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069") {
				t.Fatalf("%s: a raw separator or bidirectional control", name)
			}
			inert(t, name, b.String())
		}
	})
}

func inert(t *testing.T, name, body string) {
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "iframe", "object", "embed", "img", "style", "base", "foreignObject", "foreignobject":
				t.Fatalf("%s: <%s>", name, n.Data)
			}
			for _, a := range n.Attr {
				switch k := strings.ToLower(a.Key); {
				case strings.HasPrefix(k, "on"), k == "style", k == "srcdoc", k == "formaction":
					t.Fatalf("%s: <%s %s>", name, n.Data, a.Key)
				case k == "href" || k == "action" || k == "src" || k == "xlink:href":
					if !strings.HasPrefix(a.Val, "/admin/") {
						t.Fatalf("%s: <%s %s=%q>", name, n.Data, a.Key, a.Val)
					}
				}
			}
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
}
