package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

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
