package ttsservice

// The attacker's suite against the TTS as main runs it (issue 26): the attacker writes
// the trail itself, through the real token endpoint (its own workload's requests, and
// requests with no credential at all), with scopes, audiences, resources and dialog ids
// it chooses; then an administrator reads the page. And the page is sought where it
// must not be: on the public token listener, with the administrator's cookie.

import (
	"context"
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

	"golang.org/x/net/html"

	"github.com/dialogtrust/dialogtrust/console"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/internal/testkit"
	"github.com/dialogtrust/dialogtrust/oauth"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
	"github.com/dialogtrust/dialogtrust/tts"
	"github.com/dialogtrust/dialogtrust/txntoken"
)

// attackScopes are scope tokens RFC 6749 section 3.3 allows (no space, quote or
// backslash) that are markup, script URLs or CSS.
var attackScopes = []string{
	"<script>alert(1)</script>", "</title><script>alert(1)</script>", "'><svg/onload=alert(1)>", "javascript:alert(1)",
	"</style><style>*{background:url(//evil.example/x)}</style>", "<img/src=x/onerror=alert(1)>", "{{.Viewer.CSRF}}", "<![CDATA[x]]>",
}

// attackValues are audiences and resources (free text up to 1 KiB at the endpoint).
var attackValues = []string{
	`"><svg onload=alert(1)>`, "<script>alert(1)</script>", "javascript:alert(1)", "line\u2028sep", "\u202Etxt.exe",
	`</style><a href="https://evil.example/">x</a>`, strings.Repeat("<b>", 300),
}

