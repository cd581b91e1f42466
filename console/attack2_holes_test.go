package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/console"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/keys"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// A link checker or a chat's link preview asks for the login link with HEAD (an
// operator pasted it into a ticket or a chat). HEAD is a safe method (RFC 9110 section
// 9.2.1): it must not spend the one-time code, nor open a session and hand its cookie to
// whoever sent it. Before the fix, the page's "GET /admin/login" route also served HEAD
// (net/http's ServeMux): the checker got a session cookie of the administrator and the
// operator's own click then failed with login_code_invalid.
func TestAttackPage2_HeadOnALoginLinkSpendsNothing(t *testing.T) {
	w := newAtkWorld(t)
	link := w.loginURL(t, w.admin)
	bot := atkBrowser(t)
	a := do(t, bot, atkReq(t, http.MethodHead, link, nil, nil))
	if a.status < 400 {
		t.Errorf("HEAD on a login link: %d, want a refusal", a.status)
	}
	if c := a.header.Values("Set-Cookie"); len(c) != 0 {
		t.Errorf("HEAD on a login link set a cookie: %d of them", len(c))
	}
	if a.header.Get("Content-Security-Policy") == "" {
		t.Errorf("HEAD's answer lacks the page's headers")
	}
	// The operator's own click still signs in: the code was not spent.
	if a := openLink(t, atkBrowser(t), link, nil); a.status != http.StatusSeeOther {
		t.Errorf("the operator's sign-in after the checker's HEAD: %d %s, want 303", a.status, a.code)
	}
}

