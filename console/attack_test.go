package console_test

// The attacker's suite (issue 26, acceptance: "the admin API and the page are a
// boundary: an independent attack suite ... nothing may get through"). Each test is
// named after what it attacks and drives a real admin listener (httptest, the API and
// the page as console.Routes mounts them) from outside, as a browser or a script would.
// Its helpers are its own (atk...), so that it does not lean on the page's tests.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/console"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/wic"
)

// atkWorld is an admin listener (API and page) over a trail file, with its log kept.
type atkWorld struct {
	*world
	log *testkit.SyncBuffer
}

func newAtkWorld(t *testing.T) *atkWorld {
	t.Helper()
	log := &testkit.SyncBuffer{}
	return &atkWorld{world: newLoggedWorld(t, 0, slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))), log: log}
}

// writeEntries appends records as the audit writer would (v, w, seq, time filled in).
func (w *atkWorld) writeEntries(t *testing.T, es ...audit.Entry) {
	t.Helper()
	var lines [][]byte
	for _, e := range es {
		w.stamp(&e)
		lines = append(lines, e.AppendJSON(nil))
	}
	w.writeRaw(t, lines...)
}

func (w *atkWorld) loginURL(t *testing.T, wl *testkit.Workload) string {
	t.Helper()
	s, err := w.client(wl).NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.LoginURL
}

// atkBrowser keeps cookies and does not follow redirects.
func atkBrowser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (w *atkWorld) signedIn(t *testing.T, wl *testkit.Workload) (*http.Client, string) {
	t.Helper()
	b := atkBrowser(t)
	r := openLink(t, b, w.loginURL(t, wl), nil)
	if r.status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", r.status, r.code)
	}
	var cookie string
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "dialogtrust-session" {
			cookie = c.Value
		}
	}
	if cookie == "" {
		t.Fatal("no session cookie")
	}
	return b, cookie
}

