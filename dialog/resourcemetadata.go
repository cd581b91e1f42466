package dialog

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dialogtrust/dialogtrust/errcode"
	"github.com/dialogtrust/dialogtrust/internal/loopback"
	"github.com/dialogtrust/dialogtrust/problem"
	"github.com/dialogtrust/dialogtrust/proof"
	"github.com/dialogtrust/dialogtrust/wpt"
)

// ResourceMetadataWellKnown is the well-known URI suffix of OAuth 2.0 Protected
// Resource Metadata (RFC 9728 section 3): the metadata of the resource
// https://h/p is at https://h/.well-known/oauth-protected-resource/p.
const ResourceMetadataWellKnown = "/.well-known/oauth-protected-resource"

// ProofsSupportedMember is this project's extension member of the metadata (RFC 9728
// section 2 lets a resource add members; a client ignores those it does not know): the
// WIMSE proofs of possession the receiver accepts, "httpsig"
// (draft-ietf-wimse-http-signature) and "wpt" (draft-ietf-wimse-wpt). Neither draft
// defines a metadata member, and draft-ietf-wimse-http-signature defines no
// WWW-Authenticate scheme, so this member is the only place a client learns that HTTP
// signatures are taken. The prefix keeps it apart from any registered name.
const ProofsSupportedMember = "dialogtrust_wimse_proofs_supported"

// MaxResourceMetadata bounds the encoded metadata document, in octets.
const MaxResourceMetadata = 16 << 10

// ResourceMetadata is the protected resource metadata (RFC 9728 section 2) a receiver
// publishes: what a client reads to learn which authorization servers' tokens this
// resource takes and how to prove itself. Only the members that apply to a WIMSE
// receiver are here. Array members without elements are omitted (section 3.2), but
// bearer_methods_supported, which is always [] (section 2: "no bearer methods are
// supported"): a WIMSE receiver takes no bearer token, its credentials are the WIT
// with an HTTP signature or a WPT, and a Txn-Token bound to that proof.
type ResourceMetadata struct {
	// Resource is the resource identifier (section 1.2): the URL clients use, https (or
	// http to a loopback host), without fragment or user information, whose path does
	// not end in "/" (but the root's). Required.
	Resource string `json:"resource"`
	// AuthorizationServers are the RFC 8414 issuer identifiers of the authorization
	// servers whose tokens this resource takes: the Transaction Token Service whose
	// Txn-Tokens it validates (which publishes its RFC 8414 metadata), and at a trust
	// boundary the authorization server of the access tokens.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// JWKSURI is the URL of the resource's own JWK Set (section 2), if it has one. A
	// receiver signs its responses with its WIT's key, carried in the WIT itself, so it
	// usually has none.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// ScopesSupported are the scope values a client asks for to reach this resource.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported is always the empty array (NewReceiver sets it).
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	// ResourceName is a human-readable name; ResourceDocumentation the URL of a page
	// for developers.
	ResourceName          string `json:"resource_name,omitempty"`
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
	// ProofsSupported is ProofsSupportedMember: NewReceiver sets it from the proofs the
	// receiver takes, so the document cannot claim another.
	ProofsSupported []string `json:"dialogtrust_wimse_proofs_supported,omitempty"`
}

// WithResourceMetadata makes the receiver publish md (RFC 9728) and name its URL on
// its 401 refusals: WWW-Authenticate carries the resource_metadata parameter (section
// 5.1) with the challenge of each scheme the receiver takes. That is "WPT" when it
// takes WPTs (draft-ietf-wimse-wpt section 2.1; the receiver sends that challenge on
// its 401s with or without this option). draft-ietf-wimse-http-signature defines no
// scheme (its failures are meant to be 400s), so a receiver of HTTP signatures alone
// sends no challenge and a client finds the metadata at its well-known URL
// (ResourceMetadataURL), as RFC 9728 section 3 says it may. No challenge is "Bearer":
// the receiver takes no bearer token, and so a client that reads resource_metadata
// from a Bearer challenge only (the TypeScript MCP SDK) finds the metadata by the
// well-known URL. NewReceiver checks md; mount the handler ResourceMetadataHandler
// gives at its path.
func WithResourceMetadata(md ResourceMetadata) ReceiverOption {
	return func(r *Receiver) { r.metadata = &md }
}

// ResourceMetadataURL derives the URL of the metadata of the resource identified by
// resource (RFC 9728 section 3.1): the well-known suffix goes between the host and
// the path and query, the slash after the host of a resource without a path dropped:
// https://resource.example.com gives
// https://resource.example.com/.well-known/oauth-protected-resource, and
// https://resource.example.com/resource1 gives
// https://resource.example.com/.well-known/oauth-protected-resource/resource1.
// A resource identifier that is not usable is invalid_request (checkResource).
func ResourceMetadataURL(resource string) (string, error) {
	u, err := checkResource("resource", resource)
	if err != nil {
		return "", err
	}
	return metadataURL(u), nil
}

