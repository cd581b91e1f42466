package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/reqid"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// Paths of the page (all under Prefix, on the admin listener).
const (
	Prefix     = "/admin/"
	loginPath  = "/admin/login"
	logoutPath = "/admin/logout"
	assetsPath = "/admin/assets/"
	dialogPath = "/admin/dialogs/"
)

// CSP is every answer's Content-Security-Policy: the page's own style sheet, its own
// forms, nothing else (no script at all), never framed.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// MaxForm bounds a form post's body, in octets.
const MaxForm = 4 << 10

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/*
var assetFS embed.FS

// Config configures the page.
type Config struct {
	// API is the revocations admin API: it authenticates client certificates and makes
	// every revocation (Revoke, Lift, List).
	API *revokeapi.Handler
	// Logins mints the login links (also given to the API as its Sessions) and keeps
	// the sessions.
	Logins *Logins
	// Trail is the TTS's own audit trail; nil: NoTrail says why there is none to show.
	Trail   Trail
	NoTrail string
	// MaxRecords is how many of the trail's latest lines are read (default
	// DefaultMaxRecords).
	MaxRecords int
	// Logger receives refusals and sign-ins (default: discard).
	Logger *slog.Logger
}

// Console serves the page.
type Console struct {
	cfg   Config
	mux   *http.ServeMux
	pages *template.Template
	// key derives the CSRF token of a mutual TLS operator (no session to keep one in).
	key []byte
}

// New checks cfg and returns the page's handler, for every path under Prefix but the
// API's own.
func New(cfg Config) (*Console, error) {
	if cfg.API == nil || cfg.Logins == nil {
		return nil, errcode.New(errcode.InvalidRequest, "console: the admin API and the logins are required")
	}
	if cfg.MaxRecords <= 0 {
		cfg.MaxRecords = DefaultMaxRecords
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, pages: pages, key: []byte(random())}
	m := http.NewServeMux()
	m.HandleFunc("GET /admin/{$}", c.index)
	m.HandleFunc("GET /admin/dialogs/{dlg}", c.dialog)
	m.HandleFunc("POST /admin/dialogs/{dlg}/revoke", c.revoke)
	m.HandleFunc("POST /admin/dialogs/{dlg}/lift", c.lift)
	m.HandleFunc("GET /admin/login", c.confirm)
	m.HandleFunc("POST /admin/login", c.login)
	m.HandleFunc("POST /admin/logout", c.logout)
	m.HandleFunc("GET /admin/assets/{file}", c.asset)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, errcode.New(errcode.NoRoute, "no such page"))
	})
	c.mux = m
	return c, nil
}

// parsePages parses the embedded templates with the functions that show the trail's
// strings (show, cut) and make the page's own links (dialogURL).
func parsePages() (*template.Template, error) {
	return template.New("").Funcs(template.FuncMap{
		"show":      show,
		"cut":       cut,
		"dialogURL": dialogURL,
		// linkable: a dialog id the page could open (a longer one is shown, not linked).
		"linkable": func(id string) bool { return id != "" && len(id) <= MaxDialogID },
		"join":     func(s []string) string { return cut(strings.Join(s, ", "), 256) },
	}).ParseFS(templateFS, "templates/*.html")
}

// ServeHTTP sets the headers of every answer, then routes.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends "Origin: null"
	// with the page's own form posts, and the origin check needs the real one. No page
	// links off the origin, and a login link's code leaves the address once its Sign in
	// button is pressed (303).
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	c.mux.ServeHTTP(w, r)
}

// viewer is the signed-in operator.
type viewer struct {
	Admin  string
	CSRF   string
	Cookie bool // signed in with a session (mutual TLS otherwise)
	cookie string
	admin  identifier.ID
}

// who authenticates a request to the page: an administrator's client certificate, or
// the session cookie. Nothing else (no signature, no bearer, no query parameter).
func (c *Console) who(r *http.Request) (*viewer, error) {
	admin, ok, err := c.cfg.API.CertAdmin(r)
	if ok {
		if err != nil {
			return nil, err
		}
		mac := hmac.New(sha256.New, c.key)
		mac.Write([]byte(admin.String()))
		mac.Write([]byte{0})
		mac.Write(r.TLS.PeerCertificates[0].Raw)
		return &viewer{Admin: admin.String(), admin: admin, CSRF: base64.RawURLEncoding.EncodeToString(mac.Sum(nil))}, nil
	}
	ck, err := r.Cookie(c.cfg.Logins.cookieName())
	if err != nil {
		return nil, errcode.New(errcode.MissingCredential, "sign in: open a login link (dialogtrust revoke page) or present an administrator's client certificate")
	}
	s, ok := c.cfg.Logins.lookup(ck.Value)
	if !ok || !c.cfg.API.IsAdmin(s.admin) {
		return nil, errcode.New(errcode.MissingCredential, "the session is unknown or over: open a new login link (dialogtrust revoke page)")
	}
	// At every request, not only at sign-in: a session opened before its administrator
	// was revoked ends with the revocation (workload_revoked).
	if err := c.cfg.API.Admit(r.Context(), s.admin); err != nil {
		return nil, err
	}
	return &viewer{Admin: s.admin.String(), admin: s.admin, CSRF: s.csrf, Cookie: true, cookie: ck.Value}, nil
}

// sameOrigin refuses what a browser sends on another site's behalf: a form post must
// say it comes from the page's own origin.
func (c *Console) sameOrigin(r *http.Request) error {
	origins := r.Header.Values("Origin")
	if len(origins) != 1 || origins[0] != c.cfg.Logins.Origin() {
		return errcode.New(errcode.OriginNotAllowed, "a form post must come from the page's own origin")
	}
	for _, s := range r.Header.Values("Sec-Fetch-Site") {
		if s != "same-origin" {
			return errcode.New(errcode.OriginNotAllowed, "a cross-site request is not accepted")
		}
	}
	return nil
}

// form checks a form post in order: origin, media type and length, the operator, then
// (only then) the body, bounded, its CSRF token, and that no field is repeated (which
// of two reasons would be meant? the JSON API refuses a repeated member too).
func (c *Console) form(w http.ResponseWriter, r *http.Request) (*viewer, url.Values, error) {
	if err := c.formHead(r); err != nil {
		return nil, nil, err
	}
	v, err := c.who(r)
	if err != nil {
		return nil, nil, err
	}
	f, err := readForm(w, r)
	if err != nil {
		return v, nil, err
	}
	tok := f["csrf"]
	if len(tok) != 1 || subtle.ConstantTimeCompare([]byte(tok[0]), []byte(v.CSRF)) != 1 {
		return v, nil, errcode.New(errcode.CSRFTokenInvalid, "the form's token is not this session's")
	}
	for k, vs := range f {
		if len(vs) > 1 {
			return v, nil, errcode.New(errcode.InvalidRequest, "the form's field %q is repeated", cut(k, 32))
		}
	}
	return v, f, nil
}

// formHead checks what a form post says before its body is read: the page's own
// origin, the media type, the declared length.
func (c *Console) formHead(r *http.Request) error {
	if err := c.sameOrigin(r); err != nil {
		return err
	}
	cts := r.Header.Values("Content-Type")
	if len(cts) != 1 {
		return errcode.New(errcode.InvalidRequest, "a form post is application/x-www-form-urlencoded")
	}
	if mt, _, err := mime.ParseMediaType(cts[0]); err != nil || mt != "application/x-www-form-urlencoded" {
		return errcode.New(errcode.InvalidRequest, "a form post is application/x-www-form-urlencoded")
	}
	if r.ContentLength > MaxForm {
		return errcode.New(errcode.BodyTooLarge, "the form is over %d octets", MaxForm)
	}
	return nil
}

// readForm reads a form post's body, bounded (MaxForm): its fields, never the query's.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxForm)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errcode.New(errcode.BodyTooLarge, "the form is over %d octets", MaxForm)
		}
		return nil, errcode.New(errcode.InvalidRequest, "the form could not be read")
	}
	return r.PostForm, nil
}

// recent reads the trail and the live revocations.
func (c *Console) recent(ctx context.Context) ([]audit.Entry, []revoke.Revocation, error) {
	revs, err := c.cfg.API.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	if c.cfg.Trail == nil {
		return nil, revs, nil
	}
	lines, err := c.cfg.Trail.Recent(ctx, c.cfg.MaxRecords)
	if err != nil {
		return nil, nil, errcode.Unavailable(errcode.Internal, err, "the audit trail could not be read")
	}
	return records(lines), revs, nil
}

type indexPage struct {
	Viewer      *viewer
	Title       string
	NoTrail     string
	Dialogs     []Summary
	Records     int
	Revoked     []revoke.Revocation
	MoreRevoked int
	Max         int
	MaxShown    int
}

func (c *Console) index(w http.ResponseWriter, r *http.Request) {
	v, err := c.who(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.show(w, r, "index.html", func(entries []audit.Entry, revs []revoke.Revocation) any {
		p := indexPage{Viewer: v, Title: "Recent dialogs", Dialogs: summaries(entries, revs), Records: len(entries), Revoked: revs,
			Max: c.cfg.MaxRecords, MaxShown: maxDialogs, NoTrail: c.noTrail()}
		if len(p.Revoked) > maxDialogs {
			p.Revoked, p.MoreRevoked = p.Revoked[:maxDialogs], len(p.Revoked)-maxDialogs
		}
		return p
	})
}

// show renders the page build makes of the trail's latest records and the live
// revocations (every view shows them); when either cannot be read, the page's error.
func (c *Console) show(w http.ResponseWriter, r *http.Request, name string, build func(entries []audit.Entry, revs []revoke.Revocation) any) {
	entries, revs, err := c.recent(r.Context())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, http.StatusOK, name, build(entries, revs))
}

// noTrail is the page's note where the TTS keeps no trail the page can read.
func (c *Console) noTrail() string {
	if c.cfg.Trail != nil {
		return ""
	}
	return c.cfg.NoTrail
}

type dialogPage struct {
	Viewer  *viewer
	Title   string
	Dialog  Dialog
	Found   bool
	ID      string
	NoTrail string
}

// dialogID is the page's dialog: one path segment (dialogSegment), at most MaxDialogID
// octets.
func dialogID(r *http.Request) (string, error) {
	id := dialogFromSegment(r.PathValue("dlg"))
	if id == "" || len(id) > MaxDialogID {
		return "", errcode.New(errcode.InvalidRequest, "a dialog id is 1 to %d octets", MaxDialogID)
	}
	return id, nil
}

func (c *Console) dialog(w http.ResponseWriter, r *http.Request) {
	v, err := c.who(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	id, err := dialogID(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.show(w, r, "dialog.html", func(entries []audit.Entry, revs []revoke.Revocation) any {
		d, found := dialog(id, entries, revs)
		if !found {
			d.ID = id
			d.Revocation = revokedFor(id, nil, revokedSet(revs))
			d.Revoked = d.Revocation != nil
		}
		return dialogPage{Viewer: v, Title: "Dialog " + cut(id, 60), Dialog: d, Found: found, ID: id, NoTrail: c.noTrail()}
	})
}

// revoke is the page's revoke button: revokeapi's Revoke, as the API's POST calls it.
func (c *Console) revoke(w http.ResponseWriter, r *http.Request) {
	c.dialogAction(w, r, func(ctx context.Context, admin identifier.ID, id string, f url.Values) error {
		req := revokeapi.Request{Kind: revoke.Dialog, ID: id, Reason: f.Get("reason"), Linked: f.Get("linked") == "on"}
		if s := strings.TrimSpace(f.Get("ttl")); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d < time.Second {
				return errcode.New(errcode.InvalidRequest, "ttl is a duration such as 1h")
			}
			req.TTLSeconds = int64(d / time.Second)
		}
		_, err := c.cfg.API.Revoke(ctx, admin, req)
		return err
	})
}

// lift is the page's lift button: revokeapi's Lift, as the API's DELETE calls it.
func (c *Console) lift(w http.ResponseWriter, r *http.Request) {
	c.dialogAction(w, r, func(ctx context.Context, admin identifier.ID, id string, _ url.Values) error {
		_, err := c.cfg.API.Lift(ctx, admin, revoke.Dialog, id)
		return err
	})
}

// dialogAction is one button of a dialog's page: the form is checked (session, CSRF
// token, origin) and the dialog id read before act runs with the administrator, in a
// context carrying the request's id for the audit record; then the browser goes back
// to the dialog's page.
func (c *Console) dialogAction(w http.ResponseWriter, r *http.Request, act func(ctx context.Context, admin identifier.ID, id string, f url.Values) error) {
	v, f, err := c.form(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	id, err := dialogID(r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if err := act(revokeapi.WithRequestID(r.Context(), reqid.From(r)), v.admin, id, f); err != nil {
		c.fail(w, r, err)
		return
	}
	http.Redirect(w, r, dialogURL(id), http.StatusSeeOther)
}

// confirm is a login link opened: GET /admin/login?code=... checks the code is known
// and unexpired, spends nothing, sets no cookie, and answers a page whose one button
// posts the code (login). A GET is safe (RFC 9110 section 9.2.1): a chat's link
// preview, a link checker or a proxy's prefetch sends it too, and must get no session
// nor use up the operator's code.
func (c *Console) confirm(w http.ResponseWriter, r *http.Request) {
	// The route's GET pattern also serves HEAD: refused, as it always was (no_route).
	if r.Method != http.MethodGet {
		c.fail(w, r, errcode.New(errcode.NoRoute, "a login link is opened with GET"))
		return
	}
	for _, s := range r.Header.Values("Sec-Fetch-Site") {
		if s != "none" && s != "same-origin" {
			c.fail(w, r, errcode.New(errcode.OriginNotAllowed, "a login link is opened directly, not from another site"))
			return
		}
	}
	q := r.URL.Query()
	codes := q["code"]
	if len(codes) != 1 || len(q) != 1 {
		c.fail(w, r, errcode.New(errcode.LoginCodeInvalid, "a login link has one code"))
		return
	}
	admin, err := c.cfg.Logins.check(codes[0])
	if err == nil {
		err = c.cfg.API.Admit(r.Context(), admin)
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, http.StatusOK, "login.html", struct {
		Viewer *viewer
		Title  string
		Code   string
	}{nil, "Sign in", codes[0]})
}

// login is the login page's Sign in button: POST /admin/login, a form from the page's
// own origin (there is no session yet, so no CSRF token: the origin and Sec-Fetch-Site
// are the check) with exactly one code field, never the query's. It spends the code and
// opens a new session: a cookie the browser brought is never adopted (session
// fixation). It 303-redirects to the page.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if err := c.formHead(r); err != nil {
		c.fail(w, r, err)
		return
	}
	if r.URL.RawQuery != "" {
		c.fail(w, r, errcode.New(errcode.InvalidRequest, "a sign-in posts its code in the form, not in the address"))
		return
	}
	f, err := readForm(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for k, vs := range f {
		if k != "code" || len(vs) != 1 {
			c.fail(w, r, errcode.New(errcode.InvalidRequest, "a sign-in form has one field, code, once"))
			return
		}
	}
	codes := f["code"]
	if len(codes) != 1 {
		c.fail(w, r, errcode.New(errcode.LoginCodeInvalid, "a sign-in form has one code"))
		return
	}
	admin, err := c.cfg.Logins.consume(codes[0])
	if err == nil {
		err = c.cfg.API.Admit(r.Context(), admin)
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	id, s := c.cfg.Logins.open(admin)
	http.SetCookie(w, &http.Cookie{Name: c.cfg.Logins.cookieName(), Value: id, Path: c.cfg.Logins.cookiePath(),
		Expires: s.expires, HttpOnly: true, Secure: c.cfg.Logins.secure, SameSite: http.SameSiteStrictMode})
	c.cfg.Logger.InfoContext(r.Context(), "operator signed in to the page", "by", admin.String(), "until", s.expires)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	v, _, err := c.form(w, r)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	// Every session cookie the browser sent ends on the server, not only the one that
	// signed this request in: an operator signed in with a client certificate may hold
	// one too, and the cookie cleared below must not leave its session alive.
	if v.Cookie {
		c.cfg.Logins.end(v.cookie)
	}
	for _, ck := range r.CookiesNamed(c.cfg.Logins.cookieName()) {
		c.cfg.Logins.end(ck.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: c.cfg.Logins.cookieName(), Value: "", Path: c.cfg.Logins.cookiePath(), MaxAge: -1,
		HttpOnly: true, Secure: c.cfg.Logins.secure, SameSite: http.SameSiteStrictMode})
	c.render(w, http.StatusOK, "signedout.html", struct {
		Viewer *viewer
		Title  string
	}{nil, "Signed out"})
}

type errorPage struct {
	Viewer *viewer
	Title  string
	Status int
	Code   string
	Kind   string
	Detail string
}

// fail answers a refusal as a page: its status and stable code (problem.From).
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	d := problem.From(err)
	c.cfg.Logger.Log(r.Context(), errcode.LogLevel(err), "page request refused", "code", d.Code, "kind", d.Kind,
		"method", r.Method, "path", cut(r.URL.Path, 80), "remote", r.RemoteAddr)
	if d.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Cookie realm="dialogtrust operator page"`)
	}
	c.render(w, d.Status, "error.html", errorPage{Title: http.StatusText(d.Status), Status: d.Status, Code: d.Code, Kind: d.Kind, Detail: d.Detail})
}

func (c *Console) render(w http.ResponseWriter, status int, name string, data any) {
	var b strings.Builder
	if err := c.pages.ExecuteTemplate(&b, name, data); err != nil {
		c.cfg.Logger.Error("page not rendered", "page", name, "error", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("internal error\n"))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}
