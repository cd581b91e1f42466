package ttsservice

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/cmd/internal/kit"
	"github.com/dialogtrust/dialogtrust/console"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

func pageYAML(da *witDomain, addr, admin, trail string) string {
	return revocationsYAML(da, addr, admin) + `    page: {enabled: true}
audit:
  sink: file
  path: ` + trail + `
`
}

// pressSignIn is a browser opening a login link of the page at base and pressing its
// Sign in button (the link's GET only shows the button): it answers where the post's
// redirect lands, the page's index.
func pressSignIn(t *testing.T, b *http.Client, base, link string) (int, string) {
	t.Helper()
	res, bb := testkit.GetWith(t, b, link)
	m := regexp.MustCompile(`name="code" value="([^"]+)"`).FindStringSubmatch(string(bb))
	if res.StatusCode != http.StatusOK || m == nil || len(res.Cookies()) != 0 {
		t.Fatalf("the login link's page: %d, %d cookies\n%s", res.StatusCode, len(res.Cookies()), bb)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/admin/login", strings.NewReader(url.Values{"code": {html.UnescapeString(m[1])}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, bb = testkit.Do(t, b, req)
	return res.StatusCode, string(bb)
}

// Issue 26, the page as main runs it: the TTS's own trail (file sink) shows the dialog
// its token endpoint issued in; a login link from POST /admin/sessions opens the page;
// the page's revoke button makes the next token request in the dialog fail with
// dialog_revoked; the token endpoint's listener serves none of the page.
func TestIssue26_TTSPageConfigured(t *testing.T) {
	ctx := context.Background()
	da := newWITDomain(t, "a.example")
	addr, admAddr := freeLoopback(t), freeLoopback(t)
	trail := filepath.Join(t.TempDir(), "audit.log")
	p := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", pageYAML(da, addr, admAddr, trail))}, nil)
	md, err := oauth.Discover(ctx, nil, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	a1, a1Key, a1WIT := da.workload(t, "/agent/a1")
	request := func(dlg string) error {
		ss, _ := txntoken.NewSelfSignedToken(a1Key, a1, "alice@a.example", md.Issuer, "trip.read", 5*time.Minute, time.Now())
		_, err := (&txntoken.Client{TokenEndpoint: md.TokenEndpoint, WIT: a1WIT, Key: a1Key, Proof: proof.WPT}).Request(ctx,
			txntoken.Request{Audience: "a.example", Scope: "trip.read", SubjectToken: ss, SubjectTokenType: tts.TokenTypeSelfSigned, Dialog: dlg})
		return err
	}
	for range 2 {
		if err := request("Dpage"); err != nil {
			t.Fatal(err)
		}
	}
	base := "http://" + admAddr
	api := da.operator(t, admAddr)
	s, err := api.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.LoginURL, base+"/admin/login?code=") || time.Until(s.ExpiresAt) > console.LoginTTL {
		t.Fatalf("login link %+v", s)
	}
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar}
	body := func(u string) (int, string) {
		res, err := b.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		bb, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(bb)
	}
	if st, idx := pressSignIn(t, b, base, s.LoginURL); st != 200 || !strings.Contains(idx, `data-dialog="Dpage"`) {
		t.Fatalf("the index after login: %d\n%s", st, idx)
	}
	st, d := body(base + "/admin/dialogs/Dpage")
	if st != 200 || strings.Count(d, `<g class="edge issued" data-from="wimse://a.example/agent/a1"`) != 2 {
		t.Fatalf("the dialog's page: %d\n%s", st, d)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(d)
	if m == nil {
		t.Fatal("no csrf token")
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/admin/dialogs/Dpage/revoke", strings.NewReader(url.Values{"csrf": {m[1]}, "reason": {"runaway"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	res, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Request.URL.Path != "/admin/dialogs/Dpage" {
		t.Fatalf("revoke: %d at %s", res.StatusCode, res.Request.URL)
	}
	deadline := time.Now().Add(10 * time.Second) // a failure deadline: the loop waits for the notice's effect
	for err = request("Dpage"); !errcode.Is(err, errcode.DialogRevoked); err = request("Dpage") {
		if time.Now().After(deadline) {
			t.Fatalf("a token in the dialog revoked from the page: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, d := body(base + "/admin/dialogs/Dpage"); !strings.Contains(d, `id="state">revoked`) {
		t.Error("the page does not show the dialog revoked")
	}
	// The page's revocation is in the trail as the API's are (one path: revokeapi's
	// Revoke), naming the administrator who signed in.
	raw, err := os.ReadFile(trail)
	if err != nil {
		t.Fatal(err)
	}
	var revoked bool
	for _, l := range strings.Split(string(raw), "\n") {
		if e, err := audit.ParseRecord([]byte(l)); err == nil && e.Decision == audit.Revoked {
			revoked = e.Handler == audit.HandlerRevocations && e.Target == "Dpage" && e.TargetKind == "dialog" &&
				e.Requester == "wimse://a.example/ops/alice" && e.Reason == "runaway" && e.RequestID != ""
		}
	}
	if !revoked {
		t.Errorf("no audit record of the page's revocation in\n%s", raw)
	}
	// The token endpoint's listener serves none of the page, and no cookie opens anything there.
	for _, path := range []string{"/admin/", "/admin/dialogs/Dpage", "/admin/login?code=x", "/admin/assets/console.css", revokeapi.SessionsPath} {
		res, err := b.Get(p.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Security-Policy") != "" {
			t.Errorf("the token listener answered %s with %d", path, res.StatusCode)
		}
	}
}

// Issue 26: the page is off unless enabled (POST /admin/sessions is then no route),
// and its settings are checked.
func TestIssue26_TTSPageConfigChecked(t *testing.T) {
	da := newWITDomain(t, "a.example")
	base := pageYAML(da, "127.0.0.1:0", "127.0.0.1:0", "/tmp/x.log")
	good := &Config{}
	if err := kit.ParseYAML([]byte(base), good); err != nil {
		t.Fatal(err)
	}
	applyDefaults(good)
	if err := checkRevocations(good); err != nil {
		t.Fatalf("the page's configuration: %v", err)
	}
	wantRevocationsRefused(t, map[string]string{
		"session_ttl":  strings.Replace(base, "page: {enabled: true}", "page: {enabled: true, session_ttl: 1000h}", 1),
		"max_records":  strings.Replace(base, "page: {enabled: true}", "page: {enabled: true, max_records: 1000000}", 1),
		"url not /api": strings.Replace(base, "    page:", "    url: http://127.0.0.1:1/x\n    page:", 1),
	})
	ctx := context.Background()
	addr, admAddr := freeLoopback(t), freeLoopback(t)
	start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", revocationsYAML(da, addr, admAddr))}, nil)
	api := da.operator(t, admAddr)
	if _, err := api.NewSession(ctx); !errcode.Is(err, errcode.NoRoute) {
		t.Errorf("a login link from a TTS without the page: %v", err)
	}
	res, err := http.Get("http://" + admAddr + "/admin/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET /admin/ without the page: %d", res.StatusCode)
	}
}
