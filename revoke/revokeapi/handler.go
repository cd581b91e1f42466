package revokeapi

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dialogtrust/dialogtrust/audit"
	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/httpsig"
	"github.com/dialogtrust/dialogtrust/identifier"
	"github.com/dialogtrust/dialogtrust/internal/httpbody"
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/internal/reqid"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/wic"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
)

// Path is where the API is served.
const Path = "/admin/revocations"

// MaxBody bounds a request body: a revocation is a few hundred octets.
const MaxBody = 8 << 10

// Config configures a Handler.
type Config struct {
	// Store keeps the revocations (the one the TTS's and receivers' checkers read).
	Store revoke.Store
	// Signatures verifies WIT + HTTP signature callers; its audience must be the API's
	// URL and it must claim nonces (httpsig.WithReplay). Nil: not accepted.
	Signatures *httpsig.Verifier
	// CertRoots are the anchors of administrators' workload identity certificates
	// (mutual TLS), each naming its trust domain in its one URI SAN (spiffe://td), each
	// of one of TrustDomains (CertBundles). Empty: not accepted.
	CertRoots []*x509.Certificate
	// Admins are the workloads allowed to use the API.
	Admins []identifier.ID
	// TrustDomains are the trust domains this TTS serves: administrators and revoked
	// workloads must be of one of them.
	TrustDomains []string
	// AllowedOrigins are the origins (scheme://host[:port]) a browser may call from
	// (the operator's page); none by default.
	AllowedOrigins []string
	// DefaultTTL is how long a revocation lasts when the request says nothing: the
	// longest lifetime of a token that could be used in what it revokes.
	DefaultTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives each change and each refusal (default: discard).
	Logger *slog.Logger
	// Auditor, when set, writes every change (a revocation, a lift) to the audit trail
	// before the store makes it (audit.go): a change whose record cannot be written is
	// refused (audit_unavailable, 503) and not made. The TTS gives it its own trail.
	Auditor audit.Appender
	// Checker is the TTS's revocation checker over Store (the one its token endpoint
	// consults): an administrator whose workload it finds revoked is refused (Admit).
	// Nil: a checker of Store made by New.
	Checker *revoke.Checker
	// Sessions, when set, serves POST SessionsPath: an administrator, authenticated as
	// for the rest of the API, asks for a one-time login link to the operator's page
	// (package console).
	Sessions Sessions
}

// SessionsPath is where an administrator asks for a login link to the operator's page.
const SessionsPath = "/admin/sessions"

// Sessions mints one-time login links to the operator's page for an administrator.
type Sessions interface {
	NewLogin(admin identifier.ID) (Session, error)
}