func atkReq(t *testing.T, method, u string, body io.Reader, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

func (w *atkWorld) csrfOf(t *testing.T, b *http.Client, path string) string {
	t.Helper()
	a := do(t, b, atkReq(t, http.MethodGet, w.base+path, nil, nil))
	m := csrfRE.FindStringSubmatch(a.body)
	if a.status != 200 || m == nil {
		t.Fatalf("GET %s: %d, no csrf token", path, a.status)
	}
	return html.UnescapeString(m[1])
}

// pageHeaders are the headers every answer of the page carries, refusals included.
func pageHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for k, v := range map[string]string{
		"Content-Security-Policy": console.CSP, "X-Content-Type-Options": "nosniff",
		"Cache-Control": "no-store", "X-Frame-Options": "DENY",
	} {
		if h.Get(k) != v {
			t.Errorf("%s: %s is %q, want %q", what, k, h.Get(k), v)
		}
	}
	// The login code must never leave the page's origin in a Referer.
	if rp := h.Get("Referrer-Policy"); rp != "no-referrer" && rp != "same-origin" {
		t.Errorf("%s: Referrer-Policy %q", what, rp)
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || strings.Contains(h.Get("Content-Security-Policy"), "script-src") {
		t.Errorf("%s: CSP %q", what, h.Get("Content-Security-Policy"))
	}
}

func atkDialog(dlg string) []audit.Entry {
	return []audit.Entry{
		{Decision: audit.Issued, Handler: "tts", Dialog: dlg, Txn: "t1", ReqWL: "wimse://a.example/agent/a1", Requester: "wimse://a.example/agent/a1",
			Audience: []string{"wimse://a.example/agent/b1"}, Scopes: []string{"trip.read"}, IssuedSHA256: "QUFBQWlzc3VlZHRva2VuaGFzaDAwMDAwMDAwMDAwMDAw", Rule: "r0"},
		{Decision: audit.Accepted, Handler: audit.HandlerReceiver, Dialog: dlg, Requester: "wimse://a.example/agent/a1",
			Audience: []string{"wimse://a.example/agent/b1"}, Operation: "tools/call x", Hop: "1", SubjectSHA256: "QUFBQWlzc3VlZHRva2VuaGFzaDAwMDAwMDAwMDAwMDAw"},
	}
}

// Every route of the page, with every credential an outsider can bring: none, a bearer
// header, a forged cookie, the cookie of a session signed out, of a session expired
// (injected clock), an administrator's WIT with a valid HTTP signature (the page takes
// no signature), another trust domain's administrator's signature, a non-administrator's.
// Nothing is shown, nothing revoked, every refusal carries the page's headers.
func TestAttackPage_EveryRouteWithoutAValidSession(t *testing.T) {
	w := newAtkWorld(t)
	w.writeEntries(t, atkDialog("D1")...)
	// A session that signs out, and one that expires.
	out, outCookie := w.signedIn(t, w.admin)
	tok := w.csrfOf(t, out, "/admin/")
	if a := do(t, out, atkReq(t, http.MethodPost, w.base+"/admin/logout", strings.NewReader(url.Values{"csrf": {tok}}.Encode()),
		map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"})); a.status != 200 {
		t.Fatalf("sign out: %d %s", a.status, a.code)
	}
	_, oldCookie := w.signedIn(t, w.admin)
	w.clock.Advance(console.DefaultSessionTTL)
	sign := func(wl *testkit.Workload) func(*http.Request) {
		return func(r *http.Request) {
			s := httpsig.NewSigner(wl.Key, wl.WIT, httpsig.WithClock(w.clock.Now))
			if _, err := s.SignRequest(r, w.api); err != nil {
				t.Fatal(err)
			}
		}
	}
	creds := map[string]func(*http.Request){
		"none":   func(*http.Request) {},
		"bearer": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+outCookie) },
		"forged cookie": func(r *http.Request) {
			r.Header.Set("Cookie", "dialogtrust-session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		},
		"host-prefixed cookie":  func(r *http.Request) { r.Header.Set("Cookie", "__Host-dialogtrust-session="+outCookie) },
		"signed-out session":    func(r *http.Request) { r.Header.Set("Cookie", "dialogtrust-session="+outCookie) },
		"expired session":       func(r *http.Request) { r.Header.Set("Cookie", "dialogtrust-session="+oldCookie) },
		"huge cookie":           func(r *http.Request) { r.Header.Set("Cookie", "dialogtrust-session="+strings.Repeat("A", 6000)) },
		"admin's signature":     sign(w.admin),
		"foreign admin's sig":   sign(w.foreign),
		"non-admin's signature": sign(w.user),
		"cookie in the query":   func(r *http.Request) { r.URL.RawQuery = "session=" + outCookie + "&csrf=" + tok },
	}
	routes := []struct{ method, path string }{
		{"GET", "/admin/"}, {"GET", "/admin/dialogs/D1"}, {"POST", "/admin/dialogs/D1/revoke"}, {"POST", "/admin/dialogs/D1/lift"},
		{"POST", "/admin/logout"}, {"HEAD", "/admin/"}, {"GET", "/admin/dialogs/D1/revoke"},
	}
	for name, cred := range creds {
		for _, rt := range routes {
			var body io.Reader
			hdr := map[string]string{}
			if rt.method == "POST" {
				body = strings.NewReader(url.Values{"csrf": {tok}, "reason": {"r"}}.Encode())
				hdr = map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"}
			}
			req := atkReq(t, rt.method, w.base+rt.path, body, hdr)
			cred(req)
			a := do(t, http.DefaultClient, req)
			what := fmt.Sprintf("%s %s with %s", rt.method, rt.path, name)
			if a.status < 400 || strings.Contains(a.body, "wimse://a.example/agent") || strings.Contains(a.body, `name="csrf"`) {
				t.Errorf("%s: %d %s", what, a.status, a.code)
			}
			pageHeaders(t, what, a.header)
		}
	}
	if l := w.live(t); len(l) != 0 {
		t.Errorf("revoked without a valid session: %+v", l)
	}
}

// The login link (its GET, then its Sign in post): used twice, after its minute
// (injected clock), with another administrator's cookie present (the new session is the
// link's administrator's, the old one stays the other's), with a parameter added
// (?next= open redirect), over HEAD and OPTIONS (an OPTIONS spends nothing), from
// another site, and with the session cookie planted beforehand (fixation). It always
// redirects to /admin/ only, and its answer carries a Referrer-Policy that keeps the
// code on the page's origin.
func TestAttackPage_LoginLink(t *testing.T) {
	w := newAtkWorld(t)
	get := func(b *http.Client, u string, hdr map[string]string) answer {
		return do(t, b, atkReq(t, http.MethodGet, u, nil, hdr))
	}
	// open follows a link and presses its Sign in button.
	open := func(b *http.Client, link string, hdr map[string]string) answer { return openLink(t, b, link, hdr) }
	// Reuse.
	link := w.loginURL(t, w.admin)
	if a := open(atkBrowser(t), link, nil); a.status != 303 || a.header.Get("Location") != "/admin/" || (a.header.Get("Referrer-Policy") != "no-referrer" && a.header.Get("Referrer-Policy") != "same-origin") {
		t.Fatalf("first use: %d %q %q", a.status, a.header.Get("Location"), a.header.Get("Referrer-Policy"))
	}
	if a := open(atkBrowser(t), link, nil); a.status != 401 || a.code != "login_code_invalid" {
		t.Errorf("second use: %d %s", a.status, a.code)
	}
	// Expiry, one second before and at the end of the minute.
	link = w.loginURL(t, w.admin)
	w.clock.Advance(console.LoginTTL - time.Second)
	if a := open(atkBrowser(t), link, nil); a.status != 303 {
		t.Errorf("within the minute: %d %s", a.status, a.code)
	}
	link = w.loginURL(t, w.admin)
	w.clock.Advance(console.LoginTTL)
	if a := open(atkBrowser(t), link, nil); a.status != 401 || a.code != "login_code_invalid" {
		t.Errorf("after the minute: %d %s", a.status, a.code)
	}
	// Bob's link opened in a browser that holds Alice's session.
	b, aliceCookie := w.signedIn(t, w.admin)
	if a := open(b, w.loginURL(t, w.bob), nil); a.status != 303 {
		t.Fatalf("bob's link: %d %s", a.status, a.code)
	}
	if a := get(b, w.base+"/admin/", nil); !strings.Contains(a.body, w.bob.ID.String()) || strings.Contains(a.body, w.admin.ID.String()) {
		t.Errorf("after bob's link the page is not bob's")
	}
	if a := get(http.DefaultClient, w.base+"/admin/", map[string]string{"Cookie": "dialogtrust-session=" + aliceCookie}); a.status != 200 || !strings.Contains(a.body, w.admin.ID.String()) {
		t.Errorf("alice's own session changed: %d", a.status)
	}
	// Open redirects and smuggled parameters.
	for _, extra := range []string{"&next=https://evil.example/", "&next=//evil.example/", "&redirect_uri=https://evil.example", "&code=x", "&return=%2F%2Fevil.example"} {
		link := w.loginURL(t, w.admin)
		a := open(atkBrowser(t), link+extra, nil)
		if loc := a.header.Get("Location"); loc != "" && loc != "/admin/" {
			t.Errorf("%s: redirected to %q", extra, loc)
		}
		if a.status == 303 {
			t.Errorf("%s: signed in with a smuggled parameter", extra)
		}
	}
	// OPTIONS spends nothing and sets no cookie; nor does HEAD (a link checker's:
	// TestAttackPage2_HeadOnALoginLinkSpendsNothing).
	link = w.loginURL(t, w.admin)
	opt := do(t, atkBrowser(t), atkReq(t, http.MethodOptions, link, nil, nil))
	if opt.status < 400 || opt.header.Get("Set-Cookie") != "" {
		t.Errorf("OPTIONS on the login link: %d %q", opt.status, opt.header.Get("Set-Cookie"))
	}
	pageHeaders(t, "OPTIONS login", opt.header)
	if a := open(atkBrowser(t), link, nil); a.status != 303 {
		t.Errorf("the link after an OPTIONS: %d %s", a.status, a.code)
	}
	link = w.loginURL(t, w.admin)
	head := do(t, atkBrowser(t), atkReq(t, http.MethodHead, link, nil, nil))
	if head.status < 400 || head.header.Get("Set-Cookie") != "" || head.body != "" {
		t.Errorf("HEAD on the login link: %d %q", head.status, head.header.Get("Set-Cookie"))
	}
	if a := open(atkBrowser(t), link, nil); a.status != 303 {
		t.Errorf("the link after a HEAD: %d %s", a.status, a.code)
	}
	// From another site (a link on a page), or same-site (a sibling port).
	for _, site := range []string{"cross-site", "same-site"} {
		link := w.loginURL(t, w.admin)
		if a := open(atkBrowser(t), link, map[string]string{"Sec-Fetch-Site": site}); a.status != 403 || a.header.Get("Set-Cookie") != "" {
			t.Errorf("a login link opened %s: %d %s", site, a.status, a.code)
		}
	}
	// Fixation with a planted cookie: never adopted.
	link = w.loginURL(t, w.admin)
	planted := "dialogtrust-session=planted-by-the-attacker-0123456789abcdefghijk"
	a := open(atkBrowser(t), link, map[string]string{"Cookie": planted})
	if a.status != 303 || strings.Contains(a.header.Get("Set-Cookie"), "planted-by-the-attacker") {
		t.Errorf("fixation: %d %q", a.status, a.header.Get("Set-Cookie"))
	}
	if a := get(http.DefaultClient, w.base+"/admin/", map[string]string{"Cookie": planted}); a.status != 401 {
		t.Errorf("the planted cookie opens the page: %d", a.status)
	}
	// The session cookie's attributes.
	sc := (&http.Response{Header: a.header}).Cookies()
	if len(sc) != 1 || !sc[0].HttpOnly || sc[0].SameSite != http.SameSiteStrictMode || sc[0].Path != "/admin/" || sc[0].Domain != "" {
		t.Errorf("the session cookie: %+v", sc)
	}
}

// CSRF from another site: the three form encodings a page can send without script,
// a foreign, null, missing or duplicated Origin, Sec-Fetch-Site cross-site and
// same-site, another session's token, the token in the query string only, a method
// override header on a GET, the revoke URL fetched with GET, and the JSON API with
// only the page's cookie. Nothing is revoked, nothing signs the operator out.
func TestAttackPage_CSRF(t *testing.T) {
	w := newAtkWorld(t)
	w.writeEntries(t, atkDialog("D1")...)
	b, _ := w.signedIn(t, w.admin)
	other, _ := w.signedIn(t, w.bob)
	tok, otherTok := w.csrfOf(t, b, "/admin/dialogs/D1"), w.csrfOf(t, other, "/admin/dialogs/D1")
	form := url.Values{"csrf": {tok}, "reason": {"csrf"}}.Encode()
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	_ = mw.WriteField("csrf", tok)
	_ = mw.WriteField("reason", "csrf")
	_ = mw.Close()
	urlenc := "application/x-www-form-urlencoded"
	for _, path := range []string{"/admin/dialogs/D1/revoke", "/admin/logout"} {
		for _, c := range []struct {
			name string
			ct   string
			body string
			hdr  map[string]string
		}{
			{"foreign origin", urlenc, form, map[string]string{"Origin": "https://evil.example"}},
			{"sibling port", urlenc, form, map[string]string{"Origin": "http://127.0.0.1:1"}},
			{"origin with path", urlenc, form, map[string]string{"Origin": w.base + "/"}},
			{"origin case", urlenc, form, map[string]string{"Origin": strings.ToUpper(w.base)}},
			{"null origin", urlenc, form, map[string]string{"Origin": "null"}},
			{"no origin", urlenc, form, nil},
			{"referer only", urlenc, form, map[string]string{"Referer": w.base + "/admin/dialogs/D1"}},
			{"multipart", mw.FormDataContentType(), mp.String(), map[string]string{"Origin": w.base}},
			{"multipart, foreign", mw.FormDataContentType(), mp.String(), map[string]string{"Origin": "https://evil.example"}},
			{"text/plain", "text/plain", form, map[string]string{"Origin": w.base}},
			{"text/plain, foreign", "text/plain", form, map[string]string{"Origin": "https://evil.example"}},
			{"cross-site fetch", urlenc, form, map[string]string{"Origin": w.base, "Sec-Fetch-Site": "cross-site"}},
			{"same-site fetch", urlenc, form, map[string]string{"Origin": w.base, "Sec-Fetch-Site": "same-site"}},
			{"another session's token", urlenc, url.Values{"csrf": {otherTok}, "reason": {"csrf"}}.Encode(), map[string]string{"Origin": w.base}},
			{"empty token", urlenc, url.Values{"csrf": {""}, "reason": {"csrf"}}.Encode(), map[string]string{"Origin": w.base}},
			{"token prefix", urlenc, url.Values{"csrf": {tok[:len(tok)-1]}, "reason": {"csrf"}}.Encode(), map[string]string{"Origin": w.base}},
		} {
			hdr := map[string]string{"Content-Type": c.ct}
			for k, v := range c.hdr {
				hdr[k] = v
			}
			a := do(t, b, atkReq(t, http.MethodPost, w.base+path, strings.NewReader(c.body), hdr))
			if a.status < 400 {
				t.Errorf("%s %s: %d", path, c.name, a.status)
			}
			pageHeaders(t, path+" "+c.name, a.header)
		}
		// Two Origin headers, the good one first.
		req := atkReq(t, http.MethodPost, w.base+path, strings.NewReader(form), map[string]string{"Content-Type": urlenc})
		req.Header["Origin"] = []string{w.base, "https://evil.example"}
		if a := do(t, b, req); a.status < 400 {
			t.Errorf("%s two origins: %d", path, a.status)
		}
		// The token in the query string only.
		a := do(t, b, atkReq(t, http.MethodPost, w.base+path+"?csrf="+url.QueryEscape(tok)+"&reason=q", strings.NewReader("reason=q"),
			map[string]string{"Origin": w.base, "Content-Type": urlenc}))
		if a.status != 403 {
			t.Errorf("%s token in the query: %d %s", path, a.status, a.code)
		}
		// A GET that asks to be a POST.
		for _, h := range []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override"} {
			a := do(t, b, atkReq(t, http.MethodGet, w.base+path+"?csrf="+url.QueryEscape(tok)+"&reason=o", nil, map[string]string{h: "POST", "Origin": w.base}))
			if a.status < 400 {
				t.Errorf("%s GET with %s: %d", path, h, a.status)
			}
		}
		// A POST with _method=DELETE does not lift: there is nothing to lift; it must
		// not be treated as anything but the route's own action.
	}
	// The JSON API with only the cookie, with the page's origin and same-origin fetch.
	for _, m := range []string{http.MethodPost, http.MethodDelete, http.MethodGet} {
		var body io.Reader
		if m == http.MethodPost {
			body = strings.NewReader(`{"kind":"dialog","id":"D1","reason":"cookie"}`)
		}
		u := w.api
		if m == http.MethodDelete {
			u += "?kind=dialog&id=D1"
		}
		a := do(t, b, atkReq(t, m, u, body, map[string]string{"Content-Type": "application/json", "Origin": w.base, "Sec-Fetch-Site": "same-origin",
			"X-CSRF-Token": tok}))
		if a.status != 401 && a.status != 403 {
			t.Errorf("the JSON API (%s) with only the page's cookie: %d %s", m, a.status, a.code)
		}
	}
	if a := do(t, b, atkReq(t, http.MethodPost, w.base+revokeapi.SessionsPath, strings.NewReader(`{}`), map[string]string{"Content-Type": "application/json"})); a.status != 401 {
		t.Errorf("a login link asked for with only the page's cookie: %d %s", a.status, a.code)
	}
	if l := w.live(t); len(l) != 0 {
		t.Errorf("revoked by a forged request: %+v", l)
	}
	if a := do(t, b, atkReq(t, http.MethodGet, w.base+"/admin/", nil, nil)); a.status != 200 {
		t.Errorf("the operator was signed out by a forged request: %d", a.status)
	}
}

// hostile strings an attacker places in the trail (through its own token requests:
// scopes, audiences, resources, request ids) and an operator may type as a reason.
var hostile = []string{
	`<script>alert(1)</script>`,
	`</title><script>alert(1)</script>`,
	`"><svg onload=alert(1)>`,
	`'><img src=x onerror=alert(1)>`,
	`javascript:alert(1)`,
	` javascript:alert(1)`,
	`data:text/html,<script>alert(1)</script>`,
	`</style><style>*{background:url(https://evil.example/x)}</style>`,
	`x;background:url(//evil.example/leak)`,
	`url(https://evil.example/x)`,
	"line\u2028sep\u2029para",
	"\u202Etxt.exe\u202C\u2066\u2069\u200B",
	"nul\x00byte",
	"bad\xff\xfeutf8",
	`{{.Viewer.CSRF}}`,
	`]]><!--<script>alert(1)</script>-->`,
	`<![CDATA[<script>alert(1)</script>]]>`,
	`&lt;script&gt;alert(1)&lt;/script&gt;`,
	`<a href="https://evil.example/">click</a>`,
	`<foreignObject><iframe src="https://evil.example"></iframe></foreignObject>`,
	`<use href="https://evil.example/x.svg#a"/>`,
	`<animate attributeName="href" to="javascript:alert(1)"/>`,
	strings.Repeat("W", 64<<10),
}

// checkHostile walks a page with golang.org/x/net/html's tokenizer and tree: no script,
// no element that loads or embeds, no event handler, style or other dangerous
// attribute, no link or action off /admin/, no raw control, separator or bidirectional
// character in the text, and the <svg> part parses as XML.
func checkHostile(t *testing.T, what, body string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(body))
	var open []string // elements opened and not yet closed: the page is well-formed
	void := map[string]bool{"meta": true, "link": true, "input": true, "br": true, "hr": true, "img": true, "wbr": true, "col": true, "area": true, "base": true, "source": true}
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Errorf("%s: tokenizer: %v", what, z.Err())
			}
			if len(open) != 0 && strings.HasPrefix(body, "<!DOCTYPE html>") {
				t.Errorf("%s: elements left open: %q", what, open)
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken:
			if !void[tok.Data] {
				open = append(open, tok.Data)
			}
		case html.EndTagToken:
			if n := len(open); n == 0 || open[n-1] != tok.Data {
				t.Errorf("%s: </%s> closes %q", what, tok.Data, open)
			} else {
				open = open[:n-1]
			}
		}
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			switch strings.ToLower(tok.Data) {
			case "script", "iframe", "object", "embed", "img", "foreignobject", "style", "base", "use", "image", "animate", "set", "a" + "nimatetransform", "frame", "video", "audio", "source", "link":
				// The page's own style sheet and icon, under /admin/assets/, and nothing else.
				if !(tok.Data == "link" && (attrOf(tok, "rel") == "stylesheet" || attrOf(tok, "rel") == "icon") && strings.HasPrefix(attrOf(tok, "href"), "/admin/assets/") &&
					!strings.Contains(attrOf(tok, "href"), "..")) {
					t.Errorf("%s: element <%s>", what, tok.Data)
				}
			case "meta":
				if attrOf(tok, "http-equiv") != "" {
					t.Errorf("%s: <meta http-equiv>", what)
				}
			}
			for _, a := range tok.Attr {
				k := strings.ToLower(a.Key)
				switch {
				case strings.HasPrefix(k, "on"), k == "style", k == "srcdoc", k == "formaction", k == "src", k == "srcset", k == "ping", k == "background":
					t.Errorf("%s: <%s %s=%q>", what, tok.Data, a.Key, cutT(a.Val))
				case k == "href" || k == "action" || k == "xlink:href":
					// Absolute paths stay under /admin/; a relative one (the assets'
					// listing) has no scheme and no authority.
					abs := strings.HasPrefix(a.Val, "/") || strings.HasPrefix(a.Val, "\\")
					if abs && (!strings.HasPrefix(a.Val, "/admin/") || strings.HasPrefix(a.Val, "/admin//")) ||
						!abs && strings.Contains(strings.SplitN(a.Val, "/", 2)[0], ":") {
						t.Errorf("%s: <%s %s=%q> leaves the page's paths", what, tok.Data, a.Key, cutT(a.Val))
					}
				case k == "marker-end":
					if a.Val != "url(#arrow)" && a.Val != "url(#arrow-refused)" {
						t.Errorf("%s: marker-end=%q", what, cutT(a.Val))
					}
				}
			}
		case html.TextToken:
			if strings.ContainsAny(tok.Data, "\u2028\u2029\u202E\u202C\u2066\u2069\u200B\x00") {
				t.Errorf("%s: a raw separator, bidirectional or NUL character in the text", what)
			}
		}
	}
	if strings.Contains(body, "\xff") || !utf8Valid(body) {
		t.Errorf("%s: invalid UTF-8 in the page", what)
	}
	if i := strings.Index(body, "<svg"); i >= 0 {
		j := strings.Index(body[i:], "</svg>")
		if j < 0 {
			t.Errorf("%s: unterminated <svg>", what)
			return
		}
		d := xmlDecoder(body[i : i+j+len("</svg>")])
		for {
			if _, err := d.Token(); err != nil {
				if err != io.EOF {
					t.Errorf("%s: the picture is not well-formed XML: %v", what, err)
				}
				break
			}
		}
	}
}

