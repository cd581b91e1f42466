package revokeapi

import (
	"crypto/x509"
	"encoding/json"
	"io"
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
	"github.com/dialogtrust/dialogtrust/internal/netjson"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/revoke"
	"github.com/dialogtrust/dialogtrust/wic"
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
	// (mutual TLS). Empty: not accepted.
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
}

// Handler serves the API.
type Handler struct{ cfg Config }

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
	return &Handler{cfg: cfg}, nil
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
// fields); that the caller is an administrator; only then the body (the signature's
// Content-Digest and nonce, within MaxBody), the revocation, and its trust domain.
// The change is made last.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	// The answers hold operator-chosen strings (ids, reasons): never sniffed as HTML.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Path != Path {
		h.refuse(w, r, "", errcode.New(errcode.NoRoute, "no such admin path"))
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
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
	if !slices.ContainsFunc(h.cfg.Admins, admin.Equal) {
		h.refuse(w, r, admin.String(), errcode.New(errcode.NotAuthorized, "%s is not an administrator of revocations", admin))
		return
	}
	body, err := finish()
	if err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	switch r.Method {
	case http.MethodGet:
		h.list(w, r, admin)
	case http.MethodPost:
		h.post(w, r, admin, body)
	case http.MethodDelete:
		h.delete(w, r, admin)
	}
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
		id, err := wic.Verify(r.TLS.PeerCertificates[0].Raw, inter, h.cfg.CertRoots, h.cfg.Now(),
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
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, errcode.New(errcode.InvalidRequest, "the body could not be read")
	}
	if len(b) > MaxBody {
		return nil, errcode.New(errcode.BodyTooLarge, "the body is over %d octets", MaxBody)
	}
	return b, nil
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
	if err := h.checkDomain(req.Kind, req.ID); err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	ttl := h.cfg.DefaultTTL
	if req.TTLSeconds != 0 {
		if req.TTLSeconds < 0 || req.TTLSeconds > int64(revoke.MaxLifetime/time.Second) {
			h.refuse(w, r, admin.String(), errcode.New(errcode.InvalidRequest, "ttl_seconds must be positive and at most %d", int64(revoke.MaxLifetime/time.Second)))
			return
		}
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	now := h.cfg.Now()
	rev := revoke.Revocation{Kind: req.Kind, ID: req.ID, Linked: req.Linked, Reason: req.Reason, By: admin.String(), Created: now, Expires: now.Add(ttl)}
	if err := rev.Validate(); err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	change := h.change(r, audit.Revoked, admin, rev.Kind, rev.ID)
	change.Reason, change.Linked, change.Status = rev.Reason, rev.Linked, http.StatusCreated
	if err := h.audit(r, change); err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	if err := h.cfg.Store.Put(r.Context(), rev); err != nil {
		h.auditFailed(r, change, err)
		h.refuse(w, r, admin.String(), err)
		return
	}
	h.cfg.Logger.InfoContext(r.Context(), "revoked", "kind", string(rev.Kind), "id", rev.ID, "linked", rev.Linked,
		"reason", rev.Reason, "by", rev.By, "expires", rev.Expires)
	writeJSON(w, http.StatusCreated, rev)
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, admin identifier.ID) {
	q := r.URL.Query()
	kinds, ids := q["kind"], q["id"]
	if len(kinds) != 1 || len(ids) != 1 || len(q) != 2 || !revoke.ValidKind(revoke.Kind(kinds[0])) || ids[0] == "" || len(ids[0]) > revoke.MaxIDLen {
		h.refuse(w, r, admin.String(), errcode.New(errcode.InvalidRequest, "DELETE takes one kind and one id"))
		return
	}
	kind := revoke.Kind(kinds[0])
	if err := h.checkDomain(kind, ids[0]); err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	change := h.change(r, audit.Lifted, admin, kind, ids[0])
	change.Status = http.StatusOK
	if err := h.audit(r, change); err != nil {
		h.refuse(w, r, admin.String(), err)
		return
	}
	ok, err := h.cfg.Store.Delete(r.Context(), kind, ids[0])
	if err != nil {
		h.auditFailed(r, change, err)
		h.refuse(w, r, admin.String(), err)
		return
	}
	h.cfg.Logger.InfoContext(r.Context(), "revocation lifted", "kind", kinds[0], "id", ids[0], "by", admin.String(), "was_live", ok)
	writeJSON(w, http.StatusOK, Deleted{Deleted: ok})
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

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
