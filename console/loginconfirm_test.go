package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/console"
)

// The red team's finding (session 10): a login link's GET spent the one-time code and
// set an administrator's session cookie, so whatever fetched the link first (a chat's
// link unfurler, a link checker, a proxy's prefetch) was signed in, and the operator's
// own click failed with login_code_invalid. The GET now only shows a page whose Sign in
// button posts the code; these tests hold that.

// loginCode is the code of the Sign in form of a login link's page (GET link, 200).
func loginCode(t *testing.T, c *http.Client, link string) string {
	t.Helper()
	a := get(t, c, link, nil)
	m := codeFieldRE.FindStringSubmatch(a.body)
	if a.status != http.StatusOK || m == nil {
		t.Fatalf("the login link's page: %d %s", a.status, a.code)
	}
	return m[1]
}

// signInPost is the Sign in button's post of code, with hdr (an empty value deletes
// the header).
func (w *world) signInPost(t *testing.T, c *http.Client, form url.Values, hdr map[string]string) answer {
	t.Helper()
	h := map[string]string{"Origin": w.base, "Sec-Fetch-Site": "same-origin"}
	for k, v := range hdr {
		h[k] = v
	}
	return post(t, c, w.base+"/admin/login", form, h)
}

func TestLoginLinkGETSpendsNothingAndSetsNoCookie(t *testing.T) {
	w := newWorld(t, 0)
	s, err := w.client(w.admin).NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// A chat's unfurler and a proxy's prefetch, then the operator: each GET answers the
	// same Sign in page, with the page's headers, and no cookie.
	for _, who := range []string{"unfurler", "prefetch", "operator"} {
		bot := browser(t)
		a := get(t, bot, s.LoginURL, nil)
		if a.status != http.StatusOK || len(a.header.Values("Set-Cookie")) != 0 {
			t.Fatalf("%s's GET: %d, %d cookies set", who, a.status, len(a.header.Values("Set-Cookie")))
		}
		if a.header.Get("Content-Security-Policy") != console.CSP || a.header.Get("Cache-Control") != "no-store" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
			t.Errorf("%s's GET: the page's headers are missing: %v", who, a.header)
		}
		if !strings.Contains(a.body, `<form id="login" method="post" action="/admin/login">`) || !strings.Contains(a.body, `id="sign-in"`) || strings.Contains(a.body, "<script") {
			t.Errorf("%s's GET: no Sign in form:\n%s", who, a.body)
		}
		if a := get(t, bot, w.base+"/admin/", nil); a.status != http.StatusUnauthorized {
			t.Errorf("%s is signed in after a GET of the link: %d", who, a.status)
		}
	}
	// The operator's Sign in button, after all those GETs: signed in.
	b := browser(t)
	a := w.signInPost(t, b, url.Values{"code": {loginCode(t, b, s.LoginURL)}}, nil)
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/admin/" || len(a.header.Values("Set-Cookie")) != 1 {
		t.Fatalf("the Sign in button after the GETs: %d %s", a.status, a.code)
	}
	if a := get(t, b, w.base+"/admin/", nil); a.status != http.StatusOK || !strings.Contains(a.body, w.admin.ID.String()) {
		t.Errorf("the page after signing in: %d %s", a.status, a.code)
	}
	// Spent: the link's GET is now refused as before.
	if a := get(t, browser(t), s.LoginURL, nil); a.status != http.StatusUnauthorized || a.code != "login_code_invalid" {
		t.Errorf("the link's GET after the sign-in: %d %s", a.status, a.code)
	}
}

