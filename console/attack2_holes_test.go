package console_test

import (
	"net/http"
	"testing"
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
	// The operator's own GET still signs in: the code was not spent.
	if a := do(t, atkBrowser(t), atkReq(t, http.MethodGet, link, nil, nil)); a.status != http.StatusSeeOther {
		t.Errorf("the operator's GET after the checker's HEAD: %d %s, want 303", a.status, a.code)
	}
}