func TestAttackTTSPage_HostileRecordsThroughTheTokenEndpoint(t *testing.T) {
	ctx := context.Background()
	da := newWITDomain(t, "a.example")
	db := newWITDomain(t, "b.example")
	addr, admAddr := freeLoopback(t), freeLoopback(t)
	trail := filepath.Join(t.TempDir(), "audit.log")
	y := strings.Replace(pageYAML(da, addr, admAddr, trail), "wits:\n", "wits:\n  - {trust_domain: b.example, jwks_file: "+db.file+"}\n", 1)
	p := start(t, []string{"--config", testkit.WriteTemp(t, "tts.yaml", y)}, nil)
	md, err := oauth.Discover(ctx, nil, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The attacker's own workload (no administrator) asks for tokens with hostile
	// scopes and audiences, in dialogs it names, among them "." and "..".
	a1, a1Key, a1WIT := da.workload(t, "/agent/a1")
	ask := func(dlg, aud, scope string) {
		ss, _ := txntoken.NewSelfSignedToken(a1Key, a1, "mallory@a.example", md.Issuer, scope, 5*time.Minute, time.Now())
		_, _ = (&txntoken.Client{TokenEndpoint: md.TokenEndpoint, WIT: a1WIT, Key: a1Key, Proof: proof.WPT}).Request(ctx,
			txntoken.Request{Audience: aud, Scope: scope, SubjectToken: ss, SubjectTokenType: tts.TokenTypeSelfSigned, Dialog: dlg})
	}
	ask("Dlegit", "a.example", "trip.read")
	for i, s := range attackScopes {
		ask("Dscope", "a.example", s)
		ask("Daud", attackValues[i%len(attackValues)], "trip.read")
	}
	ask("..", "a.example", "trip.read")
	// Nobody at all: refused requests, recorded with what they asked for.
	for _, v := range attackValues {
		res, err := http.PostForm(md.TokenEndpoint, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "audience": {v}, "resource": {v},
			"scope": {attackScopes[0]}, "subject_token": {"x"}, "subject_token_type": {tts.TokenTypeSelfSigned}, "request_details": {`{"dlg":"Danon"}`}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	// An administrator signs in and reads every page.
	base := "http://" + admAddr
	api := da.operator(t, admAddr)
	s, err := api.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar}
	page := func(c *http.Client, u string) (int, http.Header, string) {
		res, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		bb, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(bb)
	}
	st, idx := pressSignIn(t, b, base, s.LoginURL)
	if st != 200 || !strings.Contains(idx, `data-dialog="Dscope"`) || !strings.Contains(idx, `data-dialog="Daud"`) {
		t.Fatalf("the index: %d\n%s", st, idx)
	}
	inert(t, "/admin/", idx)
	for _, d := range []string{"Dlegit", "Dscope", "Daud", "Danon"} {
		st, h, body := page(b, base+"/admin/dialogs/"+d)
		if st != 200 || h.Get("Content-Security-Policy") != console.CSP {
			t.Errorf("%s: %d, CSP %q", d, st, h.Get("Content-Security-Policy"))
		}
		inert(t, d, body)
	}
	if st, _, body := page(b, base+"/admin/dialogs/Dscope"); !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the hostile scope is not shown as text (%d)", st)
	}
	// The refusals of the callers without a credential are in the trail, with what they
	// asked for (and no dialog: the request is refused before its details are read).
	if raw, err := os.ReadFile(trail); err != nil || !strings.Contains(string(raw), `svg onload=alert(1)`) {
		t.Errorf("the unauthenticated requests are not in the trail: %v", err)
	}
	// Another trust domain's administrator (same path, b.example, whose WITs this TTS
	// trusts) and this domain's non-administrator get nothing from the API.
	_, fKey, fWIT := db.workload(t, "/ops/alice")
	for name, c := range map[string]*revokeapi.Client{
		"b.example's /ops/alice": {URL: base + revokeapi.Path, Signer: httpsig.NewSigner(fKey, fWIT)},
		"a.example's agent":      {URL: base + revokeapi.Path, Signer: httpsig.NewSigner(a1Key, a1WIT)},
	} {
		if _, err := c.NewSession(ctx); err == nil {
			t.Errorf("%s got a login link", name)
		}
		if _, err := c.Revoke(ctx, revokeapi.Request{Kind: revoke.Dialog, ID: "Dlegit", Reason: "x"}); err == nil {
			t.Errorf("%s revoked a dialog", name)
		}
		if _, err := c.List(ctx); err == nil {
			t.Errorf("%s listed the revocations", name)
		}
	}
	if _, err := api.Revoke(ctx, revokeapi.Request{Kind: revoke.Workload, ID: "wimse://b.example/agent/x", Reason: "x"}); err == nil {
		t.Error("a.example's administrator revoked b.example's workload")
	}
	// The API with only the page's cookie.
	req, _ := http.NewRequest(http.MethodPost, base+revokeapi.Path, strings.NewReader(`{"kind":"dialog","id":"Dlegit","reason":"cookie"}`))
	req.Header.Set("Content-Type", "application/json")
	if res, _ := testkit.Do(t, b, req); res.StatusCode != 401 {
		t.Errorf("the API with the page's cookie: %d", res.StatusCode)
	}
	if l, err := api.List(ctx); err != nil || len(l) != 0 {
		t.Errorf("revocations %+v %v", l, err)
	}
	// The public token listener: none of the page nor the API, with the cookie copied
	// to its host (same host, another port: cookies do not isolate ports).
	pu, _ := url.Parse(p.URL)
	for _, c := range jar.Cookies(&url.URL{Scheme: "http", Host: admAddr, Path: "/admin/"}) {
		jar.SetCookies(&url.URL{Scheme: "http", Host: pu.Host, Path: "/admin/"}, []*http.Cookie{{Name: c.Name, Value: c.Value, Path: "/admin/"}})
	}
	for _, path := range []string{"/admin/", "/admin/dialogs/Dlegit", "/admin/login?code=x", "/admin/assets/console.css", "/admin/assets/icon.svg",
		revokeapi.Path, revokeapi.SessionsPath, "/admin/dialogs/Dlegit/revoke", "/admin", "/ADMIN/", "/%61dmin/", "//admin/"} {
		for _, m := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequest(m, p.URL+path, strings.NewReader("csrf=x&reason=y"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", p.URL)
			res, err := b.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			bb, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode < 400 || res.Header.Get("Content-Security-Policy") != "" || strings.Contains(string(bb), "dialogtrust · operator") {
				t.Errorf("the token listener answered %s %s with %d", m, path, res.StatusCode)
			}
		}
	}
	if l, err := api.List(ctx); err != nil || len(l) != 0 {
		t.Errorf("revocations %+v %v", l, err)
	}
}

var attackAttrRE = regexp.MustCompile(`(?i)^(on.*|style|src|srcdoc|formaction|srcset|ping|background)$`)

// inert: no element that runs, loads or embeds, no handler or style attribute, every
// link and form action on the page's own paths, no raw line separator or bidirectional
// override in the text.
func inert(t *testing.T, what, body string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(body))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Errorf("%s: %v", what, z.Err())
			}
			return
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			switch strings.ToLower(tok.Data) {
			case "script", "iframe", "object", "embed", "img", "foreignobject", "style", "base", "use", "image", "animate", "set":
				t.Errorf("%s: <%s>", what, tok.Data)
			}
			for _, a := range tok.Attr {
				if attackAttrRE.MatchString(a.Key) {
					t.Errorf("%s: <%s %s=%q>", what, tok.Data, a.Key, a.Val)
				}
				if (a.Key == "href" || a.Key == "action" || a.Key == "xlink:href") && !strings.HasPrefix(a.Val, "/admin/") {
					t.Errorf("%s: <%s %s=%q>", what, tok.Data, a.Key, a.Val)
				}
			}
		case html.TextToken:
			if strings.ContainsAny(tok.Data, "\u2028\u2029\u202E\x00") {
				t.Errorf("%s: a raw separator, override or NUL in the text", what)
			}
		}
	}
}