func attrOf(tok html.Token, k string) string {
	for _, a := range tok.Attr {
		if a.Key == k {
			return a.Val
		}
	}
	return ""
}

func cutT(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// XSS and injection through the trail: records with every attacker-chosen member set
// to a hostile string (as the token endpoint records an attacker's own requests:
// scopes, audiences, request ids; and as a hostile line in the file), and revocations
// whose reasons are the hostile strings typed by an operator. Every page (the index,
// each dialog, the revocations list, the error pages) stays inert and well-formed.
func TestAttackPage_XSSThroughTrailAndReasons(t *testing.T) {
	w := newAtkWorld(t)
	w.writeEntries(t, atkDialog("D1")...)
	for i, p := range hostile {
		dlg := fmt.Sprintf("X%d", i)
		w.writeEntries(t,
			audit.Entry{Decision: audit.Refused, Handler: "tts", Code: "invalid_request", Dialog: dlg, RequestID: p, Scopes: []string{p, p}, Audience: []string{p, p}, Rule: p},
			audit.Entry{Decision: audit.Issued, Handler: "tts", Dialog: dlg, Requester: p, ReqWL: p, Audience: []string{p}, Scopes: []string{p}, LinkedFrom: p, Txn: p, Subject: p, IssuedSHA256: p},
			audit.Entry{Decision: audit.Refused, Handler: audit.HandlerIngress, Dialog: dlg, Code: p, Requester: p, Peer: p, Operation: p, Hop: p, SubjectSHA256: p},
			audit.Entry{Decision: audit.Issued, Handler: "tts", Dialog: p, Requester: p, Audience: []string{"wimse://a.example/agent/b1"}},
		)
		// A line written by hand: raw invalid UTF-8 and a NUL inside JSON strings.
		w.writeRaw(t, []byte(fmt.Sprintf(`{"v":1,"w":"tts-1","seq":%d,"time":"2026-01-01T00:00:00Z","decision":"refused","handler":"tts","dlg":"%s","requester":"a\u0000b\xff<script>","aud":["\xfe<svg onload=alert(1)>"]}`, 100000+i, dlg)))
	}
	b, _ := w.signedIn(t, w.admin)
	for i, p := range hostile {
		dlg := fmt.Sprintf("X%d", i)
		tok := w.csrfOf(t, b, "/admin/dialogs/"+dlg)
		a := do(t, b, atkReq(t, http.MethodPost, w.base+"/admin/dialogs/"+dlg+"/revoke", strings.NewReader(url.Values{"csrf": {tok}, "reason": {p}}.Encode()),
			map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"}))
		pageHeaders(t, "revoke "+dlg, a.header)
		checkHostile(t, "revoke answer "+dlg, a.body)
		// A revocation made through the API with the hostile reason, when valid.
		_, _ = w.client(w.admin).Revoke(context.Background(), revokeapi.Request{Kind: revoke.Txn, ID: cutT(p), Reason: cutT(p)})
	}
	pages := []string{"/admin/", "/admin/dialogs/D1"}
	for i, p := range hostile {
		pages = append(pages, fmt.Sprintf("/admin/dialogs/X%d", i))
		if len(p) < 200 {
			pages = append(pages, "/admin/dialogs/"+url.PathEscape(p))
		}
	}
	for _, pg := range pages {
		a := do(t, b, atkReq(t, http.MethodGet, w.base+pg, nil, nil))
		if a.status >= 500 {
			t.Errorf("%s: %d", pg, a.status)
		}
		pageHeaders(t, pg, a.header)
		checkHostile(t, pg, a.body)
		if len(a.body) > 2<<20 {
			t.Errorf("%s: %d octets", pg, len(a.body))
		}
	}
}

// Path tricks on /admin/dialogs/: dot segments, an encoded slash, NUL, double
// encoding, a newline (log injection), a very long id, a trailing path. No answer is a
// 5xx, every one carries the page's headers, no redirect leaves the page's paths, and
// the log holds one well-formed JSON record per line (no id breaks a line).
func TestAttackPage_PathTricksAndLogInjection(t *testing.T) {
	w := newAtkWorld(t)
	w.writeEntries(t, atkDialog("D1")...)
	b, _ := w.signedIn(t, w.admin)
	tok := w.csrfOf(t, b, "/admin/dialogs/D1")
	paths := []string{
		"/admin/dialogs/..", "/admin/dialogs/../", "/admin/dialogs/..%2F..%2Fadmin%2F", "/admin/dialogs/%2e%2e", "/admin/dialogs/a%2Fb",
		"/admin/dialogs/%00", "/admin/dialogs/D1%00x", "/admin/dialogs/%252F", "/admin/dialogs/%25252e", "/admin/dialogs/x%0Aforged%3D1%0Alevel%3DERROR",
		"/admin/dialogs/x%0D%0ASet-Cookie:%20a=b", "/admin/dialogs/" + strings.Repeat("d", 300), "/admin/dialogs/" + strings.Repeat("%41", 3000),
		"/admin/dialogs/D1/", "/admin/dialogs/D1/x", "/admin/dialogs//D1", "//evil.example/admin/", "/admin/..//evil.example", "/admin/./dialogs/D1",
		"/admin//evil.example/%2e%2e", "/admin/assets/../console.go", "/admin/assets/",
		"/admin/dialogs/%E2%80%AE", "/admin/dialogs/%FF%FE",
	}
	for _, p := range paths {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			u := w.base + p
			var body io.Reader
			hdr := map[string]string{}
			if m == http.MethodPost {
				u = strings.TrimSuffix(u, "/") + "/revoke"
				body = strings.NewReader(url.Values{"csrf": {tok}, "reason": {"path"}}.Encode())
				hdr = map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"}
			}
			req, err := http.NewRequest(m, u, body)
			if err != nil {
				continue
			}
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			a := do(t, b, req)
			what := m + " " + cutT(p)
			if a.status >= 500 {
				t.Errorf("%s: %d", what, a.status)
			}
			if loc := a.header.Get("Location"); loc != "" {
				if strings.HasPrefix(loc, "//") || strings.Contains(loc, "evil.example") && !strings.HasPrefix(loc, "/") || strings.ContainsAny(loc, "\r\n") {
					t.Errorf("%s: redirected to %q", what, loc)
				}
			}
			if a.header.Get("Set-Cookie") != "" {
				t.Errorf("%s: a cookie was set: %q", what, a.header.Get("Set-Cookie"))
			}
			if strings.Contains(a.body, "package console") {
				t.Errorf("%s: served a source file", what)
			}
			pageHeaders(t, what, a.header)
			if a.status/100 != 3 { // the mux's own redirect body names the cleaned path
				checkHostile(t, what, a.body)
			}
		}
	}
	for _, r := range w.live(t) {
		if strings.ContainsAny(r.ID, "\x00\r\n") {
			t.Errorf("revoked an id with a control character: %q", r.ID)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(w.log.String()))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("a log line is not one record: %q", cutT(sc.Text()))
			continue
		}
		for k, v := range m {
			if s, ok := v.(string); ok && (strings.ContainsAny(s, "\r\n") || len(s) > 4<<10) {
				t.Errorf("log member %s carries %q", k, cutT(s))
			}
		}
	}
	if n == 0 {
		t.Error("nothing was logged: the refusals must be")
	}
}

// Revoking another trust domain's workload, or anything but a dialog, from the page;
// the API refuses another domain's workload to revoke and to lift; a dialog id is
// revoked in this domain's store only, as a dialog.
func TestAttackPage_RevokeAnotherDomainsWorkload(t *testing.T) {
	w := newAtkWorld(t)
	w.writeEntries(t, atkDialog("D1")...)
	b, _ := w.signedIn(t, w.admin)
	tok := w.csrfOf(t, b, "/admin/dialogs/D1")
	hdr := map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"}
	for _, p := range []string{"/admin/workloads/wimse:%2F%2Fb.example%2Fagent%2Fx/revoke", "/admin/txns/t1/revoke", "/admin/revocations/revoke", "/admin/dialogs/D1/revoke/x"} {
		a := do(t, b, atkReq(t, http.MethodPost, w.base+p, strings.NewReader(url.Values{"csrf": {tok}, "reason": {"x"}}.Encode()), hdr))
		if a.status != 404 {
			t.Errorf("POST %s: %d %s", p, a.status, a.code)
		}
	}
	// Smuggled kind and id in the form: the path's dialog is revoked, as a dialog.
	a := do(t, b, atkReq(t, http.MethodPost, w.base+"/admin/dialogs/D1/revoke",
		strings.NewReader(url.Values{"csrf": {tok}, "reason": {"x"}, "kind": {"workload"}, "id": {"wimse://b.example/agent/x"}, "by": {"wimse://a.example/ops/bob"}}.Encode()), hdr))
	if a.status != 303 {
		t.Fatalf("revoke: %d %s", a.status, a.code)
	}
	if l := w.live(t); len(l) != 1 || l[0].Kind != revoke.Dialog || l[0].ID != "D1" || l[0].By != w.admin.ID.String() {
		t.Errorf("stored %+v", l)
	}
	// The dialog id of a workload of another domain: it is a dialog id, not a workload.
	a = do(t, b, atkReq(t, http.MethodPost, w.base+"/admin/dialogs/"+url.PathEscape("wimse://b.example/agent/x")+"/revoke",
		strings.NewReader(url.Values{"csrf": {tok}, "reason": {"x"}}.Encode()), hdr))
	for _, r := range w.live(t) {
		if r.Kind != revoke.Dialog {
			t.Errorf("the page revoked a %s: %+v", r.Kind, r)
		}
	}
	ctx := context.Background()
	for _, id := range []string{"wimse://b.example/agent/x", "spiffe://b.example/agent/x", "wimse://A.EXAMPLE.evil/agent/x", "wimse://a.example.b.example/x", "wimse://b.example/../a.example/x"} {
		if _, err := w.client(w.admin).Revoke(ctx, revokeapi.Request{Kind: revoke.Workload, ID: id, Reason: "x"}); err == nil {
			t.Errorf("the API revoked workload %s", id)
		}
		if _, err := w.client(w.admin).Lift(ctx, revoke.Workload, id); err == nil {
			t.Errorf("the API lifted workload %s", id)
		}
	}
	// Another domain's administrator, whose WITs this TTS trusts, is nobody here.
	if _, err := w.client(w.foreign).Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "D2", Reason: "x"}); err == nil {
		t.Error("another domain's administrator revoked a dialog")
	}
	if _, err := w.client(w.foreign).NewSession(ctx); err == nil {
		t.Error("another domain's administrator got a login link")
	}
	if _, err := w.client(w.user).NewSession(ctx); err == nil {
		t.Error("a workload that is no administrator got a login link")
	}
	for _, r := range w.live(t) {
		if r.Kind == revoke.Workload {
			t.Errorf("stored %+v", r)
		}
	}
}

