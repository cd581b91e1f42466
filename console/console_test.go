package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/console"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/revoke"
)

// Issue 26 point 3: a one-time login link opens a session; the page then lists the
// trail's dialogs and draws one with its hops (one SVG column per workload, one arrow
// per record, refusals marked with their code).
func TestIssue26Point3_LoginShowsDialogsAndHops(t *testing.T) {
	w := newWorld(t, 0)
	w.write(t, dialogOf("D1")...)
	w.write(t, dialogOf("D2")...)
	b := w.signIn(t, w.admin)
	idx := get(t, b, w.base+"/admin/", nil)
	if idx.status != 200 || !strings.Contains(idx.body, `data-dialog="D1"`) || !strings.Contains(idx.body, `data-dialog="D2"`) {
		t.Fatalf("index: %d\n%s", idx.status, idx.body)
	}
	if i, j := strings.Index(idx.body, `data-dialog="D2"`), strings.Index(idx.body, `data-dialog="D1"`); i > j {
		t.Error("the most recent dialog is not listed first")
	}
	d := get(t, b, w.base+"/admin/dialogs/D1", nil)
	for _, want := range []string{
		`<g class="node" data-workload="wimse://a.example/agent/a1">`,
		`<g class="node" data-workload="wimse://a.example/agent/b1">`,
		`<g class="node" data-workload="wimse://a.example/agent/c1">`,
		`<g class="edge issued" data-from="wimse://a.example/agent/a1" data-to="wimse://a.example/agent/b1"`,
		`<g class="edge accepted" data-from="wimse://a.example/agent/a1" data-to="wimse://a.example/agent/b1"`,
		`<g class="edge refused" data-from="wimse://a.example/agent/b1" data-to="wimse://a.example/agent/c1"`,
		`not_authorized`, `hop 1`, `id="revoke"`,
	} {
		if !strings.Contains(d.body, want) {
			t.Errorf("the dialog's page lacks %s", want)
		}
	}
	if strings.Count(d.body, `<g class="edge`) != 3 {
		t.Errorf("%d arrows, want 3", strings.Count(d.body, `<g class="edge`))
	}
}

// Issue 26 point 4: the revoke button revokes the dialog through the API's own path,
// as the signed-in administrator; the page then shows it revoked, and lifting works too.
func TestIssue26Point4_RevokeFromThePage(t *testing.T) {
	w := newWorld(t, 0)
	w.write(t, dialogOf("D1")...)
	b := w.signIn(t, w.admin)
	u := w.base + "/admin/dialogs/D1"
	tok := csrf(t, b, u)
	a := post(t, b, u+"/revoke", url.Values{"csrf": {tok}, "reason": {"runaway"}, "linked": {"on"}, "ttl": {"2h"}}, map[string]string{"Origin": w.base, "Sec-Fetch-Site": "same-origin"})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/admin/dialogs/D1" {
		t.Fatalf("revoke: %d %s %s", a.status, a.code, a.body)
	}
	l := w.live(t)
	if len(l) != 1 || l[0].Kind != revoke.Dialog || l[0].ID != "D1" || !l[0].Linked || l[0].Reason != "runaway" ||
		l[0].By != w.admin.ID.String() || l[0].Expires.Sub(l[0].Created) != 2*time.Hour {
		t.Fatalf("live revocations: %+v", l)
	}
	d := get(t, b, u, nil)
	if !strings.Contains(d.body, `id="state">revoked`) || !strings.Contains(d.body, "runaway") || !strings.Contains(d.body, `id="lift"`) {
		t.Errorf("the page does not show the dialog revoked:\n%s", d.body)
	}
	if a := post(t, b, u+"/lift", url.Values{"csrf": {tok}}, map[string]string{"Origin": w.base}); a.status != http.StatusSeeOther {
		t.Fatalf("lift: %d %s", a.status, a.code)
	}
	if l := w.live(t); len(l) != 0 {
		t.Errorf("still revoked after lifting: %+v", l)
	}
}

