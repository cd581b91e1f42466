package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/revoke/revokeapi"
)

// LoginTTL is how long a login link works: long enough to paste it into a browser.
const LoginTTL = 60 * time.Second

// DefaultSessionTTL is how long a session lasts by default.
const DefaultSessionTTL = 8 * time.Hour

// Bounds of the memory the logins and sessions hold: each is minted only for an
// authenticated administrator, but an administrator's script should not fill memory.
const (
	maxLogins   = 256
	maxSessions = 1024
)

// Cookie names: under TLS the __Host- prefix (the browser keeps it only when Secure,
// host-only and Path=/, so no sibling host can set or shadow it); on a plain loopback
// listener in development, a plain name on Path /admin/.
const (
	hostCookie  = "__Host-dialogtrust-session"
	plainCookie = "dialogtrust-session"
)

// Logins mints one-time login links (revokeapi.Sessions) and keeps the sessions they
// open. It is memory: the admin listener is one process's (each replica of the TTS has
// its own page and its own sessions; a restart signs everyone out).
type Logins struct {
	base   string
	secure bool
	ttl    time.Duration
	now    func() time.Time

	mu       sync.Mutex
	codes    map[[32]byte]login
	sessions map[[32]byte]*session
}

type login struct {
	admin   identifier.ID
	expires time.Time
}

// session is one signed-in operator.
type session struct {
	admin   identifier.ID
	csrf    string
	expires time.Time
}

// Option configures Logins.
type Option func(*Logins)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(l *Logins) { l.now = now } }

// WithSessionTTL sets how long a session lasts (default DefaultSessionTTL).
func WithSessionTTL(d time.Duration) Option {
	return func(l *Logins) {
		if d > 0 {
			l.ttl = d
		}
	}
}

// NewLogins keeps the logins of the page at base, the admin listener's URL (scheme,
// host and port as operators' browsers reach it): login links are base +
// /admin/login?code=...; an https base makes the cookie Secure and __Host-.
func NewLogins(base string, opts ...Option) (*Logins, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, errcode.New(errcode.InvalidRequest, "console: the page's base URL must be http(s)://host[:port]")
	}
	l := &Logins{base: origin(u), secure: u.Scheme == "https", ttl: DefaultSessionTTL, now: time.Now,
		codes: map[[32]byte]login{}, sessions: map[[32]byte]*session{}}
	for _, o := range opts {
		o(l)
	}
	return l, nil
}

// origin is u's origin as a browser serializes it in an Origin header (the WHATWG URL
// standard): the host in lower case, no port when it is the scheme's default. Kept
// as written, https://Admin.Example:443 is an origin no browser sends, and every form
// post of the page would be refused.
func origin(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "443" && u.Scheme == "https" || port == "80" && u.Scheme == "http" {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host
}

// Origin is the page's origin: the only one whose form posts are taken.
func (l *Logins) Origin() string { return l.base }

// NewLogin implements revokeapi.Sessions: a one-time code for admin, kept hashed.
func (l *Logins) NewLogin(admin identifier.ID) (revokeapi.Session, error) {
	code := random()
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, c := range l.codes {
		if !now.Before(c.expires) {
			delete(l.codes, k)
		}
	}
	if len(l.codes) >= maxLogins {
		return revokeapi.Session{}, errcode.New(errcode.InvalidRequest, "too many login links outstanding: use one or wait a minute")
	}
	exp := now.Add(LoginTTL)
	l.codes[sha256.Sum256([]byte(code))] = login{admin: admin, expires: exp}
	return revokeapi.Session{LoginURL: l.base + loginPath + "?" + url.Values{"code": {code}}.Encode(), ExpiresAt: exp.UTC()}, nil
}

// check is the administrator of code, known and unexpired, without spending it: what
// the login link's GET shows its confirmation for (a GET is safe: a link checker, a
// chat's preview or a proxy's prefetch may send it).
func (l *Logins) check(code string) (identifier.ID, error) {
	return l.take(code, false)
}

// consume spends code: whatever happens, it works at most once.
func (l *Logins) consume(code string) (identifier.ID, error) {
	return l.take(code, true)
}

// take looks code up and, when spend, deletes it (under the lock: of two concurrent
// spends of one code, one wins).
func (l *Logins) take(code string, spend bool) (identifier.ID, error) {
	if len(code) == 0 || len(code) > 128 {
		return identifier.ID{}, errcode.New(errcode.LoginCodeInvalid, "no valid login code")
	}
	k := sha256.Sum256([]byte(code))
	l.mu.Lock()
	c, ok := l.codes[k]
	if spend {
		delete(l.codes, k)
	}
	l.mu.Unlock()
	if !ok {
		return identifier.ID{}, errcode.New(errcode.LoginCodeInvalid, "the login code is unknown or was used: ask for a new link (dialogtrust revoke page)")
	}
	if !l.now().Before(c.expires) {
		return identifier.ID{}, errcode.New(errcode.LoginCodeInvalid, "the login code expired: ask for a new link (dialogtrust revoke page)")
	}
	return c.admin, nil
}

// open starts a new session for admin and returns its cookie value: always a fresh
// one, never one the browser brought (session fixation).
func (l *Logins) open(admin identifier.ID) (string, *session) {
	id := random()
	now := l.now()
	s := &session{admin: admin, csrf: random(), expires: now.Add(l.ttl)}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, old := range l.sessions {
		if !now.Before(old.expires) {
			delete(l.sessions, k)
		}
	}
	for len(l.sessions) >= maxSessions { // the oldest to end first goes
		var oldest [32]byte
		var t time.Time
		for k, old := range l.sessions {
			if t.IsZero() || old.expires.Before(t) {
				oldest, t = k, old.expires
			}
		}
		delete(l.sessions, oldest)
	}
	l.sessions[sha256.Sum256([]byte(id))] = s
	return id, s
}

// lookup is the live session of a cookie value.
func (l *Logins) lookup(id string) (*session, bool) {
	if len(id) == 0 || len(id) > 128 {
		return nil, false
	}
	k := sha256.Sum256([]byte(id))
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sessions[k]
	if ok && !l.now().Before(s.expires) {
		delete(l.sessions, k)
		return nil, false
	}
	return s, ok
}

// end ends the session of a cookie value.
func (l *Logins) end(id string) {
	k := sha256.Sum256([]byte(id))
	l.mu.Lock()
	delete(l.sessions, k)
	l.mu.Unlock()
}

func (l *Logins) cookieName() string {
	if l.secure {
		return hostCookie
	}
	return plainCookie
}

func (l *Logins) cookiePath() string {
	if l.secure {
		return "/"
	}
	return "/admin/"
}

// random is 256 bits from crypto/rand, base64url.
func random() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