// metadataURL is the metadata URL of a checked resource identifier.
func metadataURL(u *url.URL) string {
	s := u.Scheme + "://" + u.Host + metadataPath(u)
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	return s
}

// metadataPath is the path of the metadata of a checked resource identifier, escaped
// as in the identifier.
func metadataPath(u *url.URL) string {
	p := u.EscapedPath()
	if p == "/" {
		p = ""
	}
	return ResourceMetadataWellKnown + p
}

// checkResource checks a resource identifier (RFC 9728 section 1.2; RFC 8707 section
// 2): an absolute https URL (http only to a loopback host, for development), no
// fragment, no user information, a path in normal form that does not end in "/" (RFC
// 9728 keeps that slash in the metadata URL, and the TypeScript MCP SDK drops it, so
// the two would look in different places), and only characters that can stand in a
// quoted WWW-Authenticate parameter.
func checkResource(what, raw string) (*url.URL, error) {
	u, err := checkURL(what, raw)
	if err != nil {
		return nil, err
	}
	if u.RawQuery == "" && u.ForceQuery {
		return nil, errcode.New(errcode.InvalidRequest, "%s %q: an empty query is read two ways", what, errcode.Cut(raw))
	}
	if p := u.EscapedPath(); p != "" && p != "/" && (strings.HasSuffix(p, "/") || !normalPath(u.Path)) {
		return nil, errcode.New(errcode.InvalidRequest, "%s %q: the path must be in normal form without a final \"/\" (RFC 9728 keeps that slash in the metadata URL, MCP clients drop it)", what, errcode.Cut(raw))
	}
	return u, nil
}

// CheckResourceMetadataURL checks a URL a metadata document names (an authorization
// server's issuer identifier, jwks_uri, resource_documentation): as a resource
// identifier is checked, but its path may end in "/" and, for an issuer identifier
// (issuer true), it has no query (RFC 8414 section 2).
func CheckResourceMetadataURL(what, raw string, issuer bool) error {
	u, err := checkURL(what, raw)
	if err == nil && issuer && (u.RawQuery != "" || u.ForceQuery) {
		err = errcode.New(errcode.InvalidRequest, "%s %q: an issuer identifier has no query", what, errcode.Cut(raw))
	}
	return err
}

// checkURL: an absolute https URL, or http to a loopback host, without fragment or
// user information, of visible ASCII other than '"' and '\'.
func checkURL(what, raw string) (*url.URL, error) {
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return nil, errcode.New(errcode.InvalidRequest, "%s %q: only visible ASCII without '\"' and '\\' (percent-encode the rest)", what, errcode.Cut(raw))
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, errcode.New(errcode.InvalidRequest, "%s %q: an absolute URL is required", what, errcode.Cut(raw))
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback.IsHost(u.Hostname()):
	default:
		return nil, errcode.New(errcode.InvalidRequest, "%s %q: https is required (http only to a loopback host)", what, errcode.Cut(raw))
	}
	if u.Fragment != "" || strings.Contains(raw, "#") || u.User != nil {
		return nil, errcode.New(errcode.InvalidRequest, "%s %q: no fragment and no user information", what, errcode.Cut(raw))
	}
	return u, nil
}

// normalPath: absolute, without dot or empty segments.
func normalPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for _, s := range strings.Split(p[1:], "/") {
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	return true
}

// maxScope and maxResourceName bound what the operator writes into the document.
const (
	maxScope        = 256
	maxResourceName = 256
)

// publishedMetadata is a receiver's metadata checked and encoded once.
type publishedMetadata struct {
	// path and rawQuery are where the document is served (metadataPath).
	path, rawQuery string
	url            string
	body           []byte
}

// publish checks md, completes it with what the receiver takes, and encodes it.
func publish(md ResourceMetadata, proofs []string) (*publishedMetadata, error) {
	u, err := checkResource("resource metadata: resource", md.Resource)
	if err != nil {
		return nil, err
	}
	for _, as := range md.AuthorizationServers {
		if err := CheckResourceMetadataURL("resource metadata: authorization server", as, true); err != nil {
			return nil, err
		}
	}
	for what, link := range map[string]string{"jwks_uri": md.JWKSURI, "resource_documentation": md.ResourceDocumentation} {
		if link == "" {
			continue
		}
		if err := CheckResourceMetadataURL("resource metadata: "+what, link, false); err != nil {
			return nil, err
		}
	}
	for _, s := range md.ScopesSupported {
		if !scopeToken(s) {
			return nil, errcode.New(errcode.InvalidRequest, "resource metadata: scope %q is not an RFC 6749 scope-token", errcode.Cut(s))
		}
	}
	if len(md.ResourceName) > maxResourceName || !utf8.ValidString(md.ResourceName) {
		return nil, errcode.New(errcode.InvalidRequest, "resource metadata: resource_name is not UTF-8 of at most %d octets", maxResourceName)
	}
	md.BearerMethodsSupported = []string{}
	md.ProofsSupported = proofs
	body, err := json.Marshal(md)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "resource metadata")
	}
	if len(body) > MaxResourceMetadata {
		return nil, errcode.New(errcode.InvalidRequest, "resource metadata: the document has %d octets, over %d", len(body), MaxResourceMetadata)
	}
	return &publishedMetadata{path: metadataPath(u), rawQuery: u.RawQuery, url: metadataURL(u), body: append(body, '\n')}, nil
}