// Issue 26 point 5: without a session or certificate, every page and form is refused
// with 401 missing_credential; a cookie the browser made up is nothing.
func TestIssue26Point5_UnauthenticatedRefused(t *testing.T) {
	w := newWorld(t, 0)
	w.write(t, dialogOf("D1")...)
	b := browser(t)
	for _, p := range []string{"/admin/", "/admin/dialogs/D1"} {
		for _, ck := range []string{"", "dialogtrust-session=forged"} {
			a := get(t, b, w.base+p, map[string]string{"Cookie": ck})
			if a.status != 401 || a.code != "missing_credential" || strings.Contains(a.body, "wimse://") {
				t.Errorf("GET %s (cookie %q): %d %s", p, ck, a.status, a.code)
			}
		}
	}
	a := post(t, b, w.base+"/admin/dialogs/D1/revoke", url.Values{"csrf": {"x"}, "reason": {"r"}}, map[string]string{"Origin": w.base})
	if a.status != 401 || a.code != "missing_credential" {
		t.Errorf("POST revoke: %d %s", a.status, a.code)
	}
	if l := w.live(t); len(l) != 0 {
		t.Errorf("revoked without a credential: %+v", l)
	}
}

// Issue 26 point 5: a login code works once, within its minute (the clock is the
// test's); a workload that is not an administrator gets no link.
func TestIssue26Point5_LoginCodeOnceAndShortLived(t *testing.T) {
	w := newWorld(t, 0)
	s, err := w.client(w.admin).NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if a := openLink(t, browser(t), s.LoginURL, nil); a.status != http.StatusSeeOther {
		t.Fatalf("first use: %d %s", a.status, a.code)
	}
	if a := openLink(t, browser(t), s.LoginURL, nil); a.status != 401 || a.code != "login_code_invalid" {
		t.Errorf("second use: %d %s", a.status, a.code)
	}
	s, _ = w.client(w.admin).NewSession(t.Context())
	w.clock.Advance(console.LoginTTL)
	if a := get(t, browser(t), s.LoginURL, nil); a.status != 401 || a.code != "login_code_invalid" {
		t.Errorf("expired: %d %s", a.status, a.code)
	}
	s, _ = w.client(w.admin).NewSession(t.Context())
	if a := get(t, browser(t), s.LoginURL, map[string]string{"Sec-Fetch-Site": "cross-site"}); a.status != 403 || a.code != "origin_not_allowed" {
		t.Errorf("a login link followed from another site: %d %s", a.status, a.code)
	}
	for _, c := range []string{"", "x", strings.Repeat("A", 43)} {
		if a := get(t, browser(t), w.base+"/admin/login?code="+c, nil); a.status != 401 || a.code != "login_code_invalid" {
			t.Errorf("code %q: %d %s", c, a.status, a.code)
		}
	}
	if _, err := w.client(w.user).NewSession(t.Context()); err == nil {
		t.Error("a workload that is no administrator got a login link")
	}
	if _, err := w.client(w.foreign).NewSession(t.Context()); err == nil {
		t.Error("another trust domain's workload got a login link")
	}
}

// Issue 26 point 5: a session ends after its lifetime (injected clock) and at sign-out.
func TestIssue26Point5_SessionExpiresAndSignsOut(t *testing.T) {
	w := newWorld(t, 0)
	b := w.signIn(t, w.admin)
	tok := csrf(t, b, w.base+"/admin/")
	if a := post(t, b, w.base+"/admin/logout", url.Values{"csrf": {tok}}, map[string]string{"Origin": w.base}); a.status != 200 {
		t.Fatalf("sign out: %d %s", a.status, a.code)
	}
	if a := get(t, b, w.base+"/admin/", nil); a.status != 401 {
		t.Errorf("after signing out: %d", a.status)
	}
	b = w.signIn(t, w.admin)
	w.clock.Advance(console.DefaultSessionTTL - time.Second)
	if a := get(t, b, w.base+"/admin/", nil); a.status != 200 {
		t.Fatalf("within the session's lifetime: %d", a.status)
	}
	w.clock.Advance(time.Second)
	if a := get(t, b, w.base+"/admin/", nil); a.status != 401 {
		t.Errorf("after the session's lifetime: %d", a.status)
	}
}