// Session is the answer to a POST on SessionsPath.
type Session struct {
	// LoginURL is the page's one-time login link: it works once, for a short time.
	LoginURL  string    `json:"login_url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Handler serves the API.
type Handler struct {
	cfg     Config
	checker *revoke.Checker
	// bundles are CertRoots by trust domain (nil: no client certificates).
	bundles *x509bundle.Set
}

// New checks cfg and returns its Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errcode.New(errcode.InvalidRequest, "revokeapi: no store")
	}
	if cfg.Signatures == nil && len(cfg.CertRoots) == 0 {
		return nil, errcode.New(errcode.InvalidRequest, "revokeapi: neither HTTP signatures nor client certificates are accepted")
	}
	if len(cfg.Admins) == 0 {
		return nil, errcode.New(errcode.InvalidRequest, "revokeapi: no administrators")
	}
	for _, a := range cfg.Admins {
		if !slices.Contains(cfg.TrustDomains, a.TrustDomain()) {
			return nil, errcode.New(errcode.InvalidRequest, "revokeapi: administrator %s is not of a trust domain this TTS serves", a)
		}
	}
	if cfg.DefaultTTL <= 0 || cfg.DefaultTTL > revoke.MaxLifetime {
		return nil, errcode.New(errcode.InvalidRequest, "revokeapi: default ttl must be positive and at most %v", revoke.MaxLifetime)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	var bundles *x509bundle.Set
	if len(cfg.CertRoots) > 0 {
		var err error
		if bundles, err = CertBundles(cfg.CertRoots, cfg.TrustDomains); err != nil {
			return nil, err
		}
	}
	checker := cfg.Checker
	if checker == nil {
		checker = revoke.NewChecker(cfg.Store, revoke.WithClock(cfg.Now))
	}
	return &Handler{cfg: cfg, checker: checker, bundles: bundles}, nil
}

// Request is the body of a POST.
type Request struct {
	Kind   revoke.Kind `json:"kind"`
	ID     string      `json:"id"`
	Linked bool        `json:"linked,omitempty"`
	Reason string      `json:"reason"`
	// TTLSeconds is the revocation's lifetime (default Config.DefaultTTL).
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// List is the body of a GET's answer.
type List struct {
	Revocations []revoke.Revocation `json:"revocations"`
}

// Deleted is the body of a DELETE's answer.
type Deleted struct {
	Deleted bool `json:"deleted"`
}

// ServeHTTP checks, in order: the path and method; the origin (CSRF); a POST's media
// type and declared length; the caller's credential (mutual TLS, else the signature's
// fields); that the caller is an administrator whose workload is not revoked (Admit);
// only then the body (the signature's Content-Digest and nonce, within MaxBody), the
// revocation, and its trust domain.
// The change is made last.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	// The answers hold operator-chosen strings (ids, reasons): never sniffed as HTML.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	sessions := r.URL.Path == SessionsPath && h.cfg.Sessions != nil
	if r.URL.Path != Path && !sessions {
		h.refuse(w, r, "", errcode.New(errcode.NoRoute, "no such admin path"))
		return
	}
	switch {
	case sessions && r.Method == http.MethodPost:
	case sessions:
		h.refuseMethod(w, r, "POST")
		return
	case r.Method == http.MethodGet, r.Method == http.MethodPost, r.Method == http.MethodDelete:
	default:
		h.refuseMethod(w, r, "GET, POST, DELETE")
		return
	}
	if err := h.checkOrigin(r); err != nil {
		h.refuse(w, r, "", err)
		return
	}
	if r.Method == http.MethodPost {
		if err := checkJSON(r); err != nil {
			h.refuse(w, r, "", err)
			return
		}
	}
	if r.ContentLength > MaxBody {
		h.refuse(w, r, "", errcode.New(errcode.BodyTooLarge, "the body is over %d octets", MaxBody))
		return
	}
	admin, finish, err := h.authenticate(r)
	if err != nil {
		h.refuse(w, r, "", err)
		return
	}
	if err := h.Admit(r.Context(), admin); err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	body, err := finish()
	if err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	switch {
	case sessions:
		h.newSession(w, r, admin, body)
	case r.Method == http.MethodGet:
		h.list(w, r, admin)
	case r.Method == http.MethodPost:
		h.post(w, r, admin, body)
	case r.Method == http.MethodDelete:
		h.delete(w, r, admin)
	}
}

// IsAdmin reports whether id is one of the configured administrators.
func (h *Handler) IsAdmin(id identifier.ID) bool { return slices.ContainsFunc(h.cfg.Admins, id.Equal) }

// CertAdmin is the administrator a request's client certificate (mutual TLS) proves,
// for the operator's page: ok is false when the request has no certificate or client
// certificates are not accepted; err when the certificate does not verify or does not
// name an administrator.
func (h *Handler) CertAdmin(r *http.Request) (admin identifier.ID, ok bool, err error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || len(h.cfg.CertRoots) == 0 {
		return identifier.ID{}, false, nil
	}
	id, _, err := h.authenticate(r)
	if err != nil {
		return identifier.ID{}, true, err
	}
	if err := h.Admit(r.Context(), id); err != nil {
		return identifier.ID{}, true, err
	}
	return id, true, nil
}

// checkOrigin refuses what a browser sends on another site's behalf.
func (h *Handler) checkOrigin(r *http.Request) error {
	origins := r.Header.Values("Origin")
	if len(origins) > 1 || len(origins) == 1 && !slices.Contains(h.cfg.AllowedOrigins, origins[0]) {
		return errcode.New(errcode.OriginNotAllowed, "requests from this origin are not accepted")
	}
	for _, s := range r.Header.Values("Sec-Fetch-Site") {
		if s != "same-origin" && s != "none" {
			return errcode.New(errcode.OriginNotAllowed, "a cross-site request is not accepted")
		}
	}
	return nil
}

// checkJSON refuses a POST that is not application/json: every HTML form's encoding.
func checkJSON(r *http.Request) error {
	cts := r.Header.Values("Content-Type")
	if len(cts) != 1 {
		return errcode.New(errcode.InvalidRequest, "a POST must have one Content-Type, application/json")
	}
	mt, params, err := mime.ParseMediaType(cts[0])
	if err != nil || mt != "application/json" {
		return errcode.New(errcode.InvalidRequest, "a POST must be application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return errcode.New(errcode.InvalidRequest, "a POST must be UTF-8")
	}
	return nil
}

// authenticate returns the caller and the function that reads the body once the
// caller is known to be an administrator.
func (h *Handler) authenticate(r *http.Request) (identifier.ID, func() ([]byte, error), error) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && len(h.cfg.CertRoots) > 0 {
		var inter [][]byte
		for _, c := range r.TLS.PeerCertificates[1:] {
			inter = append(inter, c.Raw)
		}
		// The anchors of the identifier's own trust domain only (CertBundles).
		id, err := wic.VerifyWithBundles(r.TLS.PeerCertificates[0].Raw, inter, h.bundles, h.cfg.Now(),
			wic.WithKeyUsages(x509.ExtKeyUsageClientAuth))
		if err != nil {
			return identifier.ID{}, nil, err
		}
		return id, func() ([]byte, error) { return readBody(r) }, nil
	}
	if h.cfg.Signatures == nil || len(r.Header.Values("Signature")) == 0 && len(r.Header.Values("Signature-Input")) == 0 {
		return identifier.ID{}, nil, errcode.New(errcode.MissingCredential, "an administrator's client certificate or WIT with an HTTP signature is required")
	}
	pr, err := h.cfg.Signatures.VerifyRequestFields(r.Context(), r)
	if err != nil {
		return identifier.ID{}, nil, err
	}
	return pr.WIT().Subject, func() ([]byte, error) {
		if _, err := pr.Finish(r.Context()); err != nil {
			return nil, err
		}
		return readBody(r)
	}, nil
}

func readBody(r *http.Request) ([]byte, error) {
	return httpbody.Read(r.Body, MaxBody, "body")
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, admin identifier.ID) {
	l, err := h.cfg.Store.List(r.Context())
	if err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	writeJSON(w, http.StatusOK, List{Revocations: l})
}

func (h *Handler) post(w http.ResponseWriter, r *http.Request, admin identifier.ID, body []byte) {
	req, err := ParseRequest(body)
	if err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	rev, err := h.Revoke(WithRequestID(r.Context(), reqid.From(r)), admin, req)
	if err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	writeJSON(w, http.StatusCreated, rev)
}

// Revoke makes the revocation req for the authenticated administrator admin: the
// one path of every revocation (the API's POST and the operator's page), checked
// (trust domain, lifetime, Validate) before the store is written, and logged with
// the administrator's identity.
func (h *Handler) Revoke(ctx context.Context, admin identifier.ID, req Request) (revoke.Revocation, error) {
	if err := h.Admit(ctx, admin); err != nil {
		return revoke.Revocation{}, err
	}
	if err := h.checkDomain(req.Kind, req.ID); err != nil {
		return revoke.Revocation{}, err
	}
	ttl := h.cfg.DefaultTTL
	if req.TTLSeconds != 0 {
		if req.TTLSeconds < 0 || req.TTLSeconds > int64(revoke.MaxLifetime/time.Second) {
			return revoke.Revocation{}, errcode.New(errcode.InvalidRequest, "ttl_seconds must be positive and at most %d", int64(revoke.MaxLifetime/time.Second))
		}
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	now := h.cfg.Now()
	rev := revoke.Revocation{Kind: req.Kind, ID: req.ID, Linked: req.Linked, Reason: req.Reason, By: admin.String(), Created: now, Expires: now.Add(ttl)}
	if err := rev.Validate(); err != nil {
		return revoke.Revocation{}, err
	}
	change := h.change(ctx, audit.Revoked, admin, rev.Kind, rev.ID)
	change.Reason, change.Linked, change.Status = rev.Reason, rev.Linked, http.StatusCreated
	if err := h.audit(ctx, change); err != nil {
		return revoke.Revocation{}, err
	}
	if err := h.cfg.Store.Put(ctx, rev); err != nil {
		h.auditFailed(ctx, change, err)
		return revoke.Revocation{}, err
	}
	h.checker.Notify() // in force for the next request here, whatever the bound
	h.cfg.Logger.InfoContext(ctx, "revoked", "kind", string(rev.Kind), "id", rev.ID, "linked", rev.Linked,
		"reason", rev.Reason, "by", rev.By, "expires", rev.Expires)
	return rev, nil
}

// List lists the live revocations.
func (h *Handler) List(ctx context.Context) ([]revoke.Revocation, error) {
	return h.cfg.Store.List(ctx)
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, admin identifier.ID) {
	q := r.URL.Query()
	kinds, ids := q["kind"], q["id"]
	if len(kinds) != 1 || len(ids) != 1 || len(q) != 2 {
		h.refuse(w, r, admin.String(), errcode.New(errcode.InvalidRequest, "DELETE takes one kind and one id"))
		return
	}
	ok, err := h.Lift(WithRequestID(r.Context(), reqid.From(r)), admin, revoke.Kind(kinds[0]), ids[0])
	if err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	writeJSON(w, http.StatusOK, Deleted{Deleted: ok})
}

// Lift lifts the revocation of kind and id for the authenticated administrator
// admin (the API's DELETE and the operator's page); it reports whether one was live.
func (h *Handler) Lift(ctx context.Context, admin identifier.ID, kind revoke.Kind, id string) (bool, error) {
	if err := h.Admit(ctx, admin); err != nil {
		return false, err
	}
	if !revoke.ValidKind(kind) || id == "" || len(id) > revoke.MaxIDLen {
		return false, errcode.New(errcode.InvalidRequest, "DELETE takes one kind and one id")
	}
	if err := h.checkDomain(kind, id); err != nil {
		return false, err
	}
	change := h.change(ctx, audit.Lifted, admin, kind, id)
	change.Status = http.StatusOK
	if err := h.audit(ctx, change); err != nil {
		return false, err
	}
	ok, err := h.cfg.Store.Delete(ctx, kind, id)
	if err != nil {
		h.auditFailed(ctx, change, err)
		return false, err
	}
	h.checker.Notify()
	h.cfg.Logger.InfoContext(ctx, "revocation lifted", "kind", string(kind), "id", id, "by", admin.String(), "was_live", ok)
	return ok, nil
}

// newSession answers POST SessionsPath: a body of exactly {} (signed, so bound to
// this request), and a one-time login link for admin.
func (h *Handler) newSession(w http.ResponseWriter, r *http.Request, admin identifier.ID, body []byte) {
	var empty struct{}
	if n, err := netjson.DecodeOnlyKnown(body, &empty); err != nil || strings.TrimSpace(string(body[n:])) != "" {
		h.refuse(w, r, admin.String(), errcode.New(errcode.InvalidRequest, "the body of a session request is {}"))
		return
	}
	s, err := h.cfg.Sessions.NewLogin(admin)
	if err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	h.cfg.Logger.InfoContext(r.Context(), "page login link issued", "by", admin.String(), "expires", s.ExpiresAt)
	writeJSON(w, http.StatusCreated, s)
}

// ParseRequest reads a POST body: one JSON object of Request's members, each at most
// once, nothing after it, at most MaxBody octets.
func ParseRequest(body []byte) (Request, error) {
	var req Request
	if len(body) > MaxBody {
		return Request{}, errcode.New(errcode.BodyTooLarge, "the body is over %d octets", MaxBody)
	}
	n, err := netjson.DecodeOnlyKnown(body, &req)
	if err != nil || strings.TrimSpace(string(body[n:])) != "" {
		return Request{}, errcode.New(errcode.InvalidRequest, "the body is not one revocation request")
	}
	return req, nil
}

// checkDomain refuses a workload of a trust domain this TTS does not serve.
func (h *Handler) checkDomain(kind revoke.Kind, id string) error {
	if kind != revoke.Workload {
		return nil
	}
	wl, err := identifier.Parse(id)
	if err != nil {
		return errcode.New(errcode.InvalidRequest, "the workload is not a workload identifier")
	}
	if !slices.Contains(h.cfg.TrustDomains, wl.TrustDomain()) {
		return errcode.New(errcode.NotAuthorized, "workloads of trust domain %s are not this domain's to revoke", errcode.Cut(wl.TrustDomain()))
	}
	return nil
}

func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, caller string, err error) {
	h.cfg.Logger.Log(r.Context(), errcode.LogLevel(err), "admin request refused", "code", string(errcode.CodeOf(err)),
		"kind", errcode.KindOf(err).String(), "method", r.Method, "caller", caller, "remote", r.RemoteAddr)
	problem.Write(w, err)
}

// refuseMethod answers a method the path does not serve: 405 with Allow, as a problem
// document with its code (invalid_request), like every other refusal.
func (h *Handler) refuseMethod(w http.ResponseWriter, r *http.Request, allow string) {
	err := errcode.New(errcode.InvalidRequest, "this path takes %s", allow)
	h.cfg.Logger.Log(r.Context(), errcode.LogLevel(err), "admin request refused", "code", string(errcode.CodeOf(err)),
		"kind", errcode.KindOf(err).String(), "method", r.Method, "caller", "", "remote", r.RemoteAddr)
	w.Header().Set("Allow", allow)
	d := problem.From(err)
	d.Status, d.Title = http.StatusMethodNotAllowed, http.StatusText(http.StatusMethodNotAllowed)
	problem.WriteDetails(w, d)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