// DoS: login links are bounded (an administrator's script cannot fill memory; an
// expired link frees its place, injected clock), sessions are bounded (the oldest goes),
// a huge trail is read bounded, and a dialog's page stays bounded however big its
// records are.
func TestAttackPage_Bounds(t *testing.T) {
	w := newAtkWorld(t)
	first, _ := w.signedIn(t, w.admin)
	n := 0
	for ; n < 2000; n++ {
		if _, err := w.logins.NewLogin(w.admin.ID); err != nil {
			break
		}
	}
	if n >= 2000 {
		t.Errorf("%d login links outstanding", n)
	}
	w.clock.Advance(console.LoginTTL)
	if _, err := w.client(w.admin).NewSession(context.Background()); err != nil {
		t.Errorf("after the links expired: %v", err)
	}
	// Sessions: the page's own sign-ins, bounded.
	s := 0
	for ; s < 3000; s++ {
		if s%200 == 0 {
			w.clock.Advance(console.LoginTTL)
		}
		l, err := w.logins.NewLogin(w.admin.ID)
		if err != nil {
			t.Fatal(err)
		}
		if a := openLink(t, atkBrowser(t), l.LoginURL, nil); a.status != 303 {
			t.Fatalf("login %d: %d", s, a.status)
		}
		if s > 0 && s%256 == 0 {
			if a := do(t, first, atkReq(t, http.MethodGet, w.base+"/admin/", nil, nil)); a.status != 200 {
				break // the oldest went: sessions are bounded
			}
		}
	}
	if s >= 3000 {
		t.Errorf("%d sessions held", s)
	}
	// A big trail: 40 MiB, with maximal token endpoint records (scope and parameters of
	// 1 KiB, the endpoint's bounds) in one dialog.
	big := strings.Repeat("s ", 500)
	par := strings.Repeat("p", 1000)
	e := audit.Entry{Decision: audit.Refused, Handler: "tts", Code: "invalid_request", Dialog: "BIG", Requester: "wimse://a.example/" + par, RequestID: par,
		Scopes: strings.Fields(big), Audience: []string{par, par + "2"}, SubjectSHA256: par}
	var lines [][]byte
	for i := 0; i < 12000; i++ {
		lines = append(lines, e.AppendJSON(nil))
	}
	w.writeRaw(t, lines...)
	b, _ := w.signedIn(t, w.admin)
	for _, p := range []string{"/admin/", "/admin/dialogs/BIG"} {
		a := do(t, b, atkReq(t, http.MethodGet, w.base+p, nil, nil))
		if a.status != 200 || len(a.body) > 4<<20 {
			t.Errorf("%s over a big trail: %d, %d octets", p, a.status, len(a.body))
		}
	}
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

// xmlDecoder reads the picture as XML, with the HTML entities html/template writes.
func xmlDecoder(s string) *xml.Decoder {
	d := xml.NewDecoder(strings.NewReader(s))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	return d
}

// tlsAtkWorld is an admin listener over TLS: administrators may present a workload
// identity certificate of the CA the listener trusts (mutual TLS, no cookie needed).
type tlsAtkWorld struct {
	base   string
	store  *revoke.Memory
	srv    *httptest.Server
	caKey  *ecdsa.PrivateKey
	caDER  []byte
	api    string
	logins *console.Logins
}

func newTLSAtkWorld(t *testing.T) *tlsAtkWorld {
	t.Helper()
	now := time.Now()
	w := &tlsAtkWorld{store: revoke.NewMemory()}
	// The anchors of client certificates name their trust domain (revokeapi.CertBundles).
	var ca *x509.Certificate
	w.caKey, w.caDER, ca = testkit.NewTrustDomainCA(t, "a.example", now.Add(-time.Hour), now.Add(time.Hour))
	w.srv = httptest.NewUnstartedServer(nil)
	w.base = "https://" + w.srv.Listener.Addr().String()
	w.api = w.base + revokeapi.Path
	logins, err := console.NewLogins(w.base)
	if err != nil {
		t.Fatal(err)
	}
	w.logins = logins
	api, err := revokeapi.New(revokeapi.Config{Store: w.store, CertRoots: []*x509.Certificate{ca},
		Admins: []identifier.ID{identifier.MustParse("wimse://a.example/ops/alice")}, TrustDomains: []string{"a.example"}, DefaultTTL: time.Hour, Sessions: logins})
	if err != nil {
		t.Fatal(err)
	}
	page, err := console.New(console.Config{API: api, Logins: logins})
	if err != nil {
		t.Fatal(err)
	}
	w.srv.Config.Handler = console.Routes(api, page)
	testkit.StartClientCertTLS(t, w.srv)
	return w
}

// browser presents the certificate of id issued by caKey/caDER (none when caKey is nil).
func (w *tlsAtkWorld) browser(t *testing.T, caKey *ecdsa.PrivateKey, caDER []byte, id string) *http.Client {
	t.Helper()
	var certs []tls.Certificate
	if caKey != nil {
		now := time.Now()
		certs = append(certs, testkit.NewWICCert(t, caKey, caDER, id, now.Add(-time.Hour), now.Add(time.Hour)))
	}
	tr := testkit.ClientCertTransport(w.srv, certs...)
	jar, _ := cookiejar.New(nil)
	return &http.Client{Transport: tr, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Mutual TLS on the page: another CA's certificate naming the administrator, this CA's
// certificate for another trust domain's administrator or for a workload that is not an
// administrator, and no certificate: the page opens for none of them, and none revokes.
// The administrator's certificate opens it, but a cross-site form post with that
// certificate (a browser sends it to any site's form) is refused, and so is another
// certificate's CSRF token. Under TLS the login cookie is __Host-, Secure, Path=/.
func TestAttackPage_MutualTLS(t *testing.T) {
	w := newTLSAtkWorld(t)
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherDER, err := wic.NewCA(otherKey, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	urlenc := map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"}
	for name, b := range map[string]*http.Client{
		"another CA's administrator":      w.browser(t, otherKey, otherDER, "wimse://a.example/ops/alice"),
		"b.example's /ops/alice":          w.browser(t, w.caKey, w.caDER, "wimse://b.example/ops/alice"),
		"a workload, no administrator":    w.browser(t, w.caKey, w.caDER, "wimse://a.example/agent/a1"),
		"an administrator's sibling path": w.browser(t, w.caKey, w.caDER, "wimse://a.example/ops/alice/x"),
		"no certificate":                  w.browser(t, nil, nil, ""),
	} {
		for _, rt := range [][2]string{{"GET", "/admin/"}, {"GET", "/admin/dialogs/D1"}, {"POST", "/admin/dialogs/D1/revoke"}} {
			var body io.Reader
			if rt[0] == "POST" {
				body = strings.NewReader("csrf=x&reason=y")
			}
			a := do(t, b, atkReq(t, rt[0], w.base+rt[1], body, urlenc))
			if a.status < 400 || strings.Contains(a.body, `name="csrf"`) {
				t.Errorf("%s %s with %s: %d", rt[0], rt[1], name, a.status)
			}
			pageHeaders(t, name+" "+rt[1], a.header)
		}
		req := atkReq(t, http.MethodPost, w.base+revokeapi.SessionsPath, strings.NewReader("{}"), map[string]string{"Content-Type": "application/json"})
		if a := do(t, b, req); a.status < 400 {
			t.Errorf("%s got a login link: %d", name, a.status)
		}
	}
	admin := w.browser(t, w.caKey, w.caDER, "wimse://a.example/ops/alice")
	a := do(t, admin, atkReq(t, http.MethodGet, w.base+"/admin/dialogs/D1", nil, nil))
	m := csrfRE.FindStringSubmatch(a.body)
	if a.status != 200 || m == nil {
		t.Fatalf("the administrator's certificate: %d", a.status)
	}
	tok := html.UnescapeString(m[1])
	other := w.browser(t, w.caKey, w.caDER, "wimse://a.example/ops/alice") // the same administrator, another certificate
	for name, c := range map[string]struct {
		b    *http.Client
		hdr  map[string]string
		form string
	}{
		"cross-site":           {admin, map[string]string{"Origin": "https://evil.example", "Content-Type": "application/x-www-form-urlencoded"}, url.Values{"csrf": {tok}, "reason": {"x"}}.Encode()},
		"no origin":            {admin, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, url.Values{"csrf": {tok}, "reason": {"x"}}.Encode()},
		"no token":             {admin, urlenc, url.Values{"reason": {"x"}}.Encode()},
		"another cert's token": {other, urlenc, url.Values{"csrf": {tok}, "reason": {"x"}}.Encode()},
		"text/plain":           {admin, map[string]string{"Origin": w.base, "Content-Type": "text/plain"}, url.Values{"csrf": {tok}, "reason": {"x"}}.Encode()},
	} {
		if a := do(t, c.b, atkReq(t, http.MethodPost, w.base+"/admin/dialogs/D1/revoke", strings.NewReader(c.form), c.hdr)); a.status < 400 {
			t.Errorf("%s: %d", name, a.status)
		}
	}
	if l, _ := w.store.List(context.Background()); len(l) != 0 {
		t.Fatalf("revoked: %+v", l)
	}
	if a := do(t, admin, atkReq(t, http.MethodPost, w.base+"/admin/dialogs/D1/revoke", strings.NewReader(url.Values{"csrf": {tok}, "reason": {"x"}}.Encode()), urlenc)); a.status != 303 {
		t.Errorf("the administrator's own form post: %d %s", a.status, a.code)
	}
	// The login link's cookie under TLS.
	a = do(t, admin, atkReq(t, http.MethodPost, w.base+revokeapi.SessionsPath, strings.NewReader("{}"), map[string]string{"Content-Type": "application/json"}))
	var s revokeapi.Session
	if err := json.Unmarshal([]byte(a.body), &s); err != nil || s.LoginURL == "" {
		t.Fatalf("a login link over mutual TLS: %d %s", a.status, a.body)
	}
	a = openLink(t, w.browser(t, nil, nil, ""), s.LoginURL, nil)
	cs := (&http.Response{Header: a.header}).Cookies()
	if a.status != 303 || len(cs) != 1 || cs[0].Name != "__Host-dialogtrust-session" || !cs[0].Secure || !cs[0].HttpOnly || cs[0].Path != "/" || cs[0].Domain != "" ||
		cs[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("the session cookie under TLS: %d %+v", a.status, cs)
	}
}

// One login link opened by many browsers at once (a link leaked to a chat whose
// previews race the operator): every GET only shows the Sign in page, and of the Sign in
// posts that race, exactly one opens a session.
func TestAttackPage_LoginLinkRace(t *testing.T) {
	w := newAtkWorld(t)
	for range 5 {
		link := w.loginURL(t, w.admin)
		code := ""
		if u, err := url.Parse(link); err == nil {
			code = u.Query().Get("code")
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, shown := 0, 0
		for range 24 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := atkBrowser(t)
				res, err := b.Get(link)
				if err != nil {
					return
				}
				res.Body.Close()
				opened := res.StatusCode == http.StatusOK && len(res.Cookies()) == 0
				req, err := http.NewRequest(http.MethodPost, w.base+"/admin/login", strings.NewReader(url.Values{"code": {code}}.Encode()))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Origin", w.base)
				res, err = b.Do(req)
				if err != nil {
					return
				}
				res.Body.Close()
				mu.Lock()
				defer mu.Unlock()
				if opened {
					shown++
				}
				if res.StatusCode == http.StatusSeeOther && len(res.Cookies()) > 0 {
					won++
				}
			}()
		}
		wg.Wait()
		if won != 1 {
			t.Errorf("one login link opened %d sessions", won)
		}
		if shown == 0 {
			t.Errorf("no GET of the link showed its Sign in page")
		}
	}
}