// Issue 26 point 5: session fixation. A cookie the browser held before signing in is
// never adopted: the login sets a fresh one, and the old value opens nothing.
func TestIssue26Point5_SessionFixation(t *testing.T) {
	w := newWorld(t, 0)
	s, err := w.client(w.admin).NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const planted = "attacker-chosen-session-id"
	a := openLink(t, browser(t), s.LoginURL, map[string]string{"Cookie": "dialogtrust-session=" + planted})
	if a.status != http.StatusSeeOther {
		t.Fatalf("login: %d", a.status)
	}
	var set *http.Cookie
	for _, c := range (&http.Response{Header: a.header}).Cookies() {
		if c.Name == "dialogtrust-session" {
			set = c
		}
	}
	if set == nil || set.Value == planted || len(set.Value) < 43 || !set.HttpOnly || set.SameSite != http.SameSiteStrictMode || set.Path != "/admin/" {
		t.Fatalf("the session cookie: %+v", set)
	}
	if a := get(t, browser(t), w.base+"/admin/", map[string]string{"Cookie": "dialogtrust-session=" + planted}); a.status != 401 {
		t.Errorf("the planted cookie opens the page: %d", a.status)
	}
	if a := get(t, browser(t), w.base+"/admin/", map[string]string{"Cookie": "dialogtrust-session=" + set.Value}); a.status != 200 {
		t.Errorf("the fresh cookie: %d", a.status)
	}
}

// Issue 26 point 5: CSRF. A form post from another origin, without an Origin, with a
// cross-site Sec-Fetch-Site, without the token or with another session's, another
// media type, and a JSON API call carrying only the cookie: all refused, nothing
// revoked.
func TestIssue26Point5_CSRFRefused(t *testing.T) {
	w := newWorld(t, 0)
	w.write(t, dialogOf("D1")...)
	b := w.signIn(t, w.admin)
	other := w.signIn(t, w.admin)
	u := w.base + "/admin/dialogs/D1"
	tok, otherTok := csrf(t, b, u), csrf(t, other, u)
	if tok == otherTok {
		t.Fatal("two sessions share a CSRF token")
	}
	good := url.Values{"csrf": {tok}, "reason": {"r"}}
	wrong := "x" + tok[1:] // one character off (never tok itself: tok may begin with x)
	if wrong == tok {
		wrong = "y" + tok[1:]
	}
	for _, c := range []struct {
		name   string
		form   url.Values
		hdr    map[string]string
		status int
		code   string
	}{
		{"foreign Origin", good, map[string]string{"Origin": "https://evil.example"}, 403, "origin_not_allowed"},
		{"null Origin", good, map[string]string{"Origin": "null"}, 403, "origin_not_allowed"},
		{"no Origin", good, map[string]string{"Origin": ""}, 403, "origin_not_allowed"},
		{"cross-site", good, map[string]string{"Origin": w.base, "Sec-Fetch-Site": "cross-site"}, 403, "origin_not_allowed"},
		{"same-site", good, map[string]string{"Origin": w.base, "Sec-Fetch-Site": "same-site"}, 403, "origin_not_allowed"},
		{"no token", url.Values{"reason": {"r"}}, map[string]string{"Origin": w.base}, 403, "csrf_token_invalid"},
		{"wrong token", url.Values{"csrf": {wrong}, "reason": {"r"}}, map[string]string{"Origin": w.base}, 403, "csrf_token_invalid"},
		{"another session's token", url.Values{"csrf": {otherTok}, "reason": {"r"}}, map[string]string{"Origin": w.base}, 403, "csrf_token_invalid"},
		{"two tokens", url.Values{"csrf": {tok, tok}, "reason": {"r"}}, map[string]string{"Origin": w.base}, 403, "csrf_token_invalid"},
		{"text/plain", good, map[string]string{"Origin": w.base, "Content-Type": "text/plain"}, 400, "invalid_request"},
	} {
		if a := post(t, b, u+"/revoke", c.form, c.hdr); a.status != c.status || a.code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, a.status, a.code, c.status, c.code)
		}
	}
	// The token in the query string is not read.
	if a := post(t, b, u+"/revoke?csrf="+url.QueryEscape(tok), url.Values{"reason": {"r"}}, map[string]string{"Origin": w.base}); a.status != 403 {
		t.Errorf("a token in the query string: %d", a.status)
	}
	// The JSON API with only the page's cookie.
	req, _ := http.NewRequest(http.MethodPost, w.api, strings.NewReader(`{"kind":"dialog","id":"D1","reason":"r"}`))
	req.Header.Set("Content-Type", "application/json")
	if res, _ := testkit.Do(t, b, req); res.StatusCode != 401 {
		t.Errorf("the JSON API with the page's cookie: %d", res.StatusCode)
	}
	if l := w.live(t); len(l) != 0 {
		t.Errorf("revoked by a forged request: %+v", l)
	}
}

