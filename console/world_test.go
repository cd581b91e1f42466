package console_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
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
	"github.com/dialogtrust/dialogtrust/revoke/revoketest"
	"github.com/dialogtrust/dialogtrust/store"
)

// world is an admin listener serving the API and the page, over a trail file the test
// writes itself. Its administrators are alice and bob of a.example.
type world struct {
	clock            *testkit.Clock
	store            *revoke.Memory
	srv              *httptest.Server
	base, api        string
	trail            string
	seq              uint64
	admin, bob, user *testkit.Workload
	foreign          *testkit.Workload // an administrator's path in b.example, whose WITs are trusted
	logins           *console.Logins
}

func newWorld(t *testing.T, maxRecords int) *world {
	t.Helper()
	return newLoggedWorld(t, maxRecords, nil)
}

// newLoggedWorld is newWorld whose API and page log to logger (nil: their default).
func newLoggedWorld(t *testing.T, maxRecords int, logger *slog.Logger) *world {
	t.Helper()
	w := &world{clock: testkit.NewClock(time.Now().Truncate(time.Second))}
	a := testkit.NewDomain(t, "a.example", keys.ES256, w.clock)
	b := testkit.NewDomain(t, "b.example", keys.ES256, w.clock)
	a.TrustWITsOf(t, b)
	w.admin, w.bob, w.user = a.Workload(t, "/ops/alice", keys.ES256), a.Workload(t, "/ops/bob", keys.ES256), a.Workload(t, "/agent/a1", keys.ES256)
	w.foreign = b.Workload(t, "/ops/alice", keys.ES256)
	w.store = revoke.NewMemory(revoke.WithClock(w.clock.Now))
	w.trail = filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(w.trail, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewUnstartedServer(nil)
	w.base = "http://" + w.srv.Listener.Addr().String()
	w.api = w.base + revokeapi.Path
	var err error
	w.logins, err = console.NewLogins(w.base, console.WithClock(w.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	api, err := revokeapi.New(revokeapi.Config{
		Store:        w.store,
		Signatures:   httpsig.NewVerifier(a.Validator(), httpsig.WithAudiences(w.api), httpsig.WithReplay(store.NewMemory(store.WithClock(w.clock.Now))), httpsig.WithClock(w.clock.Now)),
		Admins:       []identifier.ID{w.admin.ID, w.bob.ID},
		TrustDomains: []string{"a.example"},
		DefaultTTL:   time.Hour,
		Now:          w.clock.Now,
		Sessions:     w.logins,
		Logger:       logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	page, err := console.New(console.Config{API: api, Logins: w.logins, Trail: console.FileTrail{Path: w.trail}, MaxRecords: maxRecords, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	w.srv.Config.Handler = console.Routes(api, page)
	w.srv.Start()
	t.Cleanup(w.srv.Close)
	return w
}

// write appends records to the trail (v, w, seq and time are filled in).
func (w *world) write(t *testing.T, es ...audit.Entry) {
	t.Helper()
	var lines [][]byte
	for _, e := range es {
		w.stamp(&e)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	w.writeRaw(t, lines...)
}

// stamp fills in what the audit writer would: v, w, seq, and time where e has none.
func (w *world) stamp(e *audit.Entry) {
	w.seq++
	e.V, e.Writer, e.Seq = audit.Version, "tts-1", w.seq
	if e.Time == "" {
		e.Time = w.clock.Now().UTC().Add(time.Duration(w.seq) * time.Millisecond).Format(time.RFC3339Nano)
	}
}

// writeRaw appends raw lines to the trail.
func (w *world) writeRaw(t *testing.T, lines ...[]byte) {
	t.Helper()
	f, err := os.OpenFile(w.trail, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.Write(append(l, '\n')); err != nil {
			t.Fatal(err)
		}
	}
}

func (w *world) client(wl *testkit.Workload) *revokeapi.Client {
	return &revokeapi.Client{URL: w.api, Signer: httpsig.NewSigner(wl.Key, wl.WIT, httpsig.WithClock(w.clock.Now))}
}

// browser is an HTTP client with a cookie jar that does not follow redirects.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signIn opens a login link as wl in a new browser.
func (w *world) signIn(t *testing.T, wl *testkit.Workload) *http.Client {
	t.Helper()
	s, err := w.client(wl).NewSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b := browser(t)
	res := openLink(t, b, s.LoginURL, nil)
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/admin/" {
		t.Fatalf("login: %d %s %s", res.status, res.header.Get("Location"), res.code)
	}
	return b
}

var codeFieldRE = regexp.MustCompile(`name="code" value="([^"]+)"`)

// openLink is a browser following a login link and pressing its Sign in button: the GET
// of the link (the confirmation page: 200 and no cookie, else its answer is returned),
// then a form post of the page's code to /admin/login from the link's origin. hdr is
// sent with both requests (over the Origin and Sec-Fetch-Site of the post). It returns
// the post's answer.
func openLink(t *testing.T, c *http.Client, link string, hdr map[string]string) answer {
	t.Helper()
	a := get(t, c, link, hdr)
	if a.status != http.StatusOK {
		return a
	}
	m := codeFieldRE.FindStringSubmatch(a.body)
	if m == nil || len(a.header.Values("Set-Cookie")) != 0 {
		t.Fatalf("the login link's page: no code field, or %d cookies set", len(a.header.Values("Set-Cookie")))
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	origin := u.Scheme + "://" + u.Host
	h := map[string]string{"Origin": origin, "Sec-Fetch-Site": "same-origin"}
	for k, v := range hdr {
		h[k] = v
	}
	return post(t, c, origin+"/admin/login", url.Values{"code": {html.UnescapeString(m[1])}}, h)
}

// answer is what a test reads of a response: the code is the page's data-code or the
// API's problem code.
type answer struct {
	status int
	header http.Header
	body   string
	code   string
}

var codeRE = regexp.MustCompile(`data-code="([a-z_]+)"`)

func do(t *testing.T, c *http.Client, req *http.Request) answer {
	t.Helper()
	res, b := testkit.Do(t, c, req)
	a := answer{status: res.StatusCode, header: res.Header, body: string(b)}
	if m := codeRE.FindStringSubmatch(a.body); m != nil {
		a.code = m[1]
	}
	if a.code == "" && strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") {
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(b, &p)
		a.code = p.Code
	}
	return a
}

func get(t *testing.T, c *http.Client, u string, hdr map[string]string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return do(t, c, req)
}

func post(t *testing.T, c *http.Client, u string, form url.Values, hdr map[string]string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return do(t, c, req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the token of the page at u.
func csrf(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	a := get(t, c, u, nil)
	m := csrfRE.FindStringSubmatch(a.body)
	if a.status != 200 || m == nil {
		t.Fatalf("GET %s: %d, no csrf token", u, a.status)
	}
	return m[1]
}

// live are the revocations in the world's store.
func (w *world) live(t *testing.T) []revoke.Revocation {
	t.Helper()
	return revoketest.MustList(t, w.store)
}

// dialogOf is a small dialog: a Txn-Token issued to a1 for b1, a request at b1's
// receiver accepted, one refused.
func dialogOf(dlg string) []audit.Entry {
	return []audit.Entry{
		{Decision: audit.Issued, Handler: "tts", Dialog: dlg, Txn: "t1", ReqWL: "wimse://a.example/agent/a1", Requester: "wimse://a.example/agent/a1",
			Audience: []string{"wimse://a.example/agent/b1"}, Scopes: []string{"trip.read"}, IssuedSHA256: "AAAAissuedtokenhash0000000000000000000000000", Rule: "r0"},
		{Decision: audit.Accepted, Handler: audit.HandlerReceiver, Dialog: dlg, Requester: "wimse://a.example/agent/a1",
			Audience: []string{"wimse://a.example/agent/b1"}, Operation: "tools/call get_weather", Hop: "1", SubjectSHA256: "AAAAissuedtokenhash0000000000000000000000000"},
		{Decision: audit.Refused, Handler: audit.HandlerIngress, Code: "not_authorized", Dialog: dlg, Requester: "wimse://a.example/agent/b1",
			Audience: []string{"wimse://a.example/agent/c1"}, Operation: "tools/call book"},
	}
}