// The page's origin as a browser writes it in the Origin header (the WHATWG URL
// standard's serialization: scheme and host in lower case, no port when it is the
// scheme's default). An admin listener on 443 (or on 80 in development), or a
// revocations.admin.url spelled https://Admin.Example:443/admin/revocations, is an
// origin no browser sends: every form of the page (revoke, lift, sign out) was refused
// origin_not_allowed, so the operator could not revoke a runaway dialog from the page
// (seen in chromium against dialogtrust dev --admin-addr 127.0.0.1:80).
func TestAttackPage2_DefaultPortOriginIsThePagesOwn(t *testing.T) {
	for _, tc := range []struct{ base, origin string }{
		{"https://Admin.Example:443", "https://admin.example"},
		{"http://127.0.0.1:80", "http://127.0.0.1"},
		{"https://[::1]:443", "https://[::1]"},
		{"HTTPS://admin.example:8444", "https://admin.example:8444"},
	} {
		clock := testkit.NewClock(time.Now().Truncate(time.Second))
		a := testkit.NewDomain(t, "a.example", keys.ES256, clock)
		admin := a.Workload(t, "/ops/alice", keys.ES256)
		logins, err := console.NewLogins(tc.base, console.WithClock(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		if logins.Origin() != tc.origin {
			t.Errorf("%s: the page's origin is %q, a browser sends %q", tc.base, logins.Origin(), tc.origin)
		}
		st := revoke.NewMemory(revoke.WithClock(clock.Now))
		api, err := revokeapi.New(revokeapi.Config{Store: st, Signatures: httpsig.NewVerifier(a.Validator()),
			Admins: []identifier.ID{admin.ID}, TrustDomains: []string{"a.example"}, DefaultTTL: time.Hour, Now: clock.Now, Sessions: logins})
		if err != nil {
			t.Fatal(err)
		}
		page, err := console.New(console.Config{API: api, Logins: logins})
		if err != nil {
			t.Fatal(err)
		}
		h := console.Routes(api, page)
		serve := func(r *http.Request) *http.Response {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			return rec.Result()
		}
		l, err := logins.NewLogin(admin.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(l.LoginURL, tc.origin+"/admin/login?") {
			t.Errorf("%s: the login link is not on the page's origin %s", tc.base, tc.origin)
		}
		res := serve(httptest.NewRequest(http.MethodGet, l.LoginURL, nil))
		body, _ := io.ReadAll(res.Body)
		m := codeFieldRE.FindStringSubmatch(string(body))
		if res.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("%s: the login link's page: %d", tc.base, res.StatusCode)
		}
		req := httptest.NewRequest(http.MethodPost, tc.origin+"/admin/login", strings.NewReader(url.Values{"code": {html.UnescapeString(m[1])}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res = serve(req)
		cookies := res.Cookies()
		if res.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
			t.Fatalf("%s: login: %d", tc.base, res.StatusCode)
		}
		req = httptest.NewRequest(http.MethodGet, tc.origin+"/admin/dialogs/D1", nil)
		req.AddCookie(cookies[0])
		res = serve(req)
		body, _ = io.ReadAll(res.Body)
		m = csrfRE.FindStringSubmatch(string(body))
		if m == nil {
			t.Fatalf("%s: the dialog's page: %d, no csrf token", tc.base, res.StatusCode)
		}
		form := url.Values{"csrf": {html.UnescapeString(m[1])}, "reason": {"runaway"}}
		req = httptest.NewRequest(http.MethodPost, tc.origin+"/admin/dialogs/D1/revoke", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", tc.origin)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.AddCookie(cookies[0])
		res = serve(req)
		body, _ = io.ReadAll(res.Body)
		if res.StatusCode != http.StatusSeeOther {
			code := ""
			if m := codeRE.FindStringSubmatch(string(body)); m != nil {
				code = m[1]
			}
			t.Errorf("%s: the revoke button, posted with Origin %s: %d %s", tc.base, tc.origin, res.StatusCode, code)
		}
	}
}

// A dialog's "linked to" list was bounded only by the records read: 5000 records of
// dialogs linked from one made its page 1.3 MB (red team 10). Both lists of a dialog's
// page, linked from and linked to, are capped as the index is, saying how many more
// there are (distinct dialogs, counted once).
func TestAttackPage2_LinkedDialogListsAreCapped(t *testing.T) {
	w := newAtkWorld(t)
	const children, parents = 4500, 250
	var es []audit.Entry
	es = append(es, audit.Entry{Decision: audit.Issued, Handler: "tts", Dialog: "P", Requester: "wimse://a.example/agent/a1", Audience: []string{"a.example"}})
	for i := range children {
		es = append(es, audit.Entry{Decision: audit.Issued, Handler: "tts", Dialog: fmt.Sprintf("C%04d", i), LinkedFrom: "P", Requester: "wimse://a.example/agent/a1", Audience: []string{"a.example"}})
	}
	es = append(es, audit.Entry{Decision: audit.Issued, Handler: "tts", Dialog: "C0001", LinkedFrom: "P", Requester: "wimse://a.example/agent/a1"}) // counted once
	for i := range parents {
		es = append(es, audit.Entry{Decision: audit.Issued, Handler: "tts", Dialog: "Q", LinkedFrom: fmt.Sprintf("R%04d", i), Requester: "wimse://a.example/agent/a1"})
	}
	w.writeEntries(t, es...)
	b, _ := w.signedIn(t, w.admin)
	a := do(t, b, atkReq(t, http.MethodGet, w.base+"/admin/dialogs/P", nil, nil))
	if a.status != 200 {
		t.Fatalf("the dialog's page: %d %s", a.status, a.code)
	}
	if n := strings.Count(a.body, `<li class="child">`); n != 200 || !strings.Contains(a.body, fmt.Sprintf("and %d more dialogs linked to", children-200)) {
		t.Errorf("the linked-to list: %d listed, more: %v", n, strings.Contains(a.body, `id="more-children"`))
	}
	if len(a.body) > 128<<10 {
		t.Errorf("the dialog's page is %d octets", len(a.body))
	}
	a = do(t, b, atkReq(t, http.MethodGet, w.base+"/admin/dialogs/Q", nil, nil))
	if n := strings.Count(a.body, `<li class="parent">`); a.status != 200 || n != 200 || !strings.Contains(a.body, fmt.Sprintf("and %d more dialogs it was linked from", parents-200)) {
		t.Errorf("the linked-from list: %d, %d listed", a.status, n)
	}
}

// The page's forms took the first of a repeated field (two reasons, two ttls: the
// revocation recorded one, the operator or a log reader may have seen the other); the
// JSON API refuses a repeated member. A repeated field is invalid_request, and nothing
// is revoked.
func TestAttackPage2_RepeatedFormFieldIsRefused(t *testing.T) {
	w := newAtkWorld(t)
	w.writeEntries(t, atkDialog("D1")...)
	b, _ := w.signedIn(t, w.admin)
	tok := w.csrfOf(t, b, "/admin/dialogs/D1")
	urlenc := map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"}
	for name, f := range map[string]url.Values{
		"two reasons":           {"csrf": {tok}, "reason": {"routine check", "runaway agent"}},
		"two ttls":              {"csrf": {tok}, "reason": {"r"}, "ttl": {"1s", "720h"}},
		"two linked":            {"csrf": {tok}, "reason": {"r"}, "linked": {"off", "on"}},
		"a reason and an empty": {"csrf": {tok}, "reason": {"r", ""}},
	} {
		a := do(t, b, atkReq(t, http.MethodPost, w.base+"/admin/dialogs/D1/revoke", strings.NewReader(f.Encode()), urlenc))
		if a.status != 400 || a.code != "invalid_request" {
			t.Errorf("%s: %d %s, want 400 invalid_request", name, a.status, a.code)
		}
	}
	if l, _ := w.store.List(context.Background()); len(l) != 0 {
		t.Fatalf("revoked with a repeated field: %+v", l)
	}
	f := url.Values{"csrf": {tok}, "reason": {"runaway agent"}, "ttl": {"2h"}}
	if a := do(t, b, atkReq(t, http.MethodPost, w.base+"/admin/dialogs/D1/revoke", strings.NewReader(f.Encode()), urlenc)); a.status != 303 {
		t.Fatalf("the revoke form: %d %s", a.status, a.code)
	}
	tok = w.csrfOf(t, b, "/admin/dialogs/D1")
	if a := do(t, b, atkReq(t, http.MethodPost, w.base+"/admin/dialogs/D1/lift", strings.NewReader(url.Values{"csrf": {tok}, "x": {"1", "2"}}.Encode()), urlenc)); a.status != 400 || a.code != "invalid_request" {
		t.Errorf("lift with a repeated field: %d %s", a.status, a.code)
	}
	if l, _ := w.store.List(context.Background()); len(l) != 1 {
		t.Errorf("lifted with a repeated field: %+v", l)
	}
}

// An operator whose browser presents an administrator's client certificate and also
// holds a session cookie (signed in with a login link before): the page takes the
// certificate, and Sign out cleared the cookie in the browser but left its session on
// the server, where the cookie's value (copied before, or in a proxy's log) still opened
// the page for its 8 hours. Sign out ends the server's session in every case.
func TestAttackPage2_SignOutWithACertificateEndsTheCookiesSession(t *testing.T) {
	w := newTLSAtkWorld(t)
	admin := w.browser(t, w.caKey, w.caDER, "wimse://a.example/ops/alice")
	a := do(t, admin, atkReq(t, http.MethodPost, w.base+revokeapi.SessionsPath, strings.NewReader("{}"), map[string]string{"Content-Type": "application/json"}))
	var s revokeapi.Session
	if err := json.Unmarshal([]byte(a.body), &s); err != nil || s.LoginURL == "" {
		t.Fatalf("a login link over mutual TLS: %d %s", a.status, a.body)
	}
	a = openLink(t, admin, s.LoginURL, nil)
	cs := (&http.Response{Header: a.header}).Cookies()
	if a.status != http.StatusSeeOther || len(cs) != 1 {
		t.Fatalf("sign in: %d %s", a.status, a.code)
	}
	cookie := cs[0].Name + "=" + cs[0].Value
	alone := func() answer { // the cookie without the certificate
		return do(t, w.browser(t, nil, nil, ""), atkReq(t, http.MethodGet, w.base+"/admin/", nil, map[string]string{"Cookie": cookie}))
	}
	if a := alone(); a.status != 200 {
		t.Fatalf("the session's cookie alone: %d %s", a.status, a.code)
	}
	a = do(t, admin, atkReq(t, http.MethodGet, w.base+"/admin/dialogs/D1", nil, nil)) // its revoke form's token
	m := csrfRE.FindStringSubmatch(a.body)
	if a.status != 200 || !strings.Contains(a.body, "(client certificate)") || m == nil {
		t.Fatalf("the page with the certificate and the cookie: %d, certificate viewer %v", a.status, strings.Contains(a.body, "(client certificate)"))
	}
	out := do(t, admin, atkReq(t, http.MethodPost, w.base+"/admin/logout", strings.NewReader(url.Values{"csrf": {html.UnescapeString(m[1])}}.Encode()),
		map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"}))
	if out.status != 200 || !strings.Contains(strings.Join(out.header.Values("Set-Cookie"), ";"), "Max-Age=0") {
		t.Fatalf("sign out: %d %s", out.status, out.code)
	}
	if a := alone(); a.status != 401 || a.code != "missing_credential" {
		t.Errorf("the cookie after signing out: %d %s, want 401 missing_credential (the session is still on the server)", a.status, a.code)
	}
}