func TestLoginPOSTFromAnotherOriginOrWithoutOneIsRefusedAndSpendsNothing(t *testing.T) {
	w := newWorld(t, 0)
	s, err := w.client(w.admin).NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	code := loginCode(t, browser(t), s.LoginURL)
	for name, hdr := range map[string]map[string]string{
		"a foreign Origin":                 {"Origin": "https://evil.example"},
		"a foreign Origin, no fetch data":  {"Origin": "https://evil.example", "Sec-Fetch-Site": ""},
		"a null Origin":                    {"Origin": "null"},
		"no Origin":                        {"Origin": ""},
		"no Origin, no fetch data":         {"Origin": "", "Sec-Fetch-Site": ""},
		"cross-site Sec-Fetch-Site":        {"Sec-Fetch-Site": "cross-site"},
		"same-site Sec-Fetch-Site":         {"Sec-Fetch-Site": "same-site"},
		"Sec-Fetch-Site none (typed post)": {"Sec-Fetch-Site": "none"},
	} {
		b := browser(t)
		a := w.signInPost(t, b, url.Values{"code": {code}}, hdr)
		if a.status != http.StatusForbidden || a.code != "origin_not_allowed" || len(a.header.Values("Set-Cookie")) != 0 {
			t.Errorf("%s: %d %s, want 403 origin_not_allowed", name, a.status, a.code)
		}
	}
	// Nothing was spent: the operator's own post signs in.
	if a := w.signInPost(t, browser(t), url.Values{"code": {code}}, nil); a.status != http.StatusSeeOther {
		t.Errorf("the operator's post after the refused ones: %d %s", a.status, a.code)
	}
}

func TestLoginPOSTSpendsTheCodeOnce(t *testing.T) {
	w := newWorld(t, 0)
	s, err := w.client(w.admin).NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	code := loginCode(t, browser(t), s.LoginURL)
	if a := w.signInPost(t, browser(t), url.Values{"code": {code}}, nil); a.status != http.StatusSeeOther || len(a.header.Values("Set-Cookie")) != 1 {
		t.Fatalf("first post: %d %s", a.status, a.code)
	}
	if a := w.signInPost(t, browser(t), url.Values{"code": {code}}, nil); a.status != http.StatusUnauthorized || a.code != "login_code_invalid" || len(a.header.Values("Set-Cookie")) != 0 {
		t.Errorf("second post: %d %s, want 401 login_code_invalid", a.status, a.code)
	}
	// An unknown, empty or missing code.
	for name, f := range map[string]url.Values{"unknown": {"code": {"x" + code[1:] + "x"}}, "empty": {"code": {""}}, "missing": {}} {
		if a := w.signInPost(t, browser(t), f, nil); a.status != http.StatusUnauthorized || a.code != "login_code_invalid" {
			t.Errorf("%s code: %d %s", name, a.status, a.code)
		}
	}
}

// The post takes one code field of a urlencoded body: not two (which one would it be?),
// not one in the query string (an address's code is what a GET is given), not another
// field, media type or an oversized body. None of those spends the code.
func TestLoginPOSTTakesExactlyOneCodeFromTheForm(t *testing.T) {
	w := newWorld(t, 0)
	s, err := w.client(w.admin).NewSession(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	code := loginCode(t, browser(t), s.LoginURL)
	for _, c := range []struct {
		name, path, body, ctype string
		status                  int
		errcode                 string
	}{
		{"a repeated code", "/admin/login", url.Values{"code": {code, code}}.Encode(), "", 400, "invalid_request"},
		{"a repeated code, one empty", "/admin/login", "code=&code=" + url.QueryEscape(code), "", 400, "invalid_request"},
		{"another field", "/admin/login", url.Values{"code": {code}, "next": {"https://evil.example/"}}.Encode(), "", 400, "invalid_request"},
		{"the code in the query string", "/admin/login?code=" + url.QueryEscape(code), "", "", 400, "invalid_request"},
		{"the code in both", "/admin/login?code=" + url.QueryEscape(code), url.Values{"code": {code}}.Encode(), "", 400, "invalid_request"},
		{"text/plain", "/admin/login", url.Values{"code": {code}}.Encode(), "text/plain", 400, "invalid_request"},
		{"multipart", "/admin/login", url.Values{"code": {code}}.Encode(), "multipart/form-data; boundary=x", 400, "invalid_request"},
		{"an oversized body", "/admin/login", url.Values{"code": {code}, "pad": {strings.Repeat("p", console.MaxForm)}}.Encode(), "", 413, "body_too_large"},
	} {
		req, _ := http.NewRequest(http.MethodPost, w.base+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		req.Header.Set("Origin", w.base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		if a := do(t, browser(t), req); a.status != c.status || a.code != c.errcode || len(a.header.Values("Set-Cookie")) != 0 {
			t.Errorf("%s: %d %s, want %d %s", c.name, a.status, a.code, c.status, c.errcode)
		}
	}
	if a := w.signInPost(t, browser(t), url.Values{"code": {code}}, nil); a.status != http.StatusSeeOther {
		t.Errorf("the operator's post after the refused ones: %d %s", a.status, a.code)
	}
}