// scopeToken: RFC 6749 section 3.3, 1*( %x21 / %x23-5B / %x5D-7E ), bounded.
func scopeToken(s string) bool {
	if s == "" || len(s) > maxScope {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// ResourceMetadataHandler returns the path the receiver's metadata is published at
// (the path of ResourceMetadataURL's result) and the handler that serves it, to mount
// there beside the Middleware, outside it: the metadata is public (RFC 9728 section
// 3.1), asked for before a client holds any credential. Without WithResourceMetadata
// it returns "" and nil.
//
// The handler answers GET and HEAD with the document (application/json, cacheable for
// ResourceMetadataMaxAge, readable from any web origin: it holds nothing secret), and
// any other method with 405 and Allow (invalid_request). It reads no body. A request
// whose query is not the resource identifier's is the metadata URL of another resource
// and gets 404 (no_route).
func (rc *Receiver) ResourceMetadataHandler() (string, http.Handler) {
	if rc.published == nil {
		return "", nil
	}
	return rc.published.path, rc.published
}

// ResourceMetadataMaxAge is how long, in seconds, a client may keep the metadata
// (RFC 9728 section 7.10).
const ResourceMetadataMaxAge = 300

func (p *publishedMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		d := problem.From(errcode.New(errcode.InvalidRequest, "the resource metadata is read with GET"))
		d.Status, d.Title = http.StatusMethodNotAllowed, http.StatusText(http.StatusMethodNotAllowed)
		problem.WriteDetails(w, d)
		return
	}
	if r.URL.RawQuery != p.rawQuery {
		problem.Write(w, errcode.New(errcode.NoRoute, "this is the metadata of a resource with another query"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(ResourceMetadataMaxAge))
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(p.body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(p.body)
	}
}

// Challenge is the WWW-Authenticate value of the receiver's 401 refusals: a challenge
// for each scheme the receiver takes, with the resource_metadata parameter when it
// publishes metadata (WithResourceMetadata); "" when it has none (a receiver of HTTP
// signatures alone).
func (rc *Receiver) Challenge() string { return rc.challenge }

// challengeOf builds Challenge's value.
func challengeOf(takesWPT bool, md *publishedMetadata) string {
	if !takesWPT {
		return ""
	}
	if md == nil {
		return wpt.AuthScheme
	}
	// checkURL keeps '"' and '\' out of the URL: it stands quoted as it is.
	return wpt.AuthScheme + ` resource_metadata="` + md.url + `"`
}

// WriteRefusal answers a refused request with err's problem document, as
// problem.Write does, and, when its status is 401, the receiver's challenge
// (Challenge). A server in front of the receiver (the dialogtrust proxy's ingress)
// answers its own refusals with it, so that every 401 of the resource says the same.
func (rc *Receiver) WriteRefusal(w http.ResponseWriter, err error) {
	problem.Write(rc.challenged(w), err)
}

// challenged wraps w so that a 401 written through it carries the challenge: the
// refusal writers (problem documents, and JSON-RPC errors on 200, which carry none)
// then need not know of it.
func (rc *Receiver) challenged(w http.ResponseWriter) http.ResponseWriter {
	if rc.challenge == "" {
		return w
	}
	return challengeWriter{ResponseWriter: w, value: rc.challenge}
}

type challengeWriter struct {
	http.ResponseWriter
	value string
}

func (c challengeWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		c.Header().Set("WWW-Authenticate", c.value)
	}
	c.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the underlying writer.
func (c challengeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// publishMetadata checks and encodes WithResourceMetadata's document with the proofs
// the receiver takes, and sets the challenge of its 401s.
func (rc *Receiver) publishMetadata() error {
	var proofs []string
	if rc.sig != nil {
		proofs = append(proofs, proof.HTTPSig.String())
	}
	if rc.wpt != nil {
		proofs = append(proofs, proof.WPT.String())
	}
	if rc.metadata != nil {
		p, err := publish(*rc.metadata, proofs)
		if err != nil {
			return err
		}
		rc.published = p
	}
	rc.challenge = challengeOf(rc.wpt != nil, rc.published)
	return nil
}

// Check reports whether md can be published as WithResourceMetadata would (NewReceiver
// refuses what it refuses): a configuration check runs it before anything starts.
func (md ResourceMetadata) Check() error {
	_, err := publish(md, nil)
	return err
}