// Issue 26 point 5: bounds. A dialog id over MaxDialogID octets, a form over MaxForm,
// and only the latest MaxRecords lines of the trail.
func TestIssue26Point5_Bounds(t *testing.T) {
	w := newWorld(t, 10)
	w.write(t, dialogOf("OLD")...)
	for range 4 {
		w.write(t, dialogOf("NEW")...)
	}
	b := w.signIn(t, w.admin)
	idx := get(t, b, w.base+"/admin/", nil)
	if strings.Contains(idx.body, `data-dialog="OLD"`) || !strings.Contains(idx.body, "latest 10 records") {
		t.Errorf("the index read more than the latest 10 records")
	}
	if a := get(t, b, w.base+"/admin/dialogs/"+strings.Repeat("d", console.MaxDialogID+1), nil); a.status != 400 || a.code != "invalid_request" {
		t.Errorf("a long dialog id: %d %s", a.status, a.code)
	}
	u := w.base + "/admin/dialogs/NEW"
	tok := csrf(t, b, u)
	if a := post(t, b, u+"/revoke", url.Values{"csrf": {tok}, "reason": {strings.Repeat("r", console.MaxForm)}}, map[string]string{"Origin": w.base}); a.status != 413 {
		t.Errorf("a form over the bound: %d %s", a.status, a.code)
	}
	if l := w.live(t); len(l) != 0 {
		t.Errorf("revoked: %+v", l)
	}
}

// Issue 26 point 5: the headers of every answer, the page's own and its refusals.
func TestIssue26Point5_SecurityHeadersEverywhere(t *testing.T) {
	w := newWorld(t, 0)
	b := w.signIn(t, w.admin)
	for _, p := range []string{"/admin/", "/admin/dialogs/x", "/admin/assets/console.css", "/admin/nope", "/admin/login?code=x"} {
		a := get(t, b, w.base+p, nil)
		h := a.header
		if h.Get("Content-Security-Policy") != console.CSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" ||
			h.Get("Cache-Control") != "no-store" || h.Get("Cross-Origin-Opener-Policy") != "same-origin" || h.Get("Cross-Origin-Resource-Policy") != "same-origin" {
			t.Errorf("%s (%d): headers %v", p, a.status, h)
		}
	}
	if a := get(t, b, w.base+"/admin/assets/console.css", nil); a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/css") {
		t.Errorf("the style sheet: %d %s", a.status, a.header.Get("Content-Type"))
	}
	if a := get(t, b, w.base+"/admin/assets/", nil); a.status != 404 || a.code != "no_route" || strings.Contains(a.body, "<pre>") {
		t.Errorf("the assets are listed: %d", a.status)
	}
}

// Issue 26 point 5: the size of a page is bounded whatever the trail holds: records
// of almost MaxLine with 8 KiB names, each of another workload, in one dialog and in
// many, and 300 live revocations.
func TestIssue26Point5_PageSizeBounded(t *testing.T) {
	w := newWorld(t, 2000)
	big := func(i int) string { return fmt.Sprintf("wimse://a.example/%05d/", i) + strings.Repeat("x", 8<<10) }
	var es []audit.Entry
	for i := range 2000 {
		dlg := "D"
		if i%2 == 1 {
			dlg = fmt.Sprintf("E%d-%s", i, strings.Repeat("y", 100))
		}
		es = append(es, audit.Entry{Decision: audit.Refused, Handler: audit.HandlerIngress, Dialog: dlg, Requester: big(i), Audience: []string{big(i + 1)},
			Code: strings.Repeat("c", 1000), Operation: big(i), Hop: big(i), LinkedFrom: big(i)})
	}
	w.write(t, es...)
	for i := range 300 {
		if err := w.store.Put(t.Context(), revoke.Revocation{Kind: revoke.Dialog, ID: fmt.Sprintf("R%d", i), Reason: strings.Repeat("r", 500), By: "x",
			Created: w.clock.Now(), Expires: w.clock.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	b := w.signIn(t, w.admin)
	for _, p := range []string{"/admin/", "/admin/dialogs/D"} {
		a := get(t, b, w.base+p, nil)
		if a.status != 200 || len(a.body) > 1<<20 || !strings.Contains(a.body, `data-dialog="E1999-`) && !strings.Contains(a.body, `<g class="edge refused"`) {
			t.Errorf("%s: %d, %d octets", p, a.status, len(a.body))
		}
		t.Logf("%s: %d octets from a trail of %d MiB", p, len(a.body), 2000*5*8/1024)
	}
}
