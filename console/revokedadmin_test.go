package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// Issue 26 (attack suite: a revoked administrator): a session of the page opened before
// its administrator's workload was revoked is refused after it, at every route
// (workload_revoked, 403), and so is a login link minted before it; nothing is changed.
func TestPage_RevokedAdministratorsOpenSessionIsRefused(t *testing.T) {
	w := newAtkWorld(t)
	w.writeEntries(t, atkDialog("D1")...)
	b, _ := w.signedIn(t, w.bob)
	tok := w.csrfOf(t, b, "/admin/dialogs/D1")
	link := w.loginURL(t, w.bob)
	if _, err := w.client(w.admin).Revoke(context.Background(), revokeapi.Request{Kind: revoke.Workload, ID: w.bob.ID.String(), Reason: "key stolen"}); err != nil {
		t.Fatal(err)
	}
	form := func(path string) *http.Request {
		return atkReq(t, http.MethodPost, w.base+path, strings.NewReader(url.Values{"csrf": {tok}, "reason": {"mine"}}.Encode()),
			map[string]string{"Origin": w.base, "Content-Type": "application/x-www-form-urlencoded"})
	}
	for what, req := range map[string]*http.Request{
		"index":  atkReq(t, http.MethodGet, w.base+"/admin/", nil, nil),
		"dialog": atkReq(t, http.MethodGet, w.base+"/admin/dialogs/D1", nil, nil),
		"revoke": form("/admin/dialogs/D1/revoke"),
		"lift":   form("/admin/dialogs/D1/lift"),
		"login":  atkReq(t, http.MethodGet, link, nil, nil),
	} {
		c := b
		if what == "login" {
			c = atkBrowser(t)
		}
		if a := do(t, c, req); a.status != http.StatusForbidden || a.code != "workload_revoked" {
			t.Errorf("%s: the revoked administrator's session got %d %q", what, a.status, a.code)
		}
	}
	if l := w.live(t); len(l) != 1 || l[0].Kind != revoke.Workload {
		t.Errorf("stored %+v", l)
	}
	// The other administrator is not affected.
	a, _ := w.signedIn(t, w.admin)
	if r := do(t, a, atkReq(t, http.MethodGet, w.base+"/admin/", nil, nil)); r.status != http.StatusOK {
		t.Errorf("the other administrator: %d %s", r.status, r.code)
	}
}
